//! The edge's shared state: every tenant's view of the current manifest
//! (swapped atomically when a new manifest version or new tenants arrive),
//! where calls and scripts run, and the sessions to tell when the
//! passthrough tool list changes. It knows nothing of modes or sessions; a
//! session holds a gateway, never the reverse.

use std::sync::{Arc, Mutex, Weak};

use quiver_contract::ResourceUpdate;
use quiver_contract::{CallOrigin, Dispatch, Scripts};
use quiver_proto::{Manifest, tenant::TenantDirectory};
use rmcp::{RoleServer, service::Peer};
use tokio::sync::watch;

use quiver_view::{LiveViews, TenantViews, ToolView};

use crate::{
    auth::{
        self, AuthRefusal, Credential, Principal,
        jwt::{JwtRejection, JwtValidator},
    },
    config::EdgeConfig,
    input_required::ParkedCalls,
    tasks::EdgeTasks,
};

/// State shared by every session of one edge.
pub struct Gateway {
    views: Arc<LiveViews>,
    /// This edge's name in audit records.
    name: String,
    /// Validates OAuth access tokens, when `[edge.oauth]` is configured.
    tokens: Option<JwtValidator>,
    dispatch: Arc<dyn Dispatch>,
    config: EdgeConfig,
    listeners: Mutex<Vec<Peer<RoleServer>>>,
    scripts: Option<Arc<dyn Scripts>>,
    /// Calls of stateless clients waiting for their `input_required` answers.
    parked: ParkedCalls,
    /// Calls of clients that take tasks, made tasks (SEP-2663).
    tasks: Arc<EdgeTasks>,
    /// The other edges of the fleet, to hand them resumes of calls they hold.
    peers: Option<Arc<crate::peers::EdgePeers>>,
    /// Who subscribed to which upstream resource (`resources/subscribe` of a
    /// session, `resourceSubscriptions` of a stateless listener).
    subscribers: Mutex<Vec<Subscriber>>,
    /// Resource updates, for stateless listeners.
    updated: tokio::sync::broadcast::Sender<ResourceUpdate>,
    /// The sessions this edge knows, and what ends their requests.
    sessions: Arc<crate::sessions::SessionRegistry>,
    /// The fleet's session records (etcd), when sessions outlive this edge.
    session_records: Option<Arc<quiver_fleet::session_records::SessionRecords>>,
    /// Where `/oauth/callback` relays the people coming back from an
    /// upstream's authorization server (the control plane).
    grant_callback: Option<Arc<dyn quiver_admin::AdminTransport>>,
    /// What the web console asks the control plane, and the operator token.
    console: Option<crate::console_link::ConsoleLink>,
}

/// What makes a [`Gateway`]: its views, where calls and scripts go, its
/// settings, and what links it to the rest of a fleet. Everything is given
/// before [`GatewayBuilder::build`]; the gateway it builds never changes.
pub struct GatewayBuilder {
    views: Arc<LiveViews>,
    dispatch: Arc<dyn Dispatch>,
    scripts: Option<Arc<dyn Scripts>>,
    config: EdgeConfig,
    peers: Option<Arc<crate::peers::EdgePeers>>,
    session_records: Option<Arc<quiver_fleet::session_records::SessionRecords>>,
    task_records: Option<TaskRecording>,
    task_audit: Option<crate::tasks::TaskAudit>,
    grant_callback: Option<Arc<dyn quiver_admin::AdminTransport>>,
    console: Option<crate::console_link::ConsoleLink>,
}

/// Where a gateway's tasks are recorded in a fleet.
struct TaskRecording {
    records: Arc<quiver_fleet::task_records::TaskRecords>,
    holder: String,
    executor_alive: Arc<dyn Fn(&str) -> bool + Send + Sync>,
}

impl GatewayBuilder {
    /// Makes this edge one of `peers`' fleet: the calls it parks and the
    /// tasks it makes are named as its own, and a resume of a call another
    /// edge holds is handed to it.
    pub fn peers(mut self, peers: Arc<crate::peers::EdgePeers>) -> Self {
        self.peers = Some(peers);
        self
    }

