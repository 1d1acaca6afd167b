//! `quiver dev` keeps upstreams added with `quiver ctl` across restarts: the
//! config file wins for an id it defines, an upstream the config dropped since
//! the last start goes, and the start-up line says what was kept, added,
//! replaced or removed. `--reset-upstreams` makes the registry the config's.

use crate::support;

use support::{QuiverDev, connect, ctl, ctl_json, demo_upstream_flags, quiver_bin, tool_names};

/// A config with the demo's servers `servers` as stdio mock upstreams.
fn config(servers: &[&str]) -> String {
    servers
        .iter()
        .map(|server| {
            format!(
                "[[upstream]]\nid = \"{server}\"\ntransport = \"stdio\"\ndescription = \"{server} from the config\"\ncommand = \"{}\"\nargs = [\"mock-upstream\", \"--demo\", \"--server\", \"{server}\", \"--stdio\"]\n\n",
                quiver_bin()
            )
        })
        .collect()
}

/// Starts dev in passthrough on `data` with a config of `servers`.
fn start(
    data: &std::path::Path,
    dir: &std::path::Path,
    servers: &[&str],
    extra: &[&str],
) -> QuiverDev {
    let path = support::write_file(dir, "quiver.toml", &config(servers));
    let mut args = vec![
        "--mode",
        "passthrough",
        "--data",
        data.to_str().expect("utf-8 path"),
        "--config",
        path.to_str().expect("utf-8 path"),
    ];
    args.extend_from_slice(extra);
    QuiverDev::start(&args)
}

/// The namespaces (`<server>__`) of the tools passthrough lists.
async fn servers_listed(dev: &QuiverDev) -> Vec<String> {
    let client = connect(&dev.url).await;
    let mut servers: Vec<String> = tool_names(&client)
        .await
        .iter()
        .filter_map(|n| n.split("__").next().map(str::to_string))
        .collect();
    servers.sort();
    servers.dedup();
    client.cancel().await.expect("close");
    servers
}

fn ctl_add(dev: &QuiverDev, id: &str, server: &str) {
    let mut add = vec!["upstream", "add", id];
    let flags = demo_upstream_flags(server, &[]);
    add.extend(flags.iter().map(String::as_str));
    let (ok, _, err) = ctl(&dev.control_plane, &add);
    assert!(ok, "ctl upstream add {id}: {err}");
}

/// `quiver ctl upstream show <id>`, as JSON text.
fn description(dev: &QuiverDev, id: &str) -> String {
    ctl_json(&dev.control_plane, &["upstream", "show", id]).to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn upstreams_added_with_ctl_survive_a_restart_unless_the_config_claims_or_reset_drops_them() {
    let data = tempfile::tempdir().expect("temp dir");
    let dir = tempfile::tempdir().expect("temp dir");

    eprintln!("--- first start: the config has weather; ctl adds notes and maps");
    let dev = start(data.path(), dir.path(), &["weather"], &[]);
    assert!(
        dev.banner
            .contains("upstreams: 1 from the config (0 unchanged, added weather)"),
        "{}",
        dev.banner
    );
    ctl_add(&dev, "notes", "notes");
    ctl_add(&dev, "maps", "maps");
    drop(dev);

    eprintln!("--- restart, the config now also defines maps: notes kept, maps replaced");
    let dev = start(data.path(), dir.path(), &["weather", "maps"], &[]);
    assert!(
        dev.banner.contains(
            "upstreams: 2 from the config (1 unchanged, replaced maps), kept from quiver ctl: notes"
        ),
        "{}",
        dev.banner
    );
    assert_eq!(servers_listed(&dev).await, ["maps", "notes", "weather"]);
    let shown = description(&dev, "maps");
    assert!(
        shown.contains("maps from the config"),
        "the file wins: {shown}"
    );
    drop(dev);

    eprintln!(
        "--- restart without maps in the config: the config's own upstream goes, notes stays"
    );
    let dev = start(data.path(), dir.path(), &["weather"], &[]);
    assert!(
        dev.banner
            .contains("kept from quiver ctl: notes, removed maps"),
        "{}",
        dev.banner
    );
    assert_eq!(servers_listed(&dev).await, ["notes", "weather"]);
    drop(dev);

    eprintln!("--- --reset-upstreams: exactly the config");
    let dev = start(
        data.path(),
        dir.path(),
        &["weather"],
        &["--reset-upstreams"],
    );
    assert!(dev.banner.contains("removed notes"), "{}", dev.banner);
    assert_eq!(servers_listed(&dev).await, ["weather"]);
}
