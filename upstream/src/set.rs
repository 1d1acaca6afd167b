//! All upstreams of a node, by id. The set can change while calls are in flight
//! ([`UpstreamSet::reconcile`]): a call holds its own `Arc<Upstream>`.
//!
//! A per-tenant upstream (its header or env values reference
//! `${tenant_secret:NAME}`) has, besides its entry by id (discovery's
//! connection, which serves no call), one connection per tenant, opened on
//! that tenant's first call with that tenant's secrets only
//! ([`UpstreamSet::for_tenant`]).
//!
//! While it lives, the set reports each upstream's breaker as the
//! `quiver.upstream.breaker.state` gauge.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex, RwLock, Weak},
};

use opentelemetry::KeyValue;
use quiver_telemetry::{instruments::names, metrics::meter};

use quiver_contract::{ResourceUpdate, UpstreamError};
use quiver_proto::upstream_config::UpstreamConfig;
use tokio::sync::broadcast;

use crate::{
    caller_tokens::CallerToken,
    status::UpstreamStatus,
    tenant_credentials::{Renewer, SecretHolder, SecretSlot, TenantSecretSource},
    upstream::Upstream,
};

/// `(upstream id, tenant)`.
type TenantKey = (String, String);

/// `(upstream id, tenant, caller)`.
type CallerKey = (String, String, String);

/// A connection of an upstream that acts on behalf of its callers, and its
/// exchanged token.
type CallerConnection = (Arc<Upstream>, Arc<CallerToken>);

/// Connections per caller a set keeps at most; past it, one is closed
/// before another opens.
const MAX_CALLER_CONNECTIONS: usize = 4096;

/// The upstreams a node holds connections to.
pub struct UpstreamSet {
    upstreams: Arc<RwLock<BTreeMap<String, Arc<Upstream>>>>,
    /// The connections of per-tenant upstreams, one per tenant that called.
    by_tenant: Arc<Mutex<BTreeMap<TenantKey, Arc<Upstream>>>>,
    /// The connections of upstreams that act on behalf of each caller
    /// (token exchange), one per caller that called.
    by_caller: Arc<Mutex<BTreeMap<CallerKey, CallerConnection>>>,
    /// Where per-tenant upstreams find their tenants' secrets.
    secrets: Arc<SecretSlot>,
    /// Every shared upstream's `notifications/resources/updated`.
    updates: broadcast::Sender<ResourceUpdate>,
}

impl Default for UpstreamSet {
    /// An empty set, reporting its breakers.
    fn default() -> UpstreamSet {
        let set = UpstreamSet {
            upstreams: Arc::default(),
            by_tenant: Arc::default(),
            by_caller: Arc::default(),
            secrets: Arc::default(),
            updates: broadcast::channel(256).0,
        };
        report_breakers(
            Arc::downgrade(&set.upstreams),
            Arc::downgrade(&set.by_tenant),
        );
        let callers = Arc::downgrade(&set.by_caller);
        quiver_telemetry::tables::watch(
            "upstream.caller_connections",
            MAX_CALLER_CONNECTIONS,
            move || Some(callers.upgrade()?.lock().ok()?.len()),
        );
        let tenants = Arc::downgrade(&set.by_tenant);
        quiver_telemetry::tables::count("upstream.tenant_connections", move || {
            Some(tenants.upgrade()?.lock().ok()?.len())
        });
        set
    }
}

/// Registers the breaker gauge: per upstream id, the most open breaker among
/// its entry and its tenants' connections (a per-tenant upstream is open
/// for whichever tenant's connection is). A dropped set reports nothing.
fn report_breakers(
    upstreams: Weak<RwLock<BTreeMap<String, Arc<Upstream>>>>,
    by_tenant: Weak<Mutex<BTreeMap<TenantKey, Arc<Upstream>>>>,
) {
    meter()
        .u64_observable_gauge(names::BREAKER_STATE)
        .with_description("Circuit breaker per upstream: 0 closed, 1 half-open, 2 open")
        .with_callback(move |observer| {
            let (Some(upstreams), Some(by_tenant)) = (upstreams.upgrade(), by_tenant.upgrade())
            else {
                return;
            };
            let mut levels: BTreeMap<String, u64> = upstreams
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .map(|(id, u)| (id.clone(), u.breaker_state().level()))
                .collect();
            for ((id, _), connection) in by_tenant.lock().unwrap_or_else(|p| p.into_inner()).iter()
            {
                if let Some(level) = levels.get_mut(id) {
                    *level = (*level).max(connection.breaker_state().level());
                }
            }
            for (id, level) in levels {
                observer.observe(level, &[KeyValue::new("quiver.upstream", id)]);
            }
        })
        .build();
}

