//! All upstreams of a node, by id. The set can change while calls are in flight
//! ([`UpstreamSet::reconcile`]): a call holds its own `Arc<Upstream>`.

use std::{
    collections::BTreeMap,
    sync::{Arc, RwLock},
};

use crate::{
    config::UpstreamConfig, error::UpstreamError, status::UpstreamStatus, upstream::Upstream,
};

/// The upstreams a node holds connections to.
#[derive(Default)]
pub struct UpstreamSet {
    upstreams: RwLock<BTreeMap<String, Arc<Upstream>>>,
}

impl UpstreamSet {
    /// One [`Upstream`] per config (not yet connected).
    pub fn new(configs: impl IntoIterator<Item = UpstreamConfig>) -> UpstreamSet {
        UpstreamSet {
            upstreams: RwLock::new(
                configs
                    .into_iter()
                    .map(|c| (c.id.clone(), Upstream::new(c)))
                    .collect(),
            ),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Arc<Upstream>>> {
        self.upstreams.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The upstream with this id.
    pub fn get(&self, id: &str) -> Result<Arc<Upstream>, UpstreamError> {
        self.read()
            .get(id)
            .cloned()
            .ok_or_else(|| UpstreamError::Unknown(id.to_string()))
    }

    /// Whether an upstream with this id is in the set.
    pub fn contains(&self, id: &str) -> bool {
        self.read().contains_key(id)
    }

    /// All upstreams in id order.
    pub fn all(&self) -> Vec<Arc<Upstream>> {
        self.read().values().cloned().collect()
    }

    /// All ids in order.
    pub fn ids(&self) -> Vec<String> {
        self.read().keys().cloned().collect()
    }

    /// Status of every upstream, in id order.
    pub fn statuses(&self) -> Vec<UpstreamStatus> {
        self.all().iter().map(|u| u.status()).collect()
    }

    /// Makes the set exactly `configs`. Returns the upstreams taken out (removed,
    /// or replaced because their settings changed) for the caller to shut down;
    /// new and replaced ones connect on first use.
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
        for (id, config) in wanted {
            upstreams.entry(id).or_insert_with(|| Upstream::new(config));
        }
        out
    }

    /// Closes every connection.
    pub async fn shutdown(&self) {
        for upstream in self.all() {
            upstream.shutdown().await;
        }
    }
}
