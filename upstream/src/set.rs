//! All configured upstreams of a node, by id.

use std::{collections::BTreeMap, sync::Arc};

use crate::{
    config::UpstreamConfig,
    connection::{Upstream, UpstreamStatus},
    error::UpstreamError,
};

/// The upstreams a node holds connections to.
#[derive(Default)]
pub struct UpstreamSet {
    upstreams: BTreeMap<String, Arc<Upstream>>,
}

impl UpstreamSet {
    /// One [`Upstream`] per config (not yet connected).
    pub fn new(configs: impl IntoIterator<Item = UpstreamConfig>) -> UpstreamSet {
        UpstreamSet {
            upstreams: configs
                .into_iter()
                .map(|c| (c.id.clone(), Upstream::new(c)))
                .collect(),
        }
    }

    /// The upstream with this id.
    pub fn get(&self, id: &str) -> Result<&Arc<Upstream>, UpstreamError> {
        self.upstreams
            .get(id)
            .ok_or_else(|| UpstreamError::Unknown(id.to_string()))
    }

    /// All upstreams in id order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Upstream>> {
        self.upstreams.values()
    }

    /// Number of upstreams.
    pub fn len(&self) -> usize {
        self.upstreams.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.upstreams.is_empty()
    }

    /// Status of every upstream, in id order.
    pub fn statuses(&self) -> Vec<UpstreamStatus> {
        self.iter().map(|u| u.status()).collect()
    }

    /// Closes every connection.
    pub async fn shutdown(&self) {
        for upstream in self.iter() {
            upstream.shutdown().await;
        }
    }
}