impl UpstreamSet {
    /// One [`Upstream`] per config (not yet connected).
    pub fn new(configs: impl IntoIterator<Item = UpstreamConfig>) -> UpstreamSet {
        let set = UpstreamSet::default();
        set.reconcile(configs.into_iter().collect());
        set
    }

    /// The resource updates (`notifications/resources/updated`) of every
    /// upstream of the set shared by all tenants, from now on.
    pub fn resource_updates(&self) -> broadcast::Receiver<ResourceUpdate> {
        self.updates.subscribe()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Arc<Upstream>>> {
        self.upstreams.read().unwrap_or_else(|p| p.into_inner())
    }

    fn tenants(&self) -> std::sync::MutexGuard<'_, BTreeMap<TenantKey, Arc<Upstream>>> {
        self.by_tenant.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The upstream with this id (for a per-tenant upstream, discovery's
    /// connection: calls go through [`UpstreamSet::for_tenant`]).
    pub fn get(&self, id: &str) -> Result<Arc<Upstream>, UpstreamError> {
        self.read()
            .get(id)
            .cloned()
            .ok_or_else(|| UpstreamError::Unknown(id.to_string()))
    }

    /// The connection that serves `tenant`'s calls to upstream `id`: the
    /// upstream itself when it is shared by every tenant; for a per-tenant
    /// upstream, the tenant's own connection, made (not yet connected) on its
    /// first call. A tenant lacking one of the upstream's secrets is refused
    /// here, before anything is made or sent.
    pub fn for_tenant(&self, id: &str, tenant: &str) -> Result<Arc<Upstream>, UpstreamError> {
        self.tenant_connection(self.get(id)?, id, tenant)
    }

    /// [`UpstreamSet::for_tenant`] for `upstream` (the set's entry `id`).
    fn tenant_connection(
        &self,
        upstream: Arc<Upstream>,
        id: &str,
        tenant: &str,
    ) -> Result<Arc<Upstream>, UpstreamError> {
        let Some(credentials) = upstream.credentials() else {
            return Ok(upstream);
        };
        let Some(source) = self.secrets.current() else {
            return Err(UpstreamError::CredentialsUnavailable {
                id: id.to_string(),
                reason: "this node holds no tenant secrets (it follows no control plane, or none were sent yet)".into(),
            });
        };
        if let Some(name) = credentials
            .names()
            .iter()
            .find(|name| source.version(tenant, name).is_none())
        {
            if upstream.config().oauth_grant_secret().as_ref() == Some(name) {
                return Err(UpstreamError::NotAuthorized {
                    id: id.to_string(),
                    tenant: tenant.to_string(),
                });
            }
            return Err(UpstreamError::MissingTenantSecret {
                id: id.to_string(),
                tenant: tenant.to_string(),
                name: name.clone(),
            });
        }
        let key = (id.to_string(), tenant.to_string());
        let mut tenants = self.tenants();
        if let Some(existing) = tenants.get(&key)
            && existing.config() == upstream.config()
        {
            return Ok(existing.clone());
        }
        let connection = Upstream::with_credentials(
            upstream.config().clone(),
            SecretHolder::Tenant(tenant.to_string()),
            self.secrets.clone(),
        );
        if let Some(replaced) = tenants.insert(key, connection.clone()) {
            // Its settings changed under a concurrent reconcile.
            tokio::spawn(async move { replaced.shutdown().await });
        }
        Ok(connection)
    }

    /// The connection that serves a call of `caller` (of `tenant`) to
    /// upstream `id`: for an upstream that acts on behalf of each caller
    /// (token exchange), the caller's own, sending a token exchanged for
    /// `subject_token` (the access token the caller presented; a call
    /// without one is refused, nothing sent); otherwise
    /// [`UpstreamSet::for_tenant`]'s.
    pub async fn for_call(
        &self,
        id: &str,
        tenant: &str,
        caller: &str,
        subject_token: Option<&quiver_proto::secret_value::SecretValue>,
    ) -> Result<Arc<Upstream>, UpstreamError> {
        let upstream = self.get(id)?;
        let config = upstream.config();
        let (Some(settings), true, quiver_proto::upstream_config::Transport::Http { url, .. }) =
            (&config.oauth, config.acts_for_caller(), &config.transport)
        else {
            return self.tenant_connection(upstream.clone(), id, tenant);
        };
        let Some(subject) = subject_token else {
            return Err(UpstreamError::CredentialsUnavailable {
                id: id.to_string(),
                reason: "it acts on behalf of each caller (OAuth token exchange), and this call came with no OAuth access token to exchange (an API key cannot be); call with an access token the edge accepts".into(),
            });
        };
        // `token:SUBJECT@ISSUER`, as the edge names a token's holder.
        let Some((_, issuer)) = caller
            .strip_prefix("token:")
            .and_then(|c| c.rsplit_once('@'))
        else {
            return Err(UpstreamError::CredentialsUnavailable {
                id: id.to_string(),
                reason: "it acts on behalf of each caller (OAuth token exchange), and this call names no token's issuer".into(),
            });
        };
        let key = (id.to_string(), tenant.to_string(), caller.to_string());
        let (connection, token) = {
            let mut callers = self.by_caller.lock().unwrap_or_else(|p| p.into_inner());
            match callers.get(&key) {
                Some((existing, token)) if existing.config() == config => {
                    (existing.clone(), token.clone())
                }
                _ => {
                    if callers.len() >= MAX_CALLER_CONNECTIONS
                        && let Some(oldest) = callers.keys().next().cloned()
                        && let Some((closed, _)) = callers.remove(&oldest)
                    {
                        tokio::spawn(async move { closed.shutdown().await });
                    }
                    let slot = Arc::new(SecretSlot::default());
                    let name = config.oauth_token_name();
                    let token = Arc::new(CallerToken::new(
                        url,
                        settings.clone(),
                        (tenant, issuer),
                        name.clone(),
                        slot.clone(),
                    ));
                    slot.set_renewer(Renewer::Exchange(token.clone()));
                    let connection = Upstream::with_secret_names(
                        config.clone(),
                        [name].into(),
                        SecretHolder::Tenant(tenant.to_string()),
                        slot,
                    );
                    if let Some((replaced, _)) =
                        callers.insert(key, (connection.clone(), token.clone()))
                    {
                        tokio::spawn(async move { replaced.shutdown().await });
                    }
                    (connection, token)
                }
            }
        };
        token
            .ensure(subject)
            .await
            .map_err(|e| UpstreamError::Unauthorized {
                id: id.to_string(),
                reason: e.to_string(),
            })?;
        Ok(connection)
    }

    /// Whether an upstream with this id is in the set.
    pub fn contains(&self, id: &str) -> bool {
        self.read().contains_key(id)
    }

    /// All upstreams in id order (per-tenant connections not included).
    pub fn all(&self) -> Vec<Arc<Upstream>> {
        self.read().values().cloned().collect()
    }

    /// All ids in order.
    pub fn ids(&self) -> Vec<String> {
        self.read().keys().cloned().collect()
    }

    /// Status of every upstream, in id order (per-tenant connections not included).
    pub fn statuses(&self) -> Vec<UpstreamStatus> {
        self.all().iter().map(|u| u.status()).collect()
    }

    /// Makes the set exactly `configs`. Returns the upstreams taken out (removed,
    /// or replaced because their settings changed, with their per-tenant
    /// connections) for the caller to shut down; new and replaced ones connect
    /// on first use.
    pub fn reconcile(&self, configs: Vec<UpstreamConfig>) -> Vec<Arc<Upstream>> {
        let mut upstreams = self.upstreams.write().unwrap_or_else(|p| p.into_inner());
        let wanted: BTreeMap<String, UpstreamConfig> =
            configs.into_iter().map(|c| (c.id.clone(), c)).collect();
        let mut out = Vec::new();
        upstreams.retain(|id, upstream| match wanted.get(id) {
            Some(config) if config == upstream.config() => true,
            _ => {
                out.push(upstream.clone());
                false
            }
        });
        self.tenants()
            .retain(|(id, _), connection| match wanted.get(id) {
                Some(config) if config == connection.config() => true,
                _ => {
                    out.push(connection.clone());
                    false
                }
            });
        self.by_caller
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(id, _, _), (connection, _)| match wanted.get(id) {
                Some(config) if config == connection.config() => true,
                _ => {
                    out.push(connection.clone());
                    false
                }
            });
        for (id, config) in wanted {
            upstreams.entry(id).or_insert_with(|| {
                let holder = SecretHolder::Discovery {
                    preferred: config.discovery_tenant.clone(),
                };
                let upstream = Upstream::with_credentials(config, holder, self.secrets.clone());
                upstream.report_resource_updates_to(self.updates.clone());
                upstream
            });
        }
        out
    }

    /// Installs the node's tenant secrets as the control plane last sent
    /// them. Connections whose secrets changed reconnect with the new ones on
    /// their next use (discovery hears of it at once); a tenant's connection
    /// to an upstream whose secrets it no longer holds is taken out and
    /// returned for the caller to shut down.
    pub fn install_secrets(&self, source: Arc<dyn TenantSecretSource>) -> Vec<Arc<Upstream>> {
        let mut watched: Vec<Arc<Upstream>> = self.all();
        watched.extend(self.tenants().values().cloned());
        let before: Vec<_> = watched
            .iter()
            .map(|u| u.credentials().and_then(|c| c.stamp()))
            .collect();
        self.secrets.replace(source.clone());
        let mut out = Vec::new();
        for (upstream, before) in watched.iter().zip(before) {
            let Some(credentials) = upstream.credentials() else {
                continue;
            };
            let after = credentials.stamp_in(source.as_ref());
            let lost = upstream.tenant().is_some_and(|tenant| {
                credentials
                    .names()
                    .iter()
                    .any(|name| source.version(tenant, name).is_none())
            });
            if lost {
                let key = (
                    upstream.id().to_string(),
                    upstream.tenant().unwrap_or_default().to_string(),
                );
                let mut tenants = self.tenants();
                if tenants.get(&key).is_some_and(|u| Arc::ptr_eq(u, upstream)) {
                    tenants.remove(&key);
                    out.push(upstream.clone());
                }
            } else if after != before {
                upstream.credentials_changed();
            }
        }
        out
    }

    /// The control plane that renews tenants' OAuth grants when an upstream
    /// refuses a token: without one, such a refusal fails the call.
    pub fn renew_grants_through(&self, control_plane: Arc<dyn quiver_admin::AdminTransport>) {
        self.secrets.set_renewer(Renewer::Grants(control_plane));
    }

    /// Closes every connection.
    pub async fn shutdown(&self) {
        let mut tenants: Vec<Arc<Upstream>> = self.tenants().values().cloned().collect();
        tenants.extend(
            (self.by_caller.lock().unwrap_or_else(|p| p.into_inner()))
                .values()
                .map(|(connection, _)| connection.clone()),
        );
        for upstream in self.all().into_iter().chain(tenants) {
            upstream.shutdown().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CallOptions, Transport, tenant_credentials::tests::PlainSource};

    fn per_tenant(id: &str) -> UpstreamConfig {
        let mut config = UpstreamConfig::http(id, "http://127.0.0.1:9/mcp");
        if let Transport::Http { headers, .. } = &mut config.transport {
            headers.insert(
                "Authorization".into(),
                "Bearer ${tenant_secret:TOKEN}".into(),
            );
        }
        config
    }

    /// The breaker gauge's sample for `id`, if reported.
    fn breaker_level(id: &str) -> Option<u64> {
        quiver_telemetry::metrics::sample(
            "quiver_upstream_breaker_state",
            &format!("quiver_upstream=\"{id}\""),
        )
        .map(|v| v as u64)
    }

    #[tokio::test]
    async fn the_breaker_gauge_follows_each_upstream_while_the_set_lives() {
        // Nothing listens on the discard port: every call fails to connect.
        let mut config = UpstreamConfig::http("breaker-gauge", "http://127.0.0.1:9/mcp");
        config.breaker_failures = 1;
        config.connect_timeout_ms = 2_000;
        let set = UpstreamSet::new([config]);
        assert_eq!(breaker_level("breaker-gauge"), Some(0), "closed");
        let upstream = set.for_tenant("breaker-gauge", "alpha").unwrap();
        let failed = upstream
            .call_tool("anything", None, CallOptions::default())
            .await;
        assert!(failed.is_err());
        assert_eq!(breaker_level("breaker-gauge"), Some(2), "open");
        drop((upstream, set));
        assert_eq!(
            breaker_level("breaker-gauge"),
            None,
            "a dropped set reports nothing"
        );
    }

    #[tokio::test]
    async fn each_tenant_gets_its_own_connection_and_only_with_its_secrets() {
        let set = UpstreamSet::new([
            per_tenant("api"),
            UpstreamConfig::http("open", "http://127.0.0.1:9/mcp"),
        ]);
        // A shared upstream serves everyone through one connection.
        let open = set.for_tenant("open", "alpha").unwrap();
        assert!(Arc::ptr_eq(&open, &set.for_tenant("open", "beta").unwrap()));
        // Before any secrets reach the node, a per-tenant upstream says why it cannot serve.
        assert!(matches!(
            set.for_tenant("api", "alpha"),
            Err(UpstreamError::CredentialsUnavailable { .. })
        ));
        set.install_secrets(PlainSource::with(&[
            ("alpha", "TOKEN", "a"),
            ("beta", "TOKEN", "b"),
        ]));
        let alpha = set.for_tenant("api", "alpha").unwrap();
        let beta = set.for_tenant("api", "beta").unwrap();
        assert!(!Arc::ptr_eq(&alpha, &beta));
        assert_eq!(
            (alpha.tenant(), beta.tenant()),
            (Some("alpha"), Some("beta"))
        );
        assert!(Arc::ptr_eq(
            &alpha,
            &set.for_tenant("api", "alpha").unwrap()
        ));
        let Err(refused) = set.for_tenant("api", "gamma") else {
            panic!("gamma holds no TOKEN");
        };
        assert!(
            matches!(&refused, UpstreamError::MissingTenantSecret { tenant, name, .. } if tenant == "gamma" && name == "TOKEN"),
            "{refused}"
        );
        // Beta's secret deleted: its connection is handed back to be shut down.
        let out = set.install_secrets(PlainSource::with(&[("alpha", "TOKEN", "a2")]));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].tenant(), Some("beta"));
        assert!(
            Arc::ptr_eq(&alpha, &set.for_tenant("api", "alpha").unwrap()),
            "alpha reconnects in place"
        );
        assert!(matches!(
            set.for_tenant("api", "beta"),
            Err(UpstreamError::MissingTenantSecret { .. })
        ));
        // Settings changed: every tenant's connection goes with the old upstream.
        let mut changed = per_tenant("api");
        changed.call_timeout_ms = 1234;
        let out = set.reconcile(vec![
            changed,
            UpstreamConfig::http("open", "http://127.0.0.1:9/mcp"),
        ]);
        assert_eq!(out.len(), 2, "the shared entry and alpha's connection");
        assert_eq!(
            set.for_tenant("api", "alpha")
                .unwrap()
                .config()
                .call_timeout_ms,
            1234
        );
    }
}