    /// Records every session this edge opens in `records` (etcd), so that
    /// any edge serves it, also once this one is gone.
    pub fn session_records(
        mut self,
        records: Arc<quiver_fleet::session_records::SessionRecords>,
    ) -> Self {
        self.session_records = Some(records);
        self
    }

    /// Records this edge's tasks in `records` (etcd), so that the other
    /// edges answer for them once this one (`holder`) is gone; an executor
    /// named in a record runs on while `executor_alive` says so.
    pub fn task_records(
        mut self,
        records: Arc<quiver_fleet::task_records::TaskRecords>,
        holder: &str,
        executor_alive: Arc<dyn Fn(&str) -> bool + Send + Sync>,
    ) -> Self {
        self.task_records = Some(TaskRecording {
            records,
            holder: holder.to_string(),
            executor_alive,
        });
        self
    }

    /// Sends an audit record to `audit` whenever a call becomes a task and
    /// whenever a task ends.
    pub fn task_audit(mut self, audit: crate::tasks::TaskAudit) -> Self {
        self.task_audit = Some(audit);
        self
    }

    /// Relays `/oauth/callback` to `control_plane`, which completes the
    /// grant.
    pub fn grant_callback(mut self, control_plane: Arc<dyn quiver_admin::AdminTransport>) -> Self {
        self.grant_callback = Some(control_plane);
        self
    }

    /// Links the web console to the control plane.
    pub fn console(mut self, link: crate::console_link::ConsoleLink) -> Self {
        self.console = Some(link);
        self
    }

    /// The gateway.
    pub fn build(self) -> Arc<Gateway> {
        let GatewayBuilder {
            views,
            dispatch,
            scripts,
            config,
            peers,
            session_records,
            task_records,
            task_audit,
            grant_callback,
            console,
        } = self;
        let mut tasks = EdgeTasks::new(config.tasks.limits());
        if let Some(TaskRecording {
            records,
            holder,
            executor_alive,
        }) = task_records
        {
            let tag = peers
                .as_ref()
                .map_or_else(|| crate::peers::tag_of(&holder), |p| p.tag().to_string());
            let edges = peers.clone();
            tasks = tasks.in_fleet(crate::tasks::TaskFleet {
                records,
                holder,
                tag,
                executor_alive,
                edge_alive: Arc::new(move |node: &str| {
                    edges.as_ref().is_some_and(|p| p.knows(node))
                }),
            });
        }
        if let Some(audit) = task_audit {
            tasks = tasks.audited_by(audit);
        }
        let parked = ParkedCalls::default();
        if let Some(peers) = &peers {
            parked.tag_states(peers.tag());
        }
        // The binary checks the OAuth settings before it starts; a gateway
        // built with bad ones refuses every token rather than accept any.
        let tokens = config
            .oauth
            .clone()
            .and_then(|oauth| match JwtValidator::new(oauth) {
                Ok(validator) => Some(validator),
                Err(e) => {
                    tracing::error!("edge.oauth: {e}; every access token will be refused");
                    None
                }
            });
        let mut installed = views.installed();
        let gateway = Arc::new(Gateway {
            views,
            name: format!("edge-{}", std::process::id()),
            tokens,
            dispatch,
            config,
            listeners: Mutex::new(Vec::new()),
            scripts,
            parked,
            tasks: Arc::new(tasks),
            peers,
            subscribers: Mutex::new(Vec::new()),
            updated: tokio::sync::broadcast::channel(256).0,
            sessions: Arc::default(),
            session_records,
            grant_callback,
            console,
        });
        // Resource updates reach the sessions that subscribed, and listeners.
        if let Some(mut updates) = gateway.dispatch.resource_updates() {
            let weak: Weak<Gateway> = Arc::downgrade(&gateway);
            tokio::spawn(async move {
                loop {
                    let update = match updates.recv().await {
                        Ok(update) => update,
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                    };
                    let Some(gateway) = weak.upgrade() else {
                        return;
                    };
                    gateway.relay_resource_update(update).await;
                }
            });
        }
        // Passthrough sessions hear of every new view: the manifest or
        // their tenant's policy may have changed what they list.
        let weak: Weak<Gateway> = Arc::downgrade(&gateway);
        tokio::spawn(async move {
            while installed.changed().await.is_ok() {
                let Some(gateway) = weak.upgrade() else {
                    return;
                };
                gateway.tell_listeners().await;
            }
        });
        gateway
    }
}

