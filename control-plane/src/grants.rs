//! Tenants' OAuth grants of upstreams, served by the leader: a person's
//! authorization (the link `quiver ctl upstream authorize` prints; the
//! callback an edge relays), renewing access tokens before they expire or
//! when an executor's was refused, and dropping a grant.
//!
//! Where each part lives: a flow in progress (its PKCE verifier) in the
//! leader's memory only, for [`GRANT_FLOW_TTL`]; the grant (refresh token,
//! client, scopes) sealed with the cluster key in the replicated state,
//! opened only by the leader; the access token sealed as the tenant secret
//! `oauth-<upstream>`, which executors open to call the upstream.

use std::{collections::HashMap, sync::Arc, time::Duration};

use quiver_proto::upstream_config::{Transport, UpstreamConfig, UpstreamOAuth};
use quiver_upstream::{
    SecretValue,
    oauth_grant::{Callback, GRANT_FLOW_TTL, GrantError, GrantFlow, TenantGrant},
};

use crate::{
    admin::{AdminError, AuthorizationLink, Committed, GrantSummary},
    cluster_key::{ClusterKey, SealedValue},
    command::{Command, OAuthGrantPut},
    outcome::{OAuthGrantChanged, Refusal, RefusalCode},
    replica::Replica,
    state::{ControlState, OAuthGrantRecord},
};

/// Flows in progress a leader keeps at most (each is a few kilobytes).
const MAX_FLOWS: usize = 1024;

/// How often the leader looks for access tokens about to expire.
pub const RENEW_EVERY: Duration = Duration::from_secs(5);

/// How long a grant whose renewal failed (its server unreachable) waits
/// before the leader tries it again unasked.
const RETRY_AFTER: Duration = Duration::from_secs(60);

pub(crate) use crate::cluster_key::grant_name;

/// `(tenant, upstream)`: one grant.
use quiver_proto::tenant::GrantKey;

/// A flow in progress: for whom, of what.
struct Pending {
    tenant: String,
    upstream: String,
    flow: GrantFlow,
}

/// The leader's side of tenants' grants.
pub(crate) struct GrantDesk {
    replica: Replica,
    key: Option<Arc<ClusterKey>>,
    flows: std::sync::Mutex<HashMap<String, Pending>>,
    /// One renewal at a time per grant on this node: requests for the same
    /// grant that arrive together share one.
    renewing: std::sync::Mutex<HashMap<GrantKey, Arc<tokio::sync::Mutex<()>>>>,
    /// Grants whose renewal before expiry failed, and when: not retried
    /// unasked for [`RETRY_AFTER`].
    failed: std::sync::Mutex<HashMap<GrantKey, std::time::Instant>>,
}

impl GrantDesk {
    pub(crate) fn new(replica: Replica, key: Option<Arc<ClusterKey>>) -> GrantDesk {
        GrantDesk {
            replica,
            key,
            flows: std::sync::Mutex::default(),
            renewing: std::sync::Mutex::default(),
            failed: std::sync::Mutex::default(),
        }
    }

    /// This node leads and holds the cluster key, or the refusal saying so.
    fn ready(&self) -> Result<&Arc<ClusterKey>, AdminError> {
        let r = &self.replica;
        if r.raft().metrics().borrow().current_leader != Some(r.id()) {
            return Err(r.not_leader());
        }
        self.key.as_ref().ok_or_else(|| AdminError::Refused {
            code: RefusalCode::Unsupported,
            message: format!(
                "node {} holds no cluster key, so it cannot keep OAuth grants; start every control-plane node and executor with the same cluster key",
                r.id()
            ),
        })
    }

    /// The upstream's URL and OAuth settings, when it takes a person's grant.
    async fn settings(
        &self,
        upstream: &str,
        tenant: &str,
    ) -> Result<(UpstreamConfig, String, UpstreamOAuth), AdminError> {
        let (config, known_tenant) = self
            .replica
            .read(|s| {
                let config = s.upstreams.get(upstream).map(|u| u.config.clone());
                (config, s.tenants.contains_key(tenant))
            })
            .await?;
        let shared = self.replica.shared();
        let Some(config) = config else {
            return Err(shared.lock().unknown_upstream(upstream).into());
        };
        if !known_tenant {
            return Err(shared.lock().unknown_tenant(tenant).into());
        }
        let (Some(_), Some(oauth), Transport::Http { url, .. }) = (
            config.oauth_grant_secret(),
            config.oauth.clone(),
            &config.transport,
        ) else {
            return Err(Refusal::invalid(format!(
                "upstream `{upstream}` takes no person's OAuth grant; add it with `quiver ctl upstream add {upstream} --url URL --oauth https://EDGE/oauth/callback`"
            ))
            .into());
        };
        let url = url.clone();
        Ok((config, url, oauth))
    }

