//! The web console's link to the control plane: each [`ConsoleCall`] as
//! the operator request `quiver ctl` sends for it, answered with the JSON
//! `quiver ctl -o json` prints. In-process for `quiver dev`, over the admin
//! API (its own connection, so console requests never wait behind budget
//! leases or audit records) for `quiver edge`.

use std::{path::Path, sync::Arc};

use futures::future::BoxFuture;
use quiver_control_plane::{
    ControlPlaneNode,
    admin::{AdminRequest, KeyRequester},
    audit_log::AuditQuery,
    client::AdminClient,
    raft::network::TlsMaterial,
};
use quiver_edge::{
    RelayError,
    console::{ConsoleBackend, ConsoleCall},
};
use serde_json::Value;

use super::relay;

/// Where the console's requests go.
pub(crate) enum ConsoleAdmin {
    /// A control-plane node in this process.
    Node(Arc<ControlPlaneNode>),
    /// Whichever node leads, over the admin API.
    Client(tokio::sync::Mutex<AdminClient>),
}

impl ConsoleAdmin {
    /// Over the admin API at `endpoints`.
    pub(crate) fn client(endpoints: Vec<String>, tls: Option<TlsMaterial>) -> ConsoleAdmin {
        ConsoleAdmin::Client(tokio::sync::Mutex::new(AdminClient::new(endpoints, tls)))
    }
}

/// The operator request answering `call`.
fn request(call: ConsoleCall) -> AdminRequest {
    match call {
        ConsoleCall::KeyIssue { tenant } => AdminRequest::KeyIssue {
            tenant,
            requester: KeyRequester::Tenant,
        },
        ConsoleCall::KeyRevoke { tenant, key_id } => AdminRequest::KeyRevoke {
            tenant,
            key_id,
            requester: KeyRequester::Tenant,
        },
        ConsoleCall::Usage { tenant } => AdminRequest::TenantUsage { id: tenant },
        ConsoleCall::Audit {
            tenant,
            since_ms,
            limit,
        } => AdminRequest::Audit {
            query: AuditQuery {
                tenant,
                since_ms,
                limit: Some(limit),
            },
        },
        ConsoleCall::Findings => AdminRequest::UpstreamFindings { id: None },
        ConsoleCall::Tenants => AdminRequest::TenantList,
        ConsoleCall::Upstreams => AdminRequest::UpstreamList,
        ConsoleCall::Drift => AdminRequest::UpstreamDrift { id: None },
        ConsoleCall::Approve { id, tool } => AdminRequest::UpstreamApprove { id, tool },
        ConsoleCall::ClusterStatus => AdminRequest::ClusterStatus,
        ConsoleCall::Grants => AdminRequest::GrantList { tenant: None },
        ConsoleCall::Authorize { upstream, tenant } => AdminRequest::UpstreamAuthorize {
            upstream,
            tenant,
            scopes: Vec::new(),
        },
    }
}

impl ConsoleBackend for ConsoleAdmin {
    fn call(&self, call: ConsoleCall) -> BoxFuture<'_, Result<Value, RelayError>> {
        Box::pin(async move {
            let request = request(call);
            let answer = match self {
                ConsoleAdmin::Node(node) => node.admin(request).await.map_err(relay::from_admin),
                ConsoleAdmin::Client(client) => client
                    .lock()
                    .await
                    .call(&request)
                    .await
                    .map_err(relay::from_client),
            };
            answer.map(|a| a.to_json())
        })
    }
}

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
