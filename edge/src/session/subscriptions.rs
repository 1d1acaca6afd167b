//! A session's resource subscriptions: `resources/subscribe` and
//! `unsubscribe` sent on to the upstream that serves each resource (once
//! for all its subscribers), noted in the session's record so that an edge
//! taking the session up subscribes again, and a stateless listener's
//! subscriptions.

use quiver_view::ToolView;
use rmcp::{ErrorData, RoleServer, service::RequestContext};
use serde_json::json;

use super::SessionHandler;
use crate::modes::forwarded;

impl SessionHandler {
    /// `resources/subscribe` or `resources/unsubscribe` of a session, sent
    /// on to the upstream that serves `uri` (an unsubscribe only when no
    /// other session or listener holds the resource); the session is told
    /// of the resource's updates while it holds it.
    pub(super) async fn forward_subscription(
        &self,
        method: &str,
        uri: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let view = self.content_view(context)?;
        let subscribing = method == "resources/subscribe";
        if subscribing {
            self.subscribe_session(&view, uri, context.peer.clone())
                .await?;
        } else {
            let server = forwarded::route_uri(self.dispatch(), &view, uri).await?;
            let released = self
                .gateway
                .unsubscribe_resource(Some(&server), Some(uri), &self.id);
            if !released.is_empty() {
                forwarded::send(self.dispatch(), &server, method, json!({"uri": uri})).await?;
            }
        }
        // In the session's record, for an edge that takes it up.
        if let Some(session) = crate::sessions::session_of(context) {
            self.gateway
                .sessions()
                .note_subscription(self.gateway.session_records(), &session, uri, subscribing)
                .await;
        }
        Ok(())
    }

    /// Tells `peer` (this session) of `uri`'s updates, asking the upstream
    /// that serves it when nobody else holds it yet.
    async fn subscribe_session(
        &self,
        view: &ToolView,
        uri: &str,
        peer: rmcp::Peer<RoleServer>,
    ) -> Result<(), ErrorData> {
        let server = forwarded::route_uri(self.dispatch(), view, uri).await?;
        if self
            .gateway
            .subscribe_resource(&server, uri, &self.id, Some(peer))
        {
            // The first subscriber: the upstream is asked once for all.
            let subscribe = json!({"uri": uri});
            let sent = forwarded::send(self.dispatch(), &server, "resources/subscribe", subscribe);
            if let Err(e) = sent.await {
                self.gateway
                    .unsubscribe_resource(Some(&server), Some(uri), &self.id);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Subscribes a session this edge just took up to what its record says
    /// it subscribed to.
    pub(super) async fn subscribe_again(&self, session: &str, peer: &rmcp::Peer<RoleServer>) {
        let Some(view) = self
            .bound
            .get()
            .and_then(|bound| self.gateway.view_for(&bound.principal))
        else {
            return;
        };
        for uri in self.gateway.sessions().subscriptions(session) {
            if let Err(error) = self.subscribe_session(&view, &uri, peer.clone()).await {
                tracing::warn!(uri, %error.message, "subscribing a taken-up session again");
            }
        }
    }

    /// Subscribes a stateless listener (`owner`) to `uris` at the upstreams
    /// that serve them (once per resource, whoever else holds it); the ones
    /// no upstream serves are left out.
    pub(super) async fn listen_to_resources(
        &self,
        uris: &[String],
        owner: &str,
        context: &RequestContext<RoleServer>,
    ) {
        let Ok(view) = self.content_view(context) else {
            return;
        };
        for uri in uris {
            let Ok(server) = forwarded::route_uri(self.dispatch(), &view, uri).await else {
                continue;
            };
            if self.gateway.subscribe_resource(&server, uri, owner, None) {
                let subscribe = json!({"uri": uri});
                let sent =
                    forwarded::send(self.dispatch(), &server, "resources/subscribe", subscribe);
                if sent.await.is_err() {
                    self.gateway
                        .unsubscribe_resource(Some(&server), Some(uri), owner);
                }
            }
        }
    }

    /// Ends a stateless listener's resource subscriptions.
    pub(super) async fn stop_listening_to_resources(&self, owner: &str) {
        for (server, uri) in self.gateway.unsubscribe_resource(None, None, owner) {
            let params = json!({"uri": uri});
            let _ =
                forwarded::send(self.dispatch(), &server, "resources/unsubscribe", params).await;
        }
    }
}
