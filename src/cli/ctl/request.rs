//! What a `quiver ctl` command asks the control plane: the admin request
//! built from its arguments, with the upstream and tenant flags checked here
//! so a mistake is named before anything is sent.

use std::collections::BTreeMap;

use anyhow::Context as _;
use quiver_control_plane::{
    admin::{AdminRequest, KeyRequester},
    audit_log::{AuditQuery, AuditRetention},
    tenant::TenantPatch,
};
use quiver_proto::manifest::ValidationMode;
use quiver_upstream::{Transport, UpstreamConfig};

use super::{
    args::{
        AuditArgs, ClusterCommand, CtlCommand, KeyCommand, ManifestCommand, SecretCommand,
        TenantCommand, TenantFlags, UpstreamAddArgs, UpstreamCommand,
    },
    secret_input,
};

/// The admin request a command stands for.
pub(crate) fn request_of(command: CtlCommand) -> anyhow::Result<AdminRequest> {
    Ok(match command {
        CtlCommand::Cluster(c) => match c {
            ClusterCommand::Init => AdminRequest::ClusterInit,
            ClusterCommand::Status | ClusterCommand::Members => AdminRequest::ClusterStatus,
            ClusterCommand::AddLearner { node_id, addr } => {
                AdminRequest::AddLearner { node_id, addr }
            }
            ClusterCommand::Promote { node_id } => AdminRequest::Promote { node_id },
            ClusterCommand::Remove { node_id } => AdminRequest::Remove { node_id },
            ClusterCommand::TransferLeader { node_id } => AdminRequest::TransferLeader { node_id },
            ClusterCommand::Verify => AdminRequest::Verify,
        },
        CtlCommand::Upstream(c) => match c {
            UpstreamCommand::Add(add) => {
                let quarantine = add.quarantine;
                let replace = add.replace;
                AdminRequest::UpstreamAdd {
                    upstream: upstream_of(*add)?,
                    quarantine,
                    replace,
                }
            }
            UpstreamCommand::List => AdminRequest::UpstreamList,
            UpstreamCommand::Show { id } => AdminRequest::UpstreamShow { id },
            UpstreamCommand::Remove { id } => AdminRequest::UpstreamRemove { id },
            UpstreamCommand::Refresh { id } => AdminRequest::UpstreamRefresh { id },
            UpstreamCommand::Rescreen { id } => AdminRequest::UpstreamRescreen { id },
            UpstreamCommand::Drift { id } => AdminRequest::UpstreamDrift { id },
            UpstreamCommand::Findings { id } => AdminRequest::UpstreamFindings { id },
            UpstreamCommand::Approve { id, tool } => AdminRequest::UpstreamApprove { id, tool },
            UpstreamCommand::Authorize { id, tenant, scopes } => AdminRequest::UpstreamAuthorize {
                upstream: id,
                tenant,
                scopes,
            },
            UpstreamCommand::Deauthorize { id, tenant } => AdminRequest::UpstreamDeauthorize {
                upstream: id,
                tenant,
            },
            UpstreamCommand::Grants { tenant } => AdminRequest::GrantList { tenant },
        },
        CtlCommand::Tenant(c) => match *c {
            TenantCommand::Create { id, patch } => AdminRequest::TenantCreate {
                id,
                patch: patch_of(patch)?,
            },
            TenantCommand::List => AdminRequest::TenantList,
            TenantCommand::Show { id } => AdminRequest::TenantShow { id },
            TenantCommand::Update { id, patch } => AdminRequest::TenantUpdate {
                id,
                patch: patch_of(patch)?,
            },
            TenantCommand::Delete { id } => AdminRequest::TenantDelete { id },
            TenantCommand::Usage { id } => AdminRequest::TenantUsage { id },
        },
        CtlCommand::Key(c) => match c {
            KeyCommand::Issue { tenant } => AdminRequest::KeyIssue {
                tenant,
                requester: KeyRequester::Operator,
            },
            KeyCommand::Revoke { tenant, key_id } => AdminRequest::KeyRevoke {
                tenant,
                key_id,
                requester: KeyRequester::Operator,
            },
        },
        CtlCommand::Secret(c) => match c {
            SecretCommand::Set { tenant, name } => {
                if !quiver_upstream::valid_secret_name(&name) {
                    anyhow::bail!(
                        "secret name `{name}` must be 1-64 characters of a-z, A-Z, 0-9, _ and -"
                    );
                }
                let value = secret_input::read_from_stdin(&tenant, &name)?;
                AdminRequest::SecretSet {
                    tenant,
                    name,
                    value,
                }
            }
            SecretCommand::List { tenant } => AdminRequest::SecretList { tenant },
            SecretCommand::Delete { tenant, name } => AdminRequest::SecretDelete { tenant, name },
        },
        CtlCommand::Search(_) => anyhow::bail!("`ctl search` asks an edge, not the control plane"),
        CtlCommand::Snapshot(_) => anyhow::bail!("`ctl snapshot` is no admin request"),
        CtlCommand::Audit(args) => audit_request(args)?,
        CtlCommand::Manifest(c) => match c {
            ManifestCommand::Show { version } => AdminRequest::ManifestShow { version },
            ManifestCommand::Diff { from, to } => AdminRequest::ManifestDiff { from, to },
            ManifestCommand::Hash => AdminRequest::ManifestHash,
        },
    })
}