/// One subscription to an upstream resource.
struct Subscriber {
    server: String,
    uri: String,
    /// A session's peer, told directly; `None` for a stateless listener
    /// (told through [`Gateway::resource_updates`]), counted so the upstream
    /// subscription stays while anyone holds it.
    peer: Option<Peer<RoleServer>>,
    /// Whose it is (a session's id, a listener's), to take it out again.
    owner: String,
}

impl Gateway {
    /// A gateway serving `manifests` (kept current by a background task that
    /// ends when the sender is dropped) to anonymous callers only (no
    /// tenants), running calls through `dispatch` and, when given, code
    /// mode's `execute` on `scripts`.
    pub fn with_scripts(
        manifests: watch::Receiver<Arc<Manifest>>,
        dispatch: Arc<dyn Dispatch>,
        scripts: Option<Arc<dyn Scripts>>,
        config: EdgeConfig,
    ) -> Arc<Gateway> {
        let (_, tenants) = watch::channel(Arc::new(TenantDirectory::default()));
        Gateway::with_tenants(manifests, tenants, dispatch, scripts, config)
    }

    /// A gateway serving `manifests` to the tenants of `tenants` (both kept
    /// current by a background task that ends when the manifest sender is
    /// dropped).
    pub fn with_tenants(
        manifests: watch::Receiver<Arc<Manifest>>,
        tenants: watch::Receiver<Arc<TenantDirectory>>,
        dispatch: Arc<dyn Dispatch>,
        scripts: Option<Arc<dyn Scripts>>,
        config: EdgeConfig,
    ) -> Arc<Gateway> {
        config.install_search();
        let views = LiveViews::follow_capped(manifests, tenants, config.max_views);
        Gateway::with_views(views, dispatch, scripts, config)
    }

    /// A gateway answering from `views`, which an in-process executor may
    /// share (build them after [`EdgeConfig::install_search`], which decides
    /// how their search indexes are made), linked to nothing else.
    pub fn with_views(
        views: Arc<LiveViews>,
        dispatch: Arc<dyn Dispatch>,
        scripts: Option<Arc<dyn Scripts>>,
        config: EdgeConfig,
    ) -> Arc<Gateway> {
        Gateway::builder(views, dispatch, scripts, config).build()
    }

    /// What builds a gateway answering from `views` (see
    /// [`Gateway::with_views`]), to be linked to a fleet first.
    pub fn builder(
        views: Arc<LiveViews>,
        dispatch: Arc<dyn Dispatch>,
        scripts: Option<Arc<dyn Scripts>>,
        config: EdgeConfig,
    ) -> GatewayBuilder {
        GatewayBuilder {
            views,
            dispatch,
            scripts,
            config,
            peers: None,
            session_records: None,
            task_records: None,
            task_audit: None,
            grant_callback: None,
            console: None,
        }
    }

    async fn tell_listeners(&self) {
        let peers: Vec<Peer<RoleServer>> = {
            let mut listeners = self.listeners.lock().unwrap_or_else(|p| p.into_inner());
            listeners.retain(|p| !p.is_transport_closed());
            listeners.clone()
        };
        for peer in peers {
            let _ = peer.notify_tool_list_changed().await;
        }
    }

    /// The current view of every tool (what an anonymous caller sees).
    pub fn view(&self) -> Arc<ToolView> {
        self.views.current().all().clone()
    }

    /// Every tenant's view of the current manifest.
    pub fn views(&self) -> Arc<TenantViews> {
        self.views.current()
    }

