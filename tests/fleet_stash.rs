//! The stash outlives the executor and the edge that wrote it: with
//! `--etcd`, executors keep stashes in a real etcd (Debian's `etcd-server`).
//! Real processes on loopback: a control plane (`quiver dev`), executors and
//! two edges. A value written through one edge is read through the other
//! after the executor that wrote it was killed (`kill -9`), on an executor
//! started afterwards (its memory holds nothing of it); while etcd is down
//! stash operations fail with a clear error and other scripts keep running.
//! A tenant's stash quota holds across the fleet: what one executor wrote
//! counts against writes on another.

use crate::support;

use std::time::Duration;

use serde_json::json;
use support::{
    EdgeProcess, QuiverDev, call, connect, ctl,
    etcd::{Etcd, executor, ok_nodes},
    text,
};

/// Runs `code` with the tenant's stash named `shared` through `edge`.
async fn execute(edge: &EdgeProcess, code: &str) -> (bool, String) {
    execute_in(edge, code, "shared").await
}

/// Runs `code` with the tenant's stash named `stash_id` through `edge`.
async fn execute_in(edge: &EdgeProcess, code: &str, stash_id: &str) -> (bool, String) {
    let client = connect(&edge.url("code")).await;
    let result = call(
        &client,
        "execute",
        json!({ "code": code, "stash_id": stash_id }),
    )
    .await;
    (result.is_error != Some(true), text(&result))
}

async fn execute_ok(edge: &EdgeProcess, code: &str) -> String {
    let (ok, text) = execute(edge, code).await;
    assert!(ok, "{code}: {text}");
    text
}