fn pairs(items: &[String], what: &str) -> anyhow::Result<BTreeMap<String, String>> {
    items
        .iter()
        .map(|item| {
            item.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.to_string()))
                .with_context(|| format!("{what} `{item}` must be KEY=VALUE"))
        })
        .collect()
}

fn upstream_of(add: UpstreamAddArgs) -> anyhow::Result<UpstreamConfig> {
    if let Some(path) = &add.file {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let upstream: UpstreamConfig = toml::from_str(&text)
            .with_context(|| format!("{}: not a valid upstream", path.display()))?;
        upstream
            .validate()
            .with_context(|| format!("{}: invalid upstream", path.display()))?;
        return Ok(upstream);
    }
    let id = add.id.context(
        "give the upstream an id: `quiver ctl upstream add ID --command …` or `--url …`",
    )?;
    let mut upstream = match (&add.command, &add.url) {
        (Some(command), None) => {
            let mut u = UpstreamConfig::stdio(id, command.clone(), add.args.clone());
            if let Transport::Stdio { env, .. } = &mut u.transport {
                *env = pairs(&add.env, "--env")?;
            }
            u
        }
        (None, Some(url)) => {
            let mut u = UpstreamConfig::http(id, url.clone());
            if let Transport::Http { headers, .. } = &mut u.transport {
                *headers = pairs(&add.headers, "--header")?;
            }
            u
        }
        _ => anyhow::bail!(
            "give exactly one of --command (stdio) or --url (Streamable HTTP), or --file"
        ),
    };
    upstream.namespace = add.namespace;
    upstream.description = add.description;
    upstream.tags = add.tags;
    upstream.group = add.group.unwrap_or_default();
    if let Some(v) = &add.validation {
        upstream.validation = match v.as_str() {
            "schema" => ValidationMode::Schema,
            "strict" => ValidationMode::Strict,
            "off" => ValidationMode::Off,
            other => anyhow::bail!("--validation `{other}`: use schema, strict or off"),
        };
    }
    if let Some(hold) = &add.hold_findings {
        upstream.hold_findings = quiver_proto::finding::HoldAt::parse(hold)
            .map_err(|e| anyhow::anyhow!("--hold-findings {e}"))?;
    }
    let flags = add.oauth;
    let grant = if flags.client_credentials {
        quiver_upstream::OAuthGrant::ClientCredentials
    } else if flags.token_exchange {
        quiver_upstream::OAuthGrant::TokenExchange
    } else {
        quiver_upstream::OAuthGrant::AuthorizationCode
    };
    let given = flags.client_id.is_some()
        || flags.client_metadata_url.is_some()
        || !flags.scopes.is_empty();
    let without_person = flags.client_credentials || flags.token_exchange;
    upstream.oauth = match (flags.redirect_uri, without_person) {
        (None, false) if given => anyhow::bail!(
            "the --oauth-* settings need --oauth CALLBACK (a person grants access), --oauth-client-credentials (a service account) or --oauth-token-exchange (on behalf of each caller)"
        ),
        (None, false) => None,
        (redirect_uri, _) => Some(quiver_upstream::UpstreamOAuth {
            grant,
            redirect_uri: redirect_uri.unwrap_or_default(),
            client_id: flags.client_id,
            client_secret: flags.client_secret,
            client_metadata_url: flags.client_metadata_url,
            scopes: flags.scopes,
        }),
    };
    upstream.validate()?;
    Ok(upstream)
}

