//! Tenants as every node sees them: who may use the gateway, which part of
//! the manifest they see, and what they may spend. The control plane
//! replicates them (API keys as SHA-256 hashes only); edges authenticate
//! against them and edges and executors derive each tenant's view from them.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{
    manifest::{ManifestServer, ManifestTool, ValidationMode},
    secret_value::constant_time_eq,
};

/// What names one OAuth grant: a tenant's authorization of an upstream.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct GrantKey {
    /// The tenant that granted.
    pub tenant: String,
    /// The upstream it granted access to.
    pub upstream: String,
}

impl GrantKey {
    /// `tenant`'s grant of `upstream`.
    pub fn new(tenant: &str, upstream: &str) -> GrantKey {
        GrantKey {
            tenant: tenant.to_string(),
            upstream: upstream.to_string(),
        }
    }
}

/// The tenant of an edge that authenticates nobody (`auth = "none"`): it sees
/// every tool.
pub const DEFAULT_TENANT: &str = "default";

/// A tenant as replicated by the control plane.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tenant {
    /// Unique id, `[a-zA-Z0-9_-]{1,64}`.
    pub id: String,
    /// What operators see; defaults to the id.
    pub display_name: String,
    /// MCP mode served at `/mcp` for this tenant (`passthrough`, `search`, `code`);
    /// `None` uses the edge's default.
    #[serde(default)]
    pub mode: Option<crate::mode::Mode>,
    /// How the tenant's call arguments are checked (`schema`, `strict`,
    /// `off`); `None` uses each server's own setting.
    #[serde(default)]
    pub validation: Option<ValidationMode>,
    /// Visible servers by glob (`github`, `db-*`). With no server globs and
    /// no tags, every server is visible.
    #[serde(default)]
    pub servers: Vec<String>,
    /// Visible tools by glob over `<server>/<tool>` (`github/list_*`); empty means
    /// every tool of a visible server.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Servers carrying any of these tags are visible too.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Tool calls per minute, all tools together.
    #[serde(default)]
    pub rate_limit_per_minute: Option<u32>,
    /// Calls per minute of each tool, by `<server>/<tool>` glob (the most
    /// specific glob wins; every tool has a bucket of its own).
    #[serde(default)]
    pub tool_rate_limits: BTreeMap<String, u32>,
    /// Spending budget in the tenant's unit.
    #[serde(default)]
    pub budget: Option<f64>,
    /// Price per call by `<server>/<tool>` glob.
    #[serde(default)]
    pub prices: BTreeMap<String, f64>,
    /// Hides tools from this tenant whose screening findings reach this
    /// severity, even where their upstream serves them (`None`: only the
    /// upstreams' own holds apply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_findings: Option<crate::finding::HoldAt>,
    /// Whether audit records keep the arguments of its calls (by default
    /// only their SHA-256).
    #[serde(default)]
    pub audit_arguments: bool,
    /// Whether the tenant may issue and revoke its own API keys (in the web
    /// console, signed in with one of its keys or tokens); operators always can.
    #[serde(default)]
    pub self_service_keys: bool,
    /// Bytes of stashed values the tenant may keep (on each executor, and
    /// across the fleet with etcd-backed stashes); `None`: the executor's
    /// default share of its capacity.
    #[serde(default)]
    pub stash_bytes: Option<u64>,
    /// Stashed keys the tenant may keep, likewise.
    #[serde(default)]
    pub stash_keys: Option<u64>,
    /// Wall time of a code-mode script that may run as a task (its client
    /// takes tasks), in milliseconds, up to the executors' own maximum for
    /// tasks; `None`: the usual wall time, as for any script.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_wall_ms: Option<u64>,
    /// API keys by key id: hashes only.
    #[serde(default)]
    pub keys: BTreeMap<String, ApiKey>,
    /// When it was created (ms since the epoch, leader's clock).
    pub created_ms: u64,
    /// When it last changed.
    pub updated_ms: u64,
}

/// What one executor holds of a tenant's stash, and the quota it applies,
/// as it reports them to the control plane.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StashUsage {
    /// Bytes of stashed values (keys and serialised values).
    pub bytes: u64,
    /// Stashed keys.
    pub keys: u64,
    /// The tenant's quota of bytes as this executor applies it.
    pub quota_bytes: u64,
    /// The tenant's quota of keys as this executor applies it.
    pub quota_keys: u64,
    /// Whether the figures are the fleet's (etcd-backed stashes) rather than
    /// this executor's own.
    #[serde(default)]
    pub fleet: bool,
}

