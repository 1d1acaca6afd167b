//! The HTTP client of Streamable HTTP upstreams: rmcp's reqwest client, with
//! each request's trace context (`traceparent`, `tracestate` from its
//! `params._meta`, where [`crate::request_span`] put it) also sent as HTTP
//! headers, so HTTP-level proxies and servers that read only headers join
//! the trace. It adds nothing else and leaves every other message alone.

use std::{collections::HashMap, sync::Arc};

use http::{HeaderName, HeaderValue};
use quiver_telemetry::propagation::TRACE_KEYS;
use rmcp::{
    model::{ClientJsonRpcMessage, GetMeta as _, JsonRpcMessage},
    transport::{
        common::client_side_sse::BoxedSseResponse,
        streamable_http_client::{
            StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
            StreamableHttpResponseLimits,
        },
    },
};

/// Most redirects followed for one request.
const MAX_REDIRECTS: usize = 10;

/// Why the HTTP client could not be built.
#[derive(Debug, thiserror::Error)]
#[error("building the HTTP client: {0}")]
pub struct HttpClientError(#[source] reqwest::Error);

/// rmcp's reqwest client, adding a request's trace context as headers.
#[derive(Clone)]
pub(crate) struct TracingHttpClient {
    inner: reqwest::Client,
}

impl TracingHttpClient {
    /// A client configured as rmcp's default one: no idle pooling, and only
    /// same-origin 307/308 redirects followed (others would drop the body,
    /// or replay the session and custom headers to another host).
    pub(crate) fn new() -> Result<TracingHttpClient, HttpClientError> {
        let redirects = reqwest::redirect::Policy::custom(|attempt| {
            let keeps_body = matches!(
                attempt.status(),
                reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
            );
            let same_origin = attempt
                .previous()
                .first()
                .is_some_and(|first| first.origin() == attempt.url().origin());
            if !keeps_body || !same_origin {
                attempt.stop()
            } else if attempt.previous().len() > MAX_REDIRECTS {
                attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
            } else {
                attempt.follow()
            }
        });
        let inner = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .redirect(redirects)
            .build()
            .map_err(HttpClientError)?;
        Ok(TracingHttpClient { inner })
    }
}

/// `headers` plus the trace context `message` carries in its `_meta`.
fn with_trace_headers(
    message: &ClientJsonRpcMessage,
    mut headers: HashMap<HeaderName, HeaderValue>,
) -> HashMap<HeaderName, HeaderValue> {
    if let JsonRpcMessage::Request(request) = message {
        let meta = request.request.get_meta();
        for key in TRACE_KEYS {
            if let Some(value) = meta
                .get(key)
                .and_then(serde_json::Value::as_str)
                .and_then(|v| HeaderValue::from_str(v).ok())
            {
                headers.insert(HeaderName::from_static(key), value);
            }
        }
    }
    headers
}

impl StreamableHttpClient for TracingHttpClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let limits = StreamableHttpResponseLimits::default();
        (self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        ))
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        (self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        ))
        .await
    }

    /// Every message goes out here, with its trace headers; the transport's
    /// body-size limits reach reqwest's client, which enforces them before
    /// parsing.
    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let headers = with_trace_headers(&message, custom_headers);
        (self.inner)
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                headers,
                limits,
            )
            .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxedSseResponse, StreamableHttpError<Self::Error>> {
        self.inner
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxedSseResponse, StreamableHttpError<Self::Error>> {
        self.inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{
        CallToolRequest, CallToolRequestParams, ClientRequest, JsonRpcRequest, RequestId,
    };

    use super::*;

    #[test]
    fn a_requests_trace_context_becomes_headers_and_nothing_else_does() {
        let mut request = ClientRequest::CallToolRequest(CallToolRequest::new(
            CallToolRequestParams::new("get_forecast"),
        ));
        let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        request
            .get_meta_mut()
            .insert("traceparent".into(), parent.into());
        request
            .get_meta_mut()
            .insert("progressToken".into(), 7.into());
        let message = JsonRpcMessage::Request(JsonRpcRequest::new(RequestId::Number(1), request));
        let headers = with_trace_headers(&message, HashMap::new());
        assert_eq!(headers.len(), 1, "{headers:?}");
        assert_eq!(headers[&HeaderName::from_static("traceparent")], parent);
    }
}