fn audit_request(args: AuditArgs) -> anyhow::Result<AdminRequest> {
    if args.retention {
        let set = match (args.set_days, args.set_max_records) {
            (None, None) => None,
            (days, records) => {
                let current = AuditRetention::default();
                Some(AuditRetention {
                    max_age_days: days.unwrap_or(current.max_age_days),
                    max_records: records.unwrap_or(current.max_records),
                })
            }
        };
        return Ok(AdminRequest::AuditRetention { set });
    }
    let since_ms = args.since.as_deref().map(since_ms).transpose()?;
    Ok(AdminRequest::Audit {
        query: AuditQuery {
            tenant: args.tenant,
            since_ms,
            limit: Some(args.limit),
        },
    })
}

/// `--since`: a duration back from now (`90s`, `15m`, `2h`, `7d`), an RFC
/// 3339 time, or ms since the epoch.
fn since_ms(text: &str) -> anyhow::Result<u64> {
    let ms_of = |at: std::time::SystemTime| {
        at.duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    };
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return text
            .parse()
            .map_err(|e| anyhow::anyhow!("--since `{text}`: {e}"));
    }
    if let Ok(ago) = humantime::parse_duration(text) {
        return Ok(ms_of(std::time::SystemTime::now())
            .saturating_sub(u64::try_from(ago.as_millis()).unwrap_or(u64::MAX)));
    }
    if let Ok(at) = humantime::parse_rfc3339_weak(text) {
        return Ok(ms_of(at));
    }
    anyhow::bail!(
        "--since `{text}`: expected a duration such as 90s, 15m, 2h or 7d, a time such as 2026-11-28T10:00:00Z, or ms since the epoch"
    )
}

fn patch_of(flags: TenantFlags) -> anyhow::Result<TenantPatch> {
    let prices = if flags.prices.is_empty() {
        None
    } else {
        let mut prices = BTreeMap::new();
        for (glob, price) in pairs(&flags.prices, "--price")? {
            let price: f64 = price
                .parse()
                .with_context(|| format!("--price `{glob}={price}`: the price must be a number"))?;
            prices.insert(glob, price);
        }
        Some(prices)
    };
    let tool_rate_limits = if flags.tool_rate_limits.is_empty() {
        None
    } else {
        let mut limits = BTreeMap::new();
        for (glob, limit) in pairs(&flags.tool_rate_limits, "--tool-rate-limit")? {
            let limit: u32 = limit.parse().with_context(|| {
                format!("--tool-rate-limit `{glob}={limit}`: the limit must be calls per minute (0 removes it)")
            })?;
            limits.insert(glob, limit);
        }
        Some(limits)
    };
    let list = |v: Vec<String>| (!v.is_empty()).then_some(v);
    let patch = TenantPatch {
        display_name: flags.display_name,
        mode: flags.mode,
        servers: list(flags.servers),
        tools: list(flags.tools),
        tags: list(flags.tags),
        rate_limit_per_minute: flags.rate_limit,
        tool_rate_limits,
        audit_arguments: flags.audit_arguments,
        self_service_keys: flags.self_service_keys,
        validation: flags.validation,
        hold_findings: flags.hold_findings,
        stash_bytes: flags.stash_bytes,
        stash_keys: flags.stash_keys,
        task_wall_ms: flags.task_wall,
        budget: flags.budget,
        prices,
    };
    patch.validate()?;
    Ok(patch)
}