/// One API key of a tenant: its SHA-256, never the key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiKey {
    /// Hex SHA-256 of the whole key string.
    pub sha256: String,
    /// When it was issued.
    pub created_ms: u64,
}

impl Tenant {
    /// Whether the tenant's policy shows `server` at all.
    pub fn sees_server(&self, server: &ManifestServer) -> bool {
        if self.servers.is_empty() && self.tags.is_empty() {
            return true;
        }
        self.servers.iter().any(|g| glob_match(g, &server.id))
            || server.tags.iter().any(|t| self.tags.contains(t))
    }

    /// Whether the tenant's policy shows `tool` of `server`.
    pub fn sees(&self, server: &ManifestServer, tool: &ManifestTool) -> bool {
        self.sees_server(server)
            && self.sees_tool_id(&tool.id.server, &tool.id.tool)
            && self.tolerates(&tool.findings)
    }

    /// Whether the tenant's own hold level lets a tool with `findings` through.
    pub fn tolerates(&self, findings: &[crate::finding::Finding]) -> bool {
        self.hold_findings.is_none_or(|h| !h.holds_any(findings))
    }

    /// Whether the tool globs let `server/tool` through (true without any),
    /// the server's own visibility aside.
    pub fn sees_tool_id(&self, server: &str, tool: &str) -> bool {
        if self.tools.is_empty() {
            return true;
        }
        let id = format!("{server}/{tool}");
        self.tools.iter().any(|g| glob_match(g, &id))
    }

    /// The price of one call of `server/tool`: the most specific matching
    /// glob wins (the longest pattern; ties by pattern order); 0 when none
    /// matches.
    pub fn price_of(&self, server: &str, tool: &str) -> f64 {
        most_specific(&self.prices, server, tool).map_or(0.0, |p| *p)
    }

    /// The per-minute limit of `server/tool`'s own bucket, if any glob of
    /// [`Tenant::tool_rate_limits`] matches (the most specific wins).
    pub fn tool_rate_limit(&self, server: &str, tool: &str) -> Option<u32> {
        most_specific(&self.tool_rate_limits, server, tool).copied()
    }
}

/// The value of the longest glob in `map` matching `server/tool` (ties: the
/// first in glob order).
fn most_specific<'a, V>(map: &'a BTreeMap<String, V>, server: &str, tool: &str) -> Option<&'a V> {
    let id = format!("{server}/{tool}");
    let mut best: Option<(&String, &V)> = None;
    for (glob, value) in map {
        if glob_match(glob, &id) && best.is_none_or(|(b, _)| glob.len() > b.len()) {
            best = Some((glob, value));
        }
    }
    best.map(|(_, v)| v)
}

/// Hex SHA-256 of an API key, the only form the control plane keeps.
pub fn hash_key(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// Whether `id` is a valid tenant, upstream or key id.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Shell-style glob over the whole text: `*` any run (also empty), `?` one
/// character, everything else literal.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    if pattern.is_ascii() && text.is_ascii() {
        // Ids and names are ASCII in practice: match bytes, no allocation.
        return glob_match_units(pattern.as_bytes(), text.as_bytes());
    }
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    glob_match_units(&p, &t)
}

/// The matcher over units (bytes of ASCII text, or chars): iterative, with
/// one backtrack point (the last `*`), so linear in practice and never
/// exponential.
fn glob_match_units<U: Copy + PartialEq + From<u8>>(p: &[U], t: &[U]) -> bool {
    let (star_unit, any_unit) = (U::from(b'*'), U::from(b'?'));
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == any_unit || (p[pi] != star_unit && p[pi] == t[ti])) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == star_unit {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == star_unit)
}

/// Every tenant of one control-plane state, indexed for authentication.
#[derive(Debug, Clone, Default)]
pub struct TenantDirectory {
    tenants: BTreeMap<String, Tenant>,
    /// SHA-256 of a key → (tenant id, key id).
    keys: HashMap<[u8; 32], (String, String)>,
}

/// Who an API key belongs to.
#[derive(Debug, Clone, Copy)]
pub struct KeyOwner<'a> {
    /// The tenant.
    pub tenant: &'a Tenant,
    /// The key's public id.
    pub key_id: &'a str,
}

