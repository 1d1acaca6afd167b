//! What links the web console to this process: the operator token
//! `quiver dev` writes for itself, and where operators find metrics.

use std::path::Path;

/// Where `quiver dev` keeps the console's operator token (written, 0600, on
/// first start), and its SHA-256.
pub(crate) fn dev_operator_token(data: &Path) -> anyhow::Result<(std::path::PathBuf, [u8; 32])> {
    let path = data.join("console-operator.token");
    if !path.exists() {
        use std::io::Write as _;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&path)?;
        writeln!(file, "{}", quiver_edge::console::new_operator_token())?;
    }
    let digest = quiver_edge::console::read_operator_token(&path)?;
    Ok((path, digest))
}

/// Where an operator finds this node's metrics: the admin listener's
/// `/metrics`, and the MCP port's when it authenticates nobody.
pub(crate) fn metrics_links(
    admin: &Option<String>,
    auth: quiver_edge::auth::AuthMode,
) -> Vec<String> {
    let mut links: Vec<String> = admin.iter().map(|url| format!("{url}/metrics")).collect();
    if auth == quiver_edge::auth::AuthMode::None {
        links.push("/metrics".to_string());
    }
    links
}