    /// The current view of `principal`'s tenant, or `None` when the tenant
    /// no longer exists.
    pub fn view_for(&self, principal: &Principal) -> Option<Arc<ToolView>> {
        if principal.is_anonymous() {
            return Some(self.view());
        }
        self.views.current().for_tenant(&principal.tenant)
    }

    /// The principal of a bearer credential: an API key checked against the
    /// current tenants' key hashes (a revoked key fails from the update that
    /// removes it).
    pub async fn authenticate(&self, credential: &str) -> Result<Principal, AuthRefusal> {
        let views = self.views.current();
        if auth::is_api_key(credential) {
            return auth::authenticate_key(credential, views.tenants());
        }
        let Some(validator) = &self.tokens else {
            return Err(AuthRefusal::Invalid {
                reason: "not an API key, and this edge accepts no access tokens".into(),
            });
        };
        let identity = validator.validate(credential).await.map_err(|e| match e {
            JwtRejection::InsufficientScope { required } => {
                AuthRefusal::InsufficientScope { required }
            }
            other => AuthRefusal::Invalid {
                reason: other.to_string(),
            },
        })?;
        if views.tenants().get(&identity.tenant).is_none() {
            return Err(AuthRefusal::Invalid {
                reason: format!(
                    "token of `{}` from `{}` names tenant `{}`, which does not exist",
                    identity.subject, identity.issuer, identity.tenant
                ),
            });
        }
        Ok(Principal {
            tenant: identity.tenant.into(),
            credential: Credential::Token {
                issuer: identity.issuer,
                subject: identity.subject,
                bearer: quiver_proto::secret_value::SecretValue::new(credential.to_string()),
            },
        })
    }

    /// Scopes every access token must carry (none without OAuth).
    pub fn required_scopes(&self) -> Vec<String> {
        self.config
            .oauth
            .as_ref()
            .map(|o| o.required_scopes.clone())
            .unwrap_or_default()
    }

    /// Scopes advertised in the protected-resource metadata.
    pub fn scopes_supported(&self) -> Vec<String> {
        self.required_scopes()
    }

    /// The configured OAuth resource identifier, if any.
    pub fn oauth_resource(&self) -> Option<String> {
        self.config.oauth.as_ref().map(|o| o.resource.clone())
    }

    /// The OAuth issuers whose tokens this edge accepts.
    pub fn authorization_servers(&self) -> Vec<String> {
        self.config
            .oauth
            .iter()
            .flat_map(|o| o.issuers.iter().map(|i| i.issuer.clone()))
            .collect()
    }

    /// Who made a call, as the executor's audit record names it: the
    /// principal's key id or token subject and this edge.
    pub fn origin_of(&self, principal: &Principal) -> CallOrigin {
        let subject_token = match &principal.credential {
            Credential::Token { bearer, .. } => Some(bearer.clone()),
            _ => None,
        };
        CallOrigin {
            caller: principal.who(),
            edge: self.name.clone(),
            script_sha256: None,
            subject_token,
            from_app: false,
        }
    }

    /// The dispatcher.
    pub fn dispatch(&self) -> &Arc<dyn Dispatch> {
        &self.dispatch
    }

    /// Where `execute` runs, when scripts are enabled.
    pub fn scripts(&self) -> Option<&Arc<dyn Scripts>> {
        self.scripts.as_ref()
    }

    /// The configuration.
    pub fn config(&self) -> &EdgeConfig {
        &self.config
    }

    /// Tells `peer` about tool-list changes from now on.
    /// Tells every subscriber of `update`'s resource.
    async fn relay_resource_update(&self, update: ResourceUpdate) {
        let peers: Vec<Peer<RoleServer>> = {
            let mut subscribers = self.subscribers.lock().unwrap_or_else(|p| p.into_inner());
            subscribers.retain(|s| s.peer.as_ref().is_none_or(|p| !p.is_transport_closed()));
            subscribers
                .iter()
                .filter(|s| s.server == update.server && s.uri == update.uri)
                .filter_map(|s| s.peer.clone())
                .collect()
        };
        for peer in peers {
            let params = rmcp::model::ResourceUpdatedNotificationParam::new(update.uri.clone());
            let _ = peer.notify_resource_updated(params).await;
        }
        let _ = self.updated.send(update);
    }