impl TenantDirectory {
    /// The directory of `tenants` (keys whose hash is not 64 hex digits are
    /// skipped: the control plane never stores those).
    pub fn new(tenants: impl IntoIterator<Item = Tenant>) -> TenantDirectory {
        let tenants: BTreeMap<String, Tenant> =
            tenants.into_iter().map(|t| (t.id.clone(), t)).collect();
        let mut keys = HashMap::new();
        for tenant in tenants.values() {
            for (key_id, key) in &tenant.keys {
                let mut digest = [0u8; 32];
                if hex::decode_to_slice(&key.sha256, &mut digest).is_ok() {
                    keys.insert(digest, (tenant.id.clone(), key_id.clone()));
                }
            }
        }
        TenantDirectory { tenants, keys }
    }

    /// A tenant by id.
    pub fn get(&self, id: &str) -> Option<&Tenant> {
        self.tenants.get(id)
    }

    /// Every tenant, by id.
    pub fn iter(&self) -> impl Iterator<Item = &Tenant> {
        self.tenants.values()
    }

    /// Number of tenants.
    pub fn len(&self) -> usize {
        self.tenants.len()
    }

    /// True when there are no tenants.
    pub fn is_empty(&self) -> bool {
        self.tenants.is_empty()
    }

    /// The owner of a presented API key, if any tenant holds it. The key is
    /// hashed and the stored digest compared in constant time, so the time
    /// taken says nothing about how close a guess came.
    pub fn by_key(&self, presented: &str) -> Option<KeyOwner<'_>> {
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        let (stored, (tenant, key_id)) = self.keys.get_key_value(&digest)?;
        if !constant_time_eq(stored, &digest) {
            return None;
        }
        Some(KeyOwner {
            tenant: self.tenants.get(tenant)?,
            key_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_the_whole_text() {
        assert!(glob_match("github", "github"));
        assert!(!glob_match("github", "github2"));
        assert!(glob_match("db-*", "db-main"));
        assert!(glob_match("db-*", "db-"));
        assert!(!glob_match("db-*", "xdb-main"));
        assert!(glob_match("github/list_*", "github/list_issues"));
        assert!(!glob_match("github/list_*", "github/create_issue"));
        assert!(glob_match("*/*_issue?", "github/get_issues"));
        assert!(glob_match("*", ""));
        assert!(!glob_match("?", ""));
        assert!(glob_match("a*b*c", "axxbyyc"));
        assert!(!glob_match("a*b*c", "axxbyy"));
        // Beyond ASCII, `?` is one character, not one byte.
        assert!(glob_match("caf?/*", "café/menu"));
        assert!(!glob_match("caf??/*", "café/menu"));
    }

    #[test]
    fn key_hashes_are_hex_sha256() {
        assert_eq!(
            hash_key("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn the_directory_finds_a_key_by_its_hash_only() {
        let mut tenant = Tenant {
            id: "acme".into(),
            display_name: "acme".into(),
            mode: None,
            validation: None,
            servers: vec![],
            tools: vec![],
            tags: vec![],
            rate_limit_per_minute: None,
            tool_rate_limits: BTreeMap::new(),
            audit_arguments: false,
            self_service_keys: false,
            stash_bytes: None,
            stash_keys: None,
            task_wall_ms: None,
            budget: None,
            prices: BTreeMap::new(),
            keys: BTreeMap::new(),
            created_ms: 0,
            updated_ms: 0,
            hold_findings: Default::default(),
        };
        tenant.keys.insert(
            "k1".into(),
            ApiKey {
                sha256: hash_key("qk_k1_secret"),
                created_ms: 0,
            },
        );
        let directory = TenantDirectory::new([tenant]);
        let owner = directory.by_key("qk_k1_secret").expect("known key");
        assert_eq!((owner.tenant.id.as_str(), owner.key_id), ("acme", "k1"));
        assert!(directory.by_key("qk_k1_secreT").is_none());
        assert!(directory.by_key("").is_none());
    }

    #[test]
    fn the_most_specific_price_wins() {
        let mut tenant: Tenant = serde_json::from_value(serde_json::json!({
            "id": "t", "display_name": "t", "created_ms": 0, "updated_ms": 0,
            "prices": {"*": 1.0, "github/*": 2.0, "github/create_issue": 5.0}
        }))
        .unwrap();
        assert_eq!(tenant.price_of("github", "create_issue"), 5.0);
        assert_eq!(tenant.price_of("github", "list_issues"), 2.0);
        assert_eq!(tenant.price_of("weather", "forecast"), 1.0);
        tenant.prices.clear();
        assert_eq!(tenant.price_of("weather", "forecast"), 0.0);
    }
}
