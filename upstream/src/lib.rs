//! Connections from Quiver to downstream MCP servers ("upstreams").
//!
//! Owns the rmcp clients (a spawned stdio child or Streamable HTTP), their
//! reconnection with backoff, tool listing with pagination, tool calls, and the
//! routing of what an upstream sends back during a call (progress, logging,
//! sampling and elicitation requests) to the caller that started it. It never
//! retries a tool call: a call is dispatched at most once. An upstream whose
//! credentials are per tenant (`${tenant_secret:NAME}`) gets one connection
//! per tenant, made with that tenant's secrets only.

mod breaker;
mod caller_tokens;
mod client;
mod event;
mod oauth;
pub mod oauth_grant;
mod request_span;
mod secret_scrub;
mod set;
mod status;
mod stdio;
mod streamable_http;
mod tenant_credentials;
mod trace_headers;
mod upstream;

pub use breaker::{BreakerConfig, BreakerState, CircuitBreaker};
pub use event::UpstreamEvent;
pub use oauth::{Consent, ConsentError, OAuthError};
pub use quiver_contract::{
    CallOptions, CallSink, ResourceUpdate, SinkFuture, TaskTicket, UpstreamError,
};
pub use quiver_proto::references::{
    ExpandError, TENANT_SECRET_PREFIX, expand_references, expand_with_secrets, tenant_secret_names,
};
pub use quiver_proto::secret_value::{SecretValue, TenantSecrets};
pub use quiver_proto::upstream_config::{
    ConfigError, OAuthGrant, Transport, TransportKeyError, UpstreamConfig, UpstreamMessageError,
    UpstreamOAuth, UpstreamProtocol, valid_secret_name,
};
pub use set::UpstreamSet;
pub use status::{UpstreamState, UpstreamStatus};
pub use tenant_credentials::{RenewalError, SecretError, TenantSecretSource};
pub use trace_headers::HttpClientError;
pub use upstream::Upstream;

/// Makes rustls' ring provider the process default unless one is already set.
///
/// HTTP clients (reqwest, and rmcp's client transport on top of it) take the
/// process-wide rustls provider; Quiver builds rustls with ring only, so call
/// this before building one. Idempotent and cheap.
pub fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // A concurrent caller may win the race; either way ring is installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}