    /// Starts a person's grant of `upstream` for `tenant`, asking for the
    /// configured scopes, those the tenant's grant holds, and `more` (a
    /// step-up).
    pub(crate) async fn authorize(
        &self,
        upstream: String,
        tenant: String,
        more: Vec<String>,
    ) -> Result<AuthorizationLink, AdminError> {
        self.ready()?;
        let full = || {
            let flows = self.flows.lock().unwrap_or_else(|p| p.into_inner());
            flows.values().filter(|p| !p.flow.expired()).count() >= MAX_FLOWS
        };
        if full() {
            return Err(AdminError::Unavailable(format!(
                "{MAX_FLOWS} authorizations are in progress on this node; try again once some complete or expire ({} s)",
                GRANT_FLOW_TTL.as_secs()
            )));
        }
        let (_, url, mut oauth) = self.settings(&upstream, &tenant).await?;
        if !more.is_empty() {
            oauth.scopes.extend(more);
            if let Some(held) = self.record(&tenant, &upstream) {
                oauth.scopes.extend(held.scopes);
            }
            oauth.scopes.sort();
            oauth.scopes.dedup();
        }
        let flow = GrantFlow::start(&url, &oauth).await.map_err(|e| {
            AdminError::Unavailable(format!(
                "cannot start the OAuth authorization of upstream `{upstream}`: {e}"
            ))
        })?;
        let link = flow.link().to_string();
        {
            let mut flows = self.flows.lock().unwrap_or_else(|p| p.into_inner());
            flows.retain(|_, pending| !pending.flow.expired());
            if flows.len() >= MAX_FLOWS {
                return Err(AdminError::Unavailable(format!(
                    "{MAX_FLOWS} authorizations are in progress on this node; try again once some complete or expire ({} s)",
                    GRANT_FLOW_TTL.as_secs()
                )));
            }
            flows.insert(
                flow.csrf().to_string(),
                Pending {
                    tenant: tenant.clone(),
                    upstream: upstream.clone(),
                    flow,
                },
            );
        }
        tracing::info!(%upstream, %tenant, "OAuth authorization started");
        Ok(AuthorizationLink {
            upstream,
            tenant,
            link,
            expires_in_s: GRANT_FLOW_TTL.as_secs(),
        })
    }

    /// Completes a flow with the callback URL the person came back with.
    pub(crate) async fn authorized(
        &self,
        url: SecretValue,
    ) -> Result<OAuthGrantChanged, AdminError> {
        self.ready()?;
        let callback =
            Callback::parse(url.expose()).map_err(|e| AdminError::Invalid(e.to_string()))?;
        let pending = self
            .flows
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(callback.csrf())
            .filter(|p| !p.flow.expired());
        let Some(Pending {
            tenant,
            upstream,
            flow,
        }) = pending
        else {
            return Err(Refusal::not_found(format!(
                "no authorization in progress matches this callback: it expired ({} s), was completed already, or was started before the leader changed; get a new link with `quiver ctl upstream authorize`",
                GRANT_FLOW_TTL.as_secs()
            ))
            .into());
        };
        let grant = flow.finish(&callback).await.map_err(|e| {
            AdminError::Invalid(format!(
                "the OAuth authorization of upstream `{upstream}` for tenant `{tenant}` failed: {e}; get a new link with `quiver ctl upstream authorize {upstream} --tenant {tenant}`"
            ))
        })?;
        self.keep(&tenant, &upstream, &grant, "oauth", None).await?;
        tracing::info!(%upstream, %tenant, "OAuth grant kept");
        Ok(OAuthGrantChanged { tenant, upstream })
    }

