//! The client side of a Streamable HTTP upstream: its URL and headers turned
//! into rmcp's transport, `${VAR}` and `${tenant_secret:NAME}` references
//! expanded on the connecting node.
//! It sets up the transport only; requests go through the rmcp peer (each
//! one's trace context also sent as headers, see [`crate::trace_headers`]).

use std::collections::BTreeMap;

use quiver_proto::{references::ExpandError, secret_value::TenantSecrets};
use rmcp::transport::{
    StreamableHttpClientTransport,
    streamable_http_client::{StreamableHttpClient, StreamableHttpClientTransportConfig},
};

use crate::trace_headers::HttpClientError;

/// Why the transport to an HTTP upstream could not be set up. Never shows
/// a header's value.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HttpTransportError {
    /// A header's value does not expand.
    #[error("header `{name}`: {source}")]
    Expand { name: String, source: ExpandError },
    /// A header's value, expanded, is not valid HTTP.
    #[error(
        "header `{name}`: its value, once its references are expanded, is not a valid HTTP header value (control characters or non-ASCII text in a secret?)"
    )]
    InvalidValue { name: String },
    /// The HTTP client could not be built.
    #[error(transparent)]
    Client(#[from] HttpClientError),
}

/// The transport to `url` over `client` (plain, or one that adds OAuth's
/// bearer header itself) with `headers` (an `Authorization: Bearer` header
/// becomes rmcp's auth header; headers that are not valid HTTP are skipped,
/// as config validation already named them). `secrets` resolve
/// `${tenant_secret:NAME}`; a value they make invalid is refused without
/// being shown.
pub(crate) fn transport<C: StreamableHttpClient>(
    client: C,
    url: &str,
    headers: &BTreeMap<String, String>,
    secrets: Option<&TenantSecrets>,
) -> Result<StreamableHttpClientTransport<C>, HttpTransportError> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    for (name, value) in headers {
        let value =
            &quiver_proto::references::expand_with_secrets(value, secrets).map_err(|source| {
                HttpTransportError::Expand {
                    name: name.clone(),
                    source,
                }
            })?;
        if http::HeaderValue::try_from(value.as_str()).is_err() {
            return Err(HttpTransportError::InvalidValue { name: name.clone() });
        }
        if name.eq_ignore_ascii_case("authorization") {
            let token = value.strip_prefix("Bearer ").unwrap_or(value);
            config = config.auth_header(token.to_string());
        } else if let (Ok(n), Ok(v)) = (
            http::HeaderName::try_from(name.as_str()),
            http::HeaderValue::try_from(value.as_str()),
        ) {
            config.custom_headers.insert(n, v);
        }
    }
    Ok(StreamableHttpClientTransport::with_client(client, config))
}
