//! The other edges of the fleet, for calls parked on one of them.
//!
//! A call a stateless (2026-07-28) client must answer waits on the edge that
//! took it (see `input_required`). The client's next request, carrying the
//! call's `requestState`, may land on any edge. Each edge therefore names
//! itself in the states it hands out (`<tag>.<id>`, the tag a hash of its
//! node name), learns the other edges from the fleet's membership, and hands
//! a resume it does not hold to the edge that does, as the same HTTP request
//! (the owner authenticates it again). A resume forwarded once is never
//! forwarded again; a state whose edge left the fleet is answered by the
//! receiving edge like any state it does not hold (`-32602`, call again).

use std::{
    collections::HashMap,
    sync::{Arc, RwLock},
};

use axum::{
    body::{Body, Bytes},
    http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header, request::Parts},
    response::{IntoResponse, Response},
};

/// The header on a resume one edge forwards to another: the forwarding
/// edge's node name.
pub const FORWARDED_BY: &str = "quiver-forwarded-by";

/// Headers that describe one connection, not the request: never forwarded.
const HOP_BY_HOP: [HeaderName; 6] = [
    header::CONNECTION,
    header::HOST,
    header::CONTENT_LENGTH,
    header::TRANSFER_ENCODING,
    header::TE,
    header::UPGRADE,
];

