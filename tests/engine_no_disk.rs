//! The JavaScript engine never writes a script to disk and never loads bytecode
//! from a place anyone else can write. The QuickJS backend under deno_core
//! keeps an on-disk bytecode cache unless told otherwise; a worker started with
//! an empty environment would put it in `/tmp/v8x/quickjs-bytecode`, world
//! readable, and load unverified bytecode back from there.
//!
//! - A script carrying a unique marker runs through `quiver dev`; afterwards
//!   the marker is in no file under the temporary directory, the cache
//!   locations or the data directory.
//! - Garbage and forged bytecode planted under the exact file names the engine
//!   would use (learnt by a probe child that runs deno_core with the cache on
//!   in a scratch directory) are never opened (inotify watches every planted
//!   directory) and change nothing: the script returns its own answer, not the
//!   forged one.

use crate::support;

use std::{
    collections::BTreeMap,
    os::fd::AsFd,
    path::{Path, PathBuf},
    process::Command,
    time::{SystemTime, UNIX_EPOCH},
};

use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
use serde_json::json;
use support::{QuiverDev, call, connect, text};

/// The names the engine gives the code it compiles (see `engine::script_runtime`).
const BOOTSTRAP_NAME: &str = "quiver:bootstrap";
const SCRIPT_NAME: &str = "quiver:script";
const BOOTSTRAP: &str = concat!(
    include_str!("../executor/src/engine/bootstrap/api.js"),
    include_str!("../executor/src/engine/bootstrap/hardening.js"),
    include_str!("../executor/src/engine/bootstrap/tools.js"),
);

/// The probe child: set when this test binary is re-run to learn cache keys.
const PROBE_DIR_ENV: &str = "QUIVER_TEST_BYTECODE_PROBE_DIR";
/// The probe's report line on stdout.
const PROBE_REPORT: &str = "bytecode-probe-report:";

fn unique_marker() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("zz-marker-{}-{nanos}", std::process::id())
}

/// How the engine wraps a user script before compiling it.
fn wrapped(code: &str) -> String {
    format!("(async () => {{\"use strict\";{code}\n}})()")
}

/// Held by a test that walks or watches the shared temporary directory, so
/// one test's reads never show up in the other's watch (test runners may run
/// them in parallel processes).
struct TestLock(#[allow(dead_code)] nix::fcntl::Flock<std::fs::File>);

impl TestLock {
    fn take() -> TestLock {
        let path = std::env::temp_dir().join("quiver-engine-no-disk-tests.lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .expect("open the test lock file");
        TestLock(
            nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
                .map_err(|(_, e)| e)
                .expect("lock the test lock file"),
        )
    }
}

/// Every regular file below `dir` (not following links), up to a size.
fn files_below(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            files_below(&entry.path(), out);
        } else if kind.is_file() {
            out.push(entry.path());
        }
    }
}

