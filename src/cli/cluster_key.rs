//! The cluster-key setting of the roles that seal or open tenant secrets
//! (`quiver control-plane`, `quiver executor`, `quiver dev`): a file named by
//! `--cluster-key-file` / `QUIVER_CLUSTER_KEY_FILE`, or the key itself in
//! `QUIVER_CLUSTER_KEY`. It never prints the key.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use anyhow::Context as _;
use clap::Args;
use quiver_control_plane::cluster_key::{CLUSTER_KEY_ENV, ClusterKey, DEV_CLUSTER_KEY_FILE};

/// `--cluster-key-file`.
#[derive(Args, Debug, Clone)]
pub struct ClusterKeyArgs {
    /// File holding the cluster key that seals tenant secrets (32 random
    /// bytes, base64: `head -c 32 /dev/urandom | base64 > cluster.key`); give
    /// every control-plane node and executor the same one. Or set
    /// QUIVER_CLUSTER_KEY to the key itself.
    #[arg(long, env = "QUIVER_CLUSTER_KEY_FILE")]
    cluster_key_file: Option<PathBuf>,
}

/// Where a key came from, so a child process can be given the same.
pub enum KeyOrigin {
    /// A file.
    File(PathBuf),
    /// [`CLUSTER_KEY_ENV`], which a child inherits.
    Environment,
}

impl ClusterKeyArgs {
    /// The key given, if any (a role without one answers per-tenant calls,
    /// or `secret set`, with the fix).
    pub fn load(&self) -> anyhow::Result<Option<Arc<ClusterKey>>> {
        let key = ClusterKey::from_settings(self.cluster_key_file.as_deref())
            .context("the cluster key")?;
        if let Some(key) = &key {
            tracing::info!(key = key.id(), "cluster key loaded");
        }
        Ok(key.map(Arc::new))
    }

    /// The key given, or else `data/cluster.key`, made (mode 0600) on the
    /// first start and reused after: `quiver dev` always has one.
    pub fn load_or_create_in(&self, data: &Path) -> anyhow::Result<(Arc<ClusterKey>, KeyOrigin)> {
        if let Some(key) = self.load()? {
            let origin = match &self.cluster_key_file {
                Some(path) => KeyOrigin::File(path.clone()),
                None => KeyOrigin::Environment,
            };
            return Ok((key, origin));
        }
        std::fs::create_dir_all(data)
            .with_context(|| format!("creating the data directory {}", data.display()))?;
        let path = data.join(DEV_CLUSTER_KEY_FILE);
        let key = ClusterKey::load_or_create(&path).with_context(|| {
            format!("the cluster key (or give one with --cluster-key-file or {CLUSTER_KEY_ENV})")
        })?;
        tracing::info!(key = key.id(), file = %path.display(), "cluster key loaded");
        Ok((Arc::new(key), KeyOrigin::File(path)))
    }
}