/// The tag an edge named `node` puts in the states it hands out: 12 hex
/// digits of the SHA-256 of its name (names are not shown to clients).
pub fn tag_of(node: &str) -> String {
    quiver_proto::hash::sha256(node.as_bytes())
        .iter()
        .take(6)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// This edge's name and the other edges it can hand a resume to.
pub struct EdgePeers {
    node: String,
    tag: String,
    /// Tag → the peer's node name and base URL (`http://host:port`).
    peers: RwLock<HashMap<String, (String, String)>>,
    client: reqwest::Client,
}

impl EdgePeers {
    /// The peers of the edge named `node`; `roots` are the PEM certificates
    /// trusted for peers that serve TLS (the edge's own chain, when the
    /// fleet's edges share one).
    pub fn new(node: &str, roots: &[Vec<u8>]) -> Result<Arc<EdgePeers>, reqwest::Error> {
        let mut client = reqwest::Client::builder()
            .no_proxy()
            .tcp_nodelay(true)
            .connect_timeout(std::time::Duration::from_secs(2));
        for pem in roots {
            client = client.tls_certs_merge(reqwest::Certificate::from_pem_bundle(pem)?);
        }
        Ok(Arc::new(EdgePeers {
            node: node.to_string(),
            tag: tag_of(node),
            peers: RwLock::default(),
            client: client.build()?,
        }))
    }

    /// This edge's node name.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The base URL of `node`, when it is a peer this edge knows now.
    pub(crate) fn url_of(&self, node: &str) -> Option<String> {
        self.peers
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .find(|(known, _)| known == node)
            .map(|(_, url)| url.clone())
    }

    /// This edge's tag.
    pub fn tag(&self) -> &str {
        &self.tag
    }

    /// Replaces the known peers with `peers`, `(node name, base URL)`; this
    /// edge itself is left out.
    pub fn update(&self, peers: impl IntoIterator<Item = (String, String)>) {
        let known: HashMap<String, (String, String)> = peers
            .into_iter()
            .filter(|(node, _)| *node != self.node)
            .map(|(node, url)| {
                let url = url.trim_end_matches('/').to_string();
                (tag_of(&node), (node, url))
            })
            .collect();
        *self.peers.write().unwrap_or_else(|p| p.into_inner()) = known;
    }

    /// The base URL of the peer that holds the call `state` names, when that
    /// is a known edge other than this one.
    pub(crate) fn holder(&self, state: &str) -> Option<String> {
        let (tag, _) = state.split_once('.')?;
        if tag == self.tag {
            return None;
        }
        self.peers
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(tag)
            .map(|(_, url)| url.clone())
    }

    /// Whether `node` is this edge or a peer it knows now.
    pub fn knows(&self, node: &str) -> bool {
        node == self.node
            || self
                .peers
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .values()
                .any(|(known, _)| known == node)
    }

    /// The peers known now, `{node, url}` by name, for `/status`.
    pub fn status(&self) -> serde_json::Value {
        let peers = self.peers.read().unwrap_or_else(|p| p.into_inner());
        let mut known: Vec<&(String, String)> = peers.values().collect();
        known.sort();
        known
            .into_iter()
            .map(|(node, url)| serde_json::json!({"node": node, "url": url}))
            .collect()
    }

    /// Sends the request (`parts`, `body`; JSON-RPC id `id`) to the peer at
    /// `base`, on the same path, and answers with what it answered. The
    /// client's host name is kept (with the peer's port when it named one),
    /// so the peer's allowed hosts accept it as they would from the client.
    pub(crate) async fn forward(
        &self,
        base: &str,
        parts: Parts,
        body: Bytes,
        id: serde_json::Value,
    ) -> Response {
        match self.try_forward(base, parts, body).await {
            Ok(response) => response,
            Err(e) => {
                // Its call went with it: the client starts the call again.
                tracing::warn!("handing a resumed call to the edge at {base} failed: {e}");
                let error = serde_json::json!({
                    "jsonrpc": "2.0",
                    "id": id,
                    "error": {
                        "code": -32602,
                        "message": "requestState names a call held by an edge that cannot be \
                                    reached now (its call is lost); call the tool again without \
                                    requestState",
                    },
                });
                axum::Json(error).into_response()
            }
        }
    }

    /// Sends the request (any method) to the peer at `base` as
    /// [`EdgePeers::forward`] does, its answer streamed back as it comes;
    /// the transport's error when the peer cannot be reached.
    pub(crate) async fn try_forward(
        &self,
        base: &str,
        parts: Parts,
        body: Bytes,
    ) -> Result<Response, reqwest::Error> {
        let path = parts
            .uri
            .path_and_query()
            .map_or("/mcp", |p| p.as_str())
            .to_string();
        let url = format!("{base}{path}");
        let mut headers = HeaderMap::new();
        for (name, value) in &parts.headers {
            if !HOP_BY_HOP.contains(name) {
                headers.append(name.clone(), value.clone());
            }
        }
        if let Some(host) = forwarded_host(&parts.headers, base) {
            headers.insert(header::HOST, host);
        }
        if let Ok(me) = HeaderValue::from_str(&self.node) {
            headers.insert(FORWARDED_BY, me);
        }
        let sent = self
            .client
            .request(parts.method.clone(), &url)
            .headers(headers)
            .body(body)
            .send()
            .await;
        let answer = sent?;
        let mut response = Response::builder().status(answer.status());
        for (name, value) in answer.headers() {
            if !HOP_BY_HOP.contains(name) {
                response = response.header(name, value);
            }
        }
        Ok(response
            .body(Body::from_stream(answer.bytes_stream()))
            .unwrap_or_else(|_| StatusCode::BAD_GATEWAY.into_response()))
    }
}

/// The `Host` to send a peer at `base`: the client's host name, with the
/// peer's port when the client's `Host` had one.
fn forwarded_host(headers: &HeaderMap, base: &str) -> Option<HeaderValue> {
    let original = headers.get(header::HOST)?.to_str().ok()?;
    let authority: axum::http::uri::Authority = original.parse().ok()?;
    if authority.port().is_none() {
        return HeaderValue::from_str(original).ok();
    }
    let peer: axum::http::Uri = base.parse().ok()?;
    let port = peer.port_u16()?;
    let host = authority.host();
    HeaderValue::from_str(&format!("{host}:{port}")).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_is_handed_only_to_the_known_edge_that_issued_it() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let peers = EdgePeers::new("edge-a", &[]).unwrap();
        peers.update([
            ("edge-a".to_string(), "http://10.0.0.1:8080".to_string()),
            ("edge-b".to_string(), "http://10.0.0.2:8080/".to_string()),
        ]);
        let mine = format!("{}.abc", peers.tag());
        let theirs = format!("{}.abc", tag_of("edge-b"));
        let gone = format!("{}.abc", tag_of("edge-c"));
        assert_eq!(peers.holder(&mine), None, "its own state stays here");
        assert_eq!(
            peers.holder(&theirs).as_deref(),
            Some("http://10.0.0.2:8080")
        );
        assert_eq!(peers.holder(&gone), None, "an edge that left is not asked");
        assert_eq!(peers.holder("no-tag-at-all"), None);
        peers.update([]);
        assert_eq!(peers.holder(&theirs), None, "a peer that left is forgotten");
    }

    #[test]
    fn the_clients_host_name_is_kept_with_the_peers_port() {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_static("127.0.0.1:4000"));
        assert_eq!(
            forwarded_host(&headers, "http://127.0.0.1:5000").unwrap(),
            "127.0.0.1:5000"
        );
        headers.insert(header::HOST, HeaderValue::from_static("quiver.example.com"));
        assert_eq!(
            forwarded_host(&headers, "http://10.0.0.2:8080").unwrap(),
            "quiver.example.com"
        );
    }
}