/// Files below `dirs` written since `since` that contain `needle` (a file
/// last written before the marker existed cannot hold it).
fn files_containing(dirs: &[PathBuf], needle: &str, since: SystemTime) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in dirs {
        files_below(dir, &mut files);
    }
    files
        .into_iter()
        .filter(|path| {
            std::fs::metadata(path).is_ok_and(|m| {
                m.len() < 256 * 1024 * 1024 && m.modified().is_ok_and(|at| at >= since)
            }) && std::fs::read(path).is_ok_and(|bytes| {
                bytes
                    .windows(needle.len())
                    .any(|window| window == needle.as_bytes())
            })
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_script_and_its_marker_are_written_nowhere() {
    let _alone = TestLock::take();
    let started = SystemTime::now() - std::time::Duration::from_secs(2);
    let home = tempfile::tempdir().expect("temp home");
    let data = tempfile::tempdir().expect("temp data dir");
    let marker = unique_marker();
    let dev = start_dev(home.path(), data.path());
    let client = connect(&dev.url).await;
    let script = format!(
        r#"// {marker}
        const secretMarker = "{marker}";
        const forecast = await tools.weather.get_forecast({{ city: secretMarker, days: 1 }});
        return {{ echoed: forecast.arguments.city === secretMarker }};"#
    );
    let result = call(&client, "execute", json!({ "code": script })).await;
    assert_ne!(result.is_error, Some(true), "{}", text(&result));
    assert_eq!(
        result.structured_content.expect("structured result")["result"],
        json!({ "echoed": true })
    );
    client.cancel().await.expect("client closes");

    tracing::info!("--- the marker is nowhere on disk");
    let mut searched = vec![
        std::env::temp_dir(),
        home.path().to_path_buf(),
        data.path().to_path_buf(),
    ];
    if let Some(real_home) = std::env::var_os("HOME") {
        searched.push(PathBuf::from(real_home).join(".cache"));
    }
    if let Some(xdg) = std::env::var_os("XDG_CACHE_HOME") {
        searched.push(PathBuf::from(xdg));
    }
    let found = files_containing(&searched, &marker, started);
    assert!(
        found.is_empty(),
        "the script's marker was written to disk: {found:?}"
    );
}

/// A `quiver dev` in code mode with its own home and cache directories (so a
/// cache anywhere it could put one is searched or watched).
fn start_dev(home: &Path, data: &Path) -> QuiverDev {
    let cache = home.join("xdg-cache");
    QuiverDev::start_with_env(
        &[
            "--mode",
            "code",
            "--data",
            data.to_str().expect("utf-8 path"),
        ],
        &[("HOME", home), ("XDG_CACHE_HOME", &cache)],
    )
}

/// The probe child: runs deno_core with the on-disk cache ON, in the scratch
/// directory the parent names, and reports which file each compiled piece of
/// code produced. Does nothing in a normal test run.
#[test]
#[ignore = "run by bytecode_planted_where_the_engine_would_look_is_never_read as a child"]
fn bytecode_probe_child() {
    let Some(dir) = std::env::var_os(PROBE_DIR_ENV).map(PathBuf::from) else {
        return;
    };
    let genuine = std::env::var("QUIVER_TEST_GENUINE_SCRIPT").expect("genuine script");
    let forged = std::env::var("QUIVER_TEST_FORGED_SCRIPT").expect("forged script");
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio");
    let _entered = tokio.enter();
    let listing = || -> std::collections::BTreeSet<String> {
        std::fs::read_dir(&dir)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|name| name.ends_with(".qbc"))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut report: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut seen = listing();
    let mut record = |what: &str, seen: &mut std::collections::BTreeSet<String>| {
        let now = listing();
        report.insert(what.into(), now.difference(seen).cloned().collect());
        *seen = now;
    };
    let mut runtime = deno_core::JsRuntime::new(Default::default());
    record("deno_core", &mut seen);
    runtime
        .execute_script(SCRIPT_NAME, wrapped(&forged))
        .expect("forged script compiles");
    record("forged", &mut seen);
    runtime
        .execute_script(SCRIPT_NAME, wrapped(&genuine))
        .expect("genuine script compiles");
    record("genuine", &mut seen);
    // The bootstrap itself fails here (this runtime lacks Quiver's ops), but
    // it is compiled, and so cached, first.
    let _ = runtime.execute_script(BOOTSTRAP_NAME, BOOTSTRAP);
    record("bootstrap", &mut seen);
    println!(
        "\n{PROBE_REPORT}{}",
        serde_json::to_string(&report).expect("report")
    );
}

/// Files planted for the test, put back as they were when dropped.
struct Planted(Vec<(PathBuf, Option<Vec<u8>>)>);

impl Planted {
    fn plant(&mut self, path: PathBuf, bytes: &[u8]) {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("create cache dir");
        }
        let before = std::fs::read(&path).ok();
        std::fs::write(&path, bytes).expect("plant a file");
        self.0.push((path, before));
    }
}

impl Drop for Planted {
    fn drop(&mut self) {
        for (path, before) in self.0.drain(..).rev() {
            let _ = match before {
                Some(bytes) => std::fs::write(&path, bytes),
                None => std::fs::remove_file(&path),
            };
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn bytecode_planted_where_the_engine_would_look_is_never_read() {
    let _alone = TestLock::take();
    let marker = unique_marker();
    let genuine = format!("return \"genuine {marker}\";");
    let forged = format!("return \"forged {marker}\";");

    tracing::info!("--- learn the cache file names from a probe with the cache on");
    let scratch = tempfile::tempdir().expect("scratch cache dir");
    let probe = Command::new(std::env::current_exe().expect("this test binary"))
        .args([
            "--ignored",
            "--exact",
            "engine_no_disk::bytecode_probe_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env_remove("V82JSC_NO_BC_CACHE")
        .env("V82JSC_BC_CACHE_DIR", scratch.path())
        .env(PROBE_DIR_ENV, scratch.path())
        .env("QUIVER_TEST_GENUINE_SCRIPT", &genuine)
        .env("QUIVER_TEST_FORGED_SCRIPT", &forged)
        .output()
        .expect("run the probe child");
    let stdout = String::from_utf8_lossy(&probe.stdout);
    let report: BTreeMap<String, Vec<String>> = stdout
        .lines()
        .find_map(|line| {
            // libtest prints the test's name on the same line first.
            line.find(PROBE_REPORT)
                .map(|at| &line[at + PROBE_REPORT.len()..])
        })
        .map(|json| serde_json::from_str(json).expect("probe report is JSON"))
        .unwrap_or_else(|| {
            panic!(
                "the probe reported nothing: {stdout}\n{}",
                String::from_utf8_lossy(&probe.stderr)
            )
        });
    let one = |what: &str| -> String {
        match report.get(what).map(Vec::as_slice) {
            Some([name]) => name.clone(),
            other => panic!("expected one cache file for {what}, got {other:?}"),
        }
    };
    let genuine_key = one("genuine");
    let forged_key = one("forged");
    let bootstrap_key = one("bootstrap");
    let engine_keys = report.get("deno_core").cloned().unwrap_or_default();
    assert!(
        !engine_keys.is_empty(),
        "the probe cached none of deno_core's own code: {report:?}"
    );
    let forged_bytes = std::fs::read(scratch.path().join(&forged_key)).expect("forged bytecode");

    tracing::info!("--- plant garbage and forged bytecode under those names");
    let home = tempfile::tempdir().expect("temp home");
    let cache_dirs = vec![
        std::env::temp_dir().join("v8x/quickjs-bytecode"),
        home.path().join(".cache/v8x/quickjs-bytecode"),
        home.path().join("xdg-cache/v8x/quickjs-bytecode"),
    ];
    let listing_before: Vec<Vec<PathBuf>> = cache_dirs
        .iter()
        .map(|dir| {
            let mut files = Vec::new();
            files_below(dir, &mut files);
            files
        })
        .collect();
    let mut planted = Planted(Vec::new());
    for dir in &cache_dirs {
        // The script's own key and the bootstrap's hold the forged script:
        // loading either would make the answer "forged …".
        planted.plant(dir.join(&genuine_key), &forged_bytes);
        planted.plant(dir.join(&bootstrap_key), &forged_bytes);
        for key in &engine_keys {
            planted.plant(
                dir.join(key),
                b"\x02garbage that is not QuickJS bytecode\xff\xfe",
            );
        }
    }
    let inotify = Inotify::init(InitFlags::IN_NONBLOCK).expect("inotify");
    for dir in &cache_dirs {
        inotify
            .add_watch(
                dir,
                AddWatchFlags::IN_OPEN | AddWatchFlags::IN_ACCESS | AddWatchFlags::IN_MODIFY,
            )
            .expect("watch a cache dir");
    }

    tracing::info!("--- scripts through quiver dev, as a user runs them");
    let data = tempfile::tempdir().expect("temp data dir");
    let dev = start_dev(home.path(), data.path());
    let client = connect(&dev.url).await;
    for _ in 0..3 {
        let result = call(&client, "execute", json!({ "code": genuine })).await;
        assert_ne!(result.is_error, Some(true), "{}", text(&result));
        assert_eq!(
            result.structured_content.expect("structured result")["result"],
            json!(format!("genuine {marker}")),
            "a planted bytecode file changed what the script returned"
        );
    }
    client.cancel().await.expect("client closes");
    drop(dev);

    let mut buffer = [0u8; 4096];
    let touched = match nix::unistd::read(inotify.as_fd(), &mut buffer) {
        Ok(n) => n,
        Err(nix::errno::Errno::EAGAIN) => 0,
        Err(e) => panic!("reading inotify events: {e}"),
    };
    assert_eq!(
        touched, 0,
        "something opened, read or wrote a file in the planted cache directories"
    );
    for (dir, before) in cache_dirs.iter().zip(&listing_before) {
        let mut files = Vec::new();
        files_below(dir, &mut files);
        let new: Vec<_> = files
            .iter()
            .filter(|f| !before.contains(f) && !planted.0.iter().any(|(path, _)| path == *f))
            .collect();
        assert!(
            new.is_empty(),
            "new files appeared in {}: {new:?}",
            dir.display()
        );
    }
}

/// The refusal child: tries to build a runtime with the cache on.
#[test]
#[ignore = "run by a_runtime_is_refused_while_the_cache_is_on as a child"]
fn cache_on_child() {
    if std::env::var_os("QUIVER_TEST_CACHE_ON_CHILD").is_none() {
        return;
    }
    let refused = quiver_executor::engine::ScriptRuntime::new(64 * 1024 * 1024)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_else(|| "built".into());
    println!("\ncache-on-child:{refused}");
}

#[test]
fn a_runtime_is_refused_while_the_cache_is_on() {
    let scratch = tempfile::tempdir().expect("scratch dir");
    let cache = scratch.path().join("cache");
    let child = Command::new(std::env::current_exe().expect("this test binary"))
        .args([
            "--ignored",
            "--exact",
            "engine_no_disk::cache_on_child",
            "--nocapture",
        ])
        .env_remove("V82JSC_NO_BC_CACHE")
        .env("V82JSC_BC_CACHE_DIR", &cache)
        .env("QUIVER_TEST_CACHE_ON_CHILD", "1")
        .output()
        .expect("run the child");
    let stdout = String::from_utf8_lossy(&child.stdout);
    let answer = stdout
        .lines()
        .find_map(|line| line.split_once("cache-on-child:").map(|(_, rest)| rest))
        .unwrap_or_else(|| panic!("the child said nothing: {stdout}"));
    assert!(
        answer.contains("on-disk bytecode cache is on") && answer.contains("V82JSC_NO_BC_CACHE=1"),
        "{answer}"
    );
    assert!(
        !cache.exists(),
        "the refused runtime still created its cache directory"
    );
}