    /// Seals `grant` and its access token and commits them (for a renewal,
    /// `replaces` is when the grant renewed was last renewed).
    async fn keep(
        &self,
        tenant: &str,
        upstream: &str,
        grant: &TenantGrant,
        actor: &str,
        replaces: Option<u64>,
    ) -> Result<Committed, AdminError> {
        let key = self.ready()?;
        let seal = |name: &str, value: &SecretValue| -> Result<SealedValue, AdminError> {
            key.seal(tenant, name, value)
                .map_err(|e| AdminError::Invalid(format!("cannot seal the OAuth grant: {e}")))
        };
        let access_name = format!(
            "{}{upstream}",
            quiver_proto::upstream_config::OAUTH_GRANT_SECRET_PREFIX
        );
        let put = OAuthGrantPut {
            tenant: tenant.to_string(),
            upstream: upstream.to_string(),
            record: OAuthGrantRecord {
                sealed: seal(&grant_name(upstream), &grant.to_secret())?,
                expires_at_ms: grant.expires_at_ms(),
                scopes: grant.scopes(),
                renewable: grant.renewable(),
                granted_ms: 0,
                updated_ms: 0,
            },
            access: seal(&access_name, &grant.access_token())?,
            replaces,
        };
        self.replica
            .write(
                actor,
                Command::PutOAuthGrant {
                    grant: Box::new(put),
                },
            )
            .await
    }

    /// Renews `tenant`'s access token for `upstream`. A refresh token the
    /// authorization server no longer accepts drops the grant (the tenant's
    /// calls then say to authorize again).
    pub(crate) async fn renew(
        &self,
        upstream: &str,
        tenant: &str,
        actor: &str,
    ) -> Result<Committed, AdminError> {
        let key = self.ready()?.clone();
        let seen = self.record(tenant, upstream).map(|r| r.updated_ms);
        let lock = (self.renewing.lock().unwrap_or_else(|p| p.into_inner()))
            .entry(GrantKey::new(tenant, upstream))
            .or_default()
            .clone();
        let _one_at_a_time = lock.lock().await;
        let Some(record) = self.record(tenant, upstream) else {
            return Err(Refusal::not_found(format!(
                "tenant `{tenant}` holds no OAuth grant for upstream `{upstream}`; get one with `quiver ctl upstream authorize {upstream} --tenant {tenant}`"
            ))
            .into());
        };
        if seen.is_some_and(|seen| seen != record.updated_ms) {
            // Renewed while this request waited.
            return Ok(Committed {
                result: crate::outcome::CommandResult::Nothing,
                manifest_version: self.replica.shared().lock().manifest_version(),
                log_index: 0,
            });
        }
        let (_, url, oauth) = self.settings(upstream, tenant).await?;
        let grant = key
            .open(tenant, &grant_name(upstream), &record.sealed)
            .map_err(|e| AdminError::Invalid(format!("cannot open the OAuth grant: {e}")))
            .and_then(|value| {
                TenantGrant::from_secret(&value).map_err(|e| AdminError::Invalid(e.to_string()))
            })?;
        match grant.renew(&url, &oauth).await {
            Ok(renewed) => {
                tracing::info!(%upstream, %tenant, "OAuth access token renewed");
                self.keep(tenant, upstream, &renewed, actor, Some(record.updated_ms))
                    .await
            }
            Err(e @ (GrantError::RefreshRefused(_) | GrantError::NotRenewable)) => {
                tracing::warn!(%upstream, %tenant, "OAuth grant cannot be renewed: {e}; dropping it");
                self.replica
                    .write(
                        actor,
                        Command::DropOAuthGrant {
                            tenant: tenant.to_string(),
                            upstream: upstream.to_string(),
                            if_updated_ms: Some(record.updated_ms),
                        },
                    )
                    .await?;
                Err(Refusal::invalid(format!(
                    "tenant `{tenant}`'s OAuth grant of upstream `{upstream}` cannot be renewed: {e}; it was dropped; the person authorizes again with the link from `quiver ctl upstream authorize {upstream} --tenant {tenant}`"
                ))
                .into())
            }
            Err(e) => Err(AdminError::Unavailable(format!(
                "renewing tenant `{tenant}`'s OAuth token for upstream `{upstream}` failed: {e}"
            ))),
        }
    }

