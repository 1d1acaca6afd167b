//! An rmcp client that declares the tasks extension (SEP-2663), for the
//! tests of tasks.

use rmcp::{
    ClientHandler, RoleClient, ServiceExt,
    model::{ClientCapabilities, ClientConfig},
    service::RunningService,
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};

/// A client that takes tasks.
#[derive(Clone, Default)]
pub struct TaskClient;

impl ClientHandler for TaskClient {
    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        info.capabilities = ClientCapabilities::builder().enable_tasks().build();
        info
    }
}

/// A [`TaskClient`] of `url`, presenting `credential` (an API key) when given.
pub async fn connect_taking_tasks(
    url: &str,
    credential: Option<&str>,
) -> RunningService<RoleClient, TaskClient> {
    quiver_upstream::install_crypto_provider();
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    config.auth_header = credential.map(str::to_string);
    TaskClient
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("MCP client connects")
}