    /// Resource updates from now on, for a stateless listener.
    pub(crate) fn resource_updates(&self) -> tokio::sync::broadcast::Receiver<ResourceUpdate> {
        self.updated.subscribe()
    }

    /// Records `owner`'s subscription to `uri` of upstream `server`: a
    /// session's (told through `peer`) or a stateless listener's. Whether it
    /// is the first to it (the upstream must be asked).
    pub(crate) fn subscribe_resource(
        &self,
        server: &str,
        uri: &str,
        owner: &str,
        peer: Option<Peer<RoleServer>>,
    ) -> bool {
        let mut subscribers = self.subscribers.lock().unwrap_or_else(|p| p.into_inner());
        subscribers.retain(|s| s.peer.as_ref().is_none_or(|p| !p.is_transport_closed()));
        let first = !subscribers
            .iter()
            .any(|s| s.server == server && s.uri == uri);
        subscribers.push(Subscriber {
            server: server.to_string(),
            uri: uri.to_string(),
            peer,
            owner: owner.to_string(),
        });
        first
    }

    /// Takes out `owner`'s subscriptions to `uri` of `server` (every one
    /// when `None`); the resources nobody holds any more (the upstream may be
    /// told).
    pub(crate) fn unsubscribe_resource(
        &self,
        server: Option<&str>,
        uri: Option<&str>,
        owner: &str,
    ) -> Vec<(String, String)> {
        let mut subscribers = self.subscribers.lock().unwrap_or_else(|p| p.into_inner());
        let mut removed = Vec::new();
        subscribers.retain(|s| {
            let matches = s.owner == owner
                && server.is_none_or(|x| x == s.server)
                && uri.is_none_or(|x| x == s.uri);
            if matches {
                removed.push((s.server.clone(), s.uri.clone()));
            }
            !matches
        });
        removed.retain(|(server, uri)| {
            !subscribers
                .iter()
                .any(|s| &s.server == server && &s.uri == uri)
        });
        removed.dedup();
        removed
    }

    /// The calls of stateless clients waiting for them.
    pub(crate) fn parked_calls(&self) -> &ParkedCalls {
        &self.parked
    }

    /// The tasks of this edge's clients.
    pub(crate) fn tasks(&self) -> &Arc<EdgeTasks> {
        &self.tasks
    }

    /// The sessions this edge knows.
    pub(crate) fn sessions(&self) -> &Arc<crate::sessions::SessionRegistry> {
        &self.sessions
    }

    /// Where sessions are recorded, if they are.
    pub(crate) fn session_records(
        &self,
    ) -> Option<Arc<quiver_fleet::session_records::SessionRecords>> {
        self.session_records.clone()
    }

    /// The console's link to the control plane, if any.
    pub(crate) fn console_link(&self) -> Option<&crate::console_link::ConsoleLink> {
        self.console.as_ref()
    }

    /// Where `/oauth/callback` is relayed, if anywhere.
    pub(crate) fn grant_callback(&self) -> Option<Arc<dyn quiver_admin::AdminTransport>> {
        self.grant_callback.clone()
    }

    /// The other edges of the fleet, if this edge is in one.
    pub(crate) fn peers(&self) -> Option<&Arc<crate::peers::EdgePeers>> {
        self.peers.as_ref()
    }

    /// Ticks every time the views change (a new manifest or tenant policy):
    /// what a stateless `subscriptions/listen` waits on.
    pub(crate) fn views_installed(&self) -> tokio::sync::watch::Receiver<u64> {
        self.views.installed()
    }

    pub(crate) fn listen_for_changes(&self, peer: Peer<RoleServer>) {
        let mut listeners = self.listeners.lock().unwrap_or_else(|p| p.into_inner());
        listeners.retain(|p| !p.is_transport_closed());
        listeners.push(peer);
    }
}