    fn record(&self, tenant: &str, upstream: &str) -> Option<OAuthGrantRecord> {
        let state = self.replica.shared().lock();
        state.oauth_grants.get(tenant)?.get(upstream).cloned()
    }

    /// Whether the grant `key`'s last renewal unasked failed less than
    /// [`RETRY_AFTER`] ago.
    fn resting(&self, key: &GrantKey) -> bool {
        let failed = self.failed.lock().unwrap_or_else(|p| p.into_inner());
        failed.get(key).is_some_and(|at| at.elapsed() < RETRY_AFTER)
    }

    /// Renews every access token about to expire (this node leading):
    /// those with less than half their life, or five minutes, left.
    pub(crate) async fn renew_due(&self) {
        if self.ready().is_err() {
            return;
        }
        let now = crate::command::now_ms();
        let due = due_for_renewal(&self.replica.shared().lock(), now);
        for key in due {
            if self.resting(&key) {
                continue;
            }
            let GrantKey { tenant, upstream } = &key;
            let outcome = self.renew(upstream, tenant, "oauth").await;
            if let Err(e) = &outcome {
                tracing::warn!(%upstream, %tenant, "renewing an OAuth token before it expires failed: {e}; trying again in {} s", RETRY_AFTER.as_secs());
            }
            let mut failed = self.failed.lock().unwrap_or_else(|p| p.into_inner());
            match outcome {
                Ok(_) => failed.remove(&key),
                Err(_) => failed.insert(key, std::time::Instant::now()),
            };
        }
    }
}

/// The grants whose access token should be renewed at `now_ms`.
fn due_for_renewal(state: &ControlState, now_ms: u64) -> Vec<GrantKey> {
    let mut due = Vec::new();
    for (tenant, grants) in &state.oauth_grants {
        for (upstream, record) in grants {
            let Some(expires) = record.expires_at_ms.filter(|_| record.renewable) else {
                continue;
            };
            let lifetime = expires.saturating_sub(record.updated_ms);
            let margin = (lifetime / 2).min(300_000);
            if now_ms + margin >= expires {
                due.push(GrantKey::new(tenant, upstream));
            }
        }
    }
    due
}

/// The grants kept, of `tenant` or all: never a token.
pub(crate) fn grant_list(state: &ControlState, tenant: Option<&str>) -> Vec<GrantSummary> {
    let mut list = Vec::new();
    for (t, grants) in &state.oauth_grants {
        if tenant.is_some_and(|wanted| wanted != t) {
            continue;
        }
        for (upstream, record) in grants {
            list.push(GrantSummary {
                tenant: t.clone(),
                upstream: upstream.clone(),
                scopes: record.scopes.clone(),
                expires_at_ms: record.expires_at_ms,
                renewable: record.renewable,
                granted_ms: record.granted_ms,
                updated_ms: record.updated_ms,
            });
        }
    }
    list
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(expires_at_ms: Option<u64>, updated_ms: u64, renewable: bool) -> OAuthGrantRecord {
        OAuthGrantRecord {
            sealed: SealedValue {
                nonce: String::new(),
                ciphertext: String::new(),
                key_id: String::new(),
            },
            expires_at_ms,
            scopes: vec![],
            renewable,
            granted_ms: updated_ms,
            updated_ms,
        }
    }

    #[test]
    fn a_token_is_renewed_in_the_last_half_of_its_life_or_five_minutes_and_only_if_it_can_be() {
        let mut state = ControlState::default();
        let grants = state.oauth_grants.entry("acme".into()).or_default();
        // An hour-long token: renewed from five minutes before it expires.
        grants.insert("hour".into(), record(Some(3_600_000), 0, true));
        // A twenty-second token: from ten seconds before.
        grants.insert("short".into(), record(Some(20_000), 0, true));
        grants.insert("no-refresh".into(), record(Some(20_000), 0, false));
        grants.insert("no-expiry".into(), record(None, 0, true));
        let names = |now| {
            due_for_renewal(&state, now)
                .into_iter()
                .map(|key| key.upstream)
                .collect::<Vec<_>>()
        };
        assert!(names(5_000).is_empty());
        assert_eq!(names(10_000), ["short"]);
        assert_eq!(names(3_300_000), ["hour", "short"]);
    }
}