#[tokio::test(flavor = "multi_thread")]
async fn the_stash_outlives_the_executor_and_the_edge_that_wrote_it() {
    let Some(binary) = Etcd::binary() else { return };
    let data = tempfile::tempdir().unwrap();
    let cp = data.path().join("cp");
    let mut etcd = Etcd::start(&binary, &data.path().join("etcd")).await;
    let dev = QuiverDev::start(&["--data", cp.to_str().unwrap()]);
    let mut exec_a = executor(&dev, &cp, &etcd, "exec-a");
    let etcd_flag = ["--etcd", &etcd.endpoint()];
    let mut edge_1 = EdgeProcess::start_with(&dev.control_plane, &etcd_flag);
    let edge_2 = EdgeProcess::start_with(&dev.control_plane, &etcd_flag);
    for edge in [&edge_1, &edge_2] {
        edge.until("exec-a takes work", |e| ok_nodes(e) == ["exec-a"])
            .await;
    }

    eprintln!("--- write through edge 1; exec-a is the only executor, so it wrote");
    let written = execute_ok(
        &edge_1,
        "await stash.set('plan', {step: 3, items: ['a', 'b']}); \
         await stash.set('brief', 'gone soon', 1); \
         return (await stash.keys()).join(',');",
    )
    .await;
    assert!(written.contains("brief,plan"), "{written}");
    let stored = etcd.keys("/quiver/stash/").await;
    assert_eq!(stored.len(), 2, "each key is one etcd entry: {stored:?}");
    assert!(
        stored
            .iter()
            .all(|k| k.ends_with("/plan") || k.ends_with("/brief")),
        "{stored:?}"
    );

    eprintln!("--- kill -9 exec-a and edge 1; exec-b starts with nothing in memory");
    exec_a.kill();
    edge_1.kill();
    let mut exec_b = executor(&dev, &cp, &etcd, "exec-b");
    edge_2
        .until("only exec-b takes work", |e| ok_nodes(e) == ["exec-b"])
        .await;
    let read = execute_ok(
        &edge_2,
        "const plan = await stash.get('plan'); \
         await stash.set('plan', {...plan, step: plan.step + 1}); \
         return `step ${plan.step} of ${plan.items.join('+')}`;",
    )
    .await;
    assert!(read.contains("step 3 of a+b"), "{read}");

    eprintln!("--- an entry's TTL is its etcd lease: it leaves etcd too");
    let mut left = Vec::new();
    for _ in 0..100 {
        left = etcd.keys("/quiver/stash/").await;
        if left.len() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        left.len() == 1 && left[0].ends_with("/plan"),
        "the one-second entry expired: {left:?}"
    );

    eprintln!("--- exec-b's write is in etcd: exec-c reads it after exec-b dies");
    let mut exec_c = executor(&dev, &cp, &etcd, "exec-c");
    exec_b.kill();
    edge_2
        .until("only exec-c takes work", |e| ok_nodes(e) == ["exec-c"])
        .await;
    let step = execute_ok(&edge_2, "return (await stash.get('plan')).step;").await;
    assert!(step.contains('4'), "{step}");
    let gone = execute_ok(&edge_2, "return String(await stash.get('brief'));").await;
    assert!(gone.contains("null"), "{gone}");

    eprintln!("--- etcd down: stash operations say so; other scripts run");
    etcd.kill();
    let (ok, refused) = execute(&edge_2, "return await stash.get('plan');").await;
    assert!(!ok, "{refused}");
    assert!(refused.contains("stash is unavailable"), "{refused}");
    assert!(execute_ok(&edge_2, "return 6 * 7;").await.contains("42"));

    eprintln!("--- etcd back: the stash is there again, nothing lost");
    etcd.restart().await;
    let mut back = String::new();
    for _ in 0..100 {
        let (ok, text) = execute(&edge_2, "return (await stash.get('plan')).step;").await;
        if ok {
            back = text;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(back.contains('4'), "the stash after etcd returned: {back}");
    exec_c.kill();
}

/// Stores `count` values of 16,004 bytes each (key and serialised value)
/// under `prefix0..`; answers how many went in, and the first refusal.
fn fill(prefix: &str, count: usize) -> String {
    format!(
        "let stored = 0;
         for (let i = 0; i < {count}; i++) {{
           try {{ await stash.set('{prefix}' + i, 'x'.repeat(16000)); stored++; }}
           catch (e) {{ return `stored ${{stored}}: ${{e.message}}`; }}
         }}
         return `stored ${{stored}}`;"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tenants_stash_quota_holds_across_executors() {
    let Some(binary) = Etcd::binary() else { return };
    let data = tempfile::tempdir().unwrap();
    let cp = data.path().join("cp");
    let etcd = Etcd::start(&binary, &data.path().join("etcd")).await;
    let dev = QuiverDev::start(&["--data", cp.to_str().unwrap()]);
    // The edge authenticates nobody: its callers are the built-in tenant,
    // given a quota of 64 KiB here.
    let (ok, _, err) = ctl(
        &dev.control_plane,
        &["tenant", "create", "default", "--stash-bytes", "64KiB"],
    );
    assert!(ok, "{err}");
    let mut exec_a = executor(&dev, &cp, &etcd, "exec-a");
    let edge = EdgeProcess::start_with(&dev.control_plane, &["--etcd", &etcd.endpoint()]);
    edge.until("exec-a takes work", |e| ok_nodes(e) == ["exec-a"])
        .await;

    eprintln!("--- exec-a stores four values: 64,016 of the 65,536 bytes");
    let (_, first) = execute_in(&edge, &fill("a", 4), "first").await;
    assert!(first.contains("stored 4"), "{first}");

    eprintln!("--- on exec-b, which holds nothing itself, a fifth is refused");
    let _exec_b = executor(&dev, &cp, &etcd, "exec-b");
    exec_a.kill();
    edge.until("only exec-b takes work", |e| ok_nodes(e) == ["exec-b"])
        .await;
    let (_, refused) = execute_in(&edge, &fill("b", 1), "second").await;
    assert!(refused.contains("stored 0"), "{refused}");
    assert!(
        refused
            .contains("tenant `default` may keep 65536 bytes of stashed values across the fleet"),
        "{refused}"
    );

    eprintln!("--- a deleted value makes room again, whichever executor deletes it");
    let (ok, deleted) = execute_in(&edge, "return await stash.delete('a0');", "first").await;
    assert!(ok && deleted.contains("true"), "{deleted}");
    let (_, stored) = execute_in(&edge, &fill("b", 1), "second").await;
    assert!(stored.contains("stored 1"), "{stored}");
}
