//! Applying the secret commands: a tenant's sealed secret set or deleted,
//! and a tenant's OAuth grant for an upstream set, renewed or dropped (with
//! the access token it keeps as the tenant secret `oauth-<upstream>`).
//! The state machine never sees a plaintext or the cluster key; it checks
//! the tenant, the name and the shape of the ciphertext, and the event log
//! names the secret only.

use quiver_proto::upstream_config::{OAUTH_GRANT_SECRET_PREFIX, valid_secret_name};

use super::{ControlState, SealedSecret};
use crate::{
    cluster_key::SealedValue,
    command::OAuthGrantPut,
    outcome::{OAuthGrantChanged, Refusal, SecretChanged},
};

/// The refusal of a renewal's write to a grant that changed meanwhile.
fn changed_meanwhile(tenant: &str, upstream: &str) -> Refusal {
    Refusal::invalid(format!(
        "tenant `{tenant}`'s OAuth grant of upstream `{upstream}` changed while it was being renewed (granted again or dropped); the renewal is discarded"
    ))
}

/// The refusal of an operator's write to a name the control plane keeps.
fn reserved(name: &str) -> Option<Refusal> {
    name.starts_with(OAUTH_GRANT_SECRET_PREFIX).then(|| {
        Refusal::invalid(format!(
            "secret names starting with `{OAUTH_GRANT_SECRET_PREFIX}` hold OAuth access tokens the control plane keeps; `{name}` is set by `quiver ctl upstream authorize` and dropped by `quiver ctl upstream deauthorize`"
        ))
    })
}

impl ControlState {
    pub(super) fn set_secret(
        &mut self,
        tenant: &str,
        name: &str,
        sealed: &SealedValue,
        at: u64,
        actor: &str,
    ) -> Result<SecretChanged, Refusal> {
        if !self.tenants.contains_key(tenant) {
            return Err(self.unknown_tenant(tenant));
        }
        if !valid_secret_name(name) {
            return Err(Refusal::invalid(format!(
                "secret name `{name}` must be 1-64 characters of a-z, A-Z, 0-9, _ and -"
            )));
        }
        if let Some(refusal) = reserved(name) {
            return Err(refusal);
        }
        sealed
            .check_shape()
            .map_err(|e| Refusal::invalid(format!("sealed secret `{name}`: {e}")))?;
        let replaced = self
            .secrets
            .entry(tenant.to_string())
            .or_default()
            .insert(
                name.to_string(),
                SealedSecret {
                    sealed: sealed.clone(),
                    updated_ms: at,
                },
            )
            .is_some();
        let verb = if replaced { "replaced" } else { "set" };
        self.log_admin(
            at,
            actor,
            None,
            format!("secret `{name}` of tenant `{tenant}` {verb}"),
        );
        Ok(SecretChanged {
            tenant: tenant.to_string(),
            name: name.to_string(),
        })
    }

    pub(super) fn delete_secret(
        &mut self,
        tenant: &str,
        name: &str,
        at: u64,
        actor: &str,
    ) -> Result<SecretChanged, Refusal> {
        if !self.tenants.contains_key(tenant) {
            return Err(self.unknown_tenant(tenant));
        }
        if let Some(refusal) = reserved(name) {
            return Err(refusal);
        }
        let Some(secrets) = self.secrets.get_mut(tenant) else {
            return Err(Refusal::not_found(format!(
                "tenant `{tenant}` has no secrets"
            )));
        };
        if secrets.remove(name).is_none() {
            let names: Vec<&str> = secrets.keys().map(String::as_str).collect();
            return Err(Refusal::not_found(format!(
                "tenant `{tenant}` has no secret `{name}`; its secrets: {}",
                names.join(", ")
            )));
        }
        if secrets.is_empty() {
            self.secrets.remove(tenant);
        }
        self.log_admin(
            at,
            actor,
            None,
            format!("secret `{name}` of tenant `{tenant}` deleted"),
        );
        Ok(SecretChanged {
            tenant: tenant.to_string(),
            name: name.to_string(),
        })
    }
}

impl ControlState {
    pub(super) fn put_oauth_grant(
        &mut self,
        put: &OAuthGrantPut,
        at: u64,
        actor: &str,
    ) -> Result<OAuthGrantChanged, Refusal> {
        let OAuthGrantPut {
            tenant,
            upstream,
            record,
            access,
            replaces,
        } = put;
        if !self.tenants.contains_key(tenant) {
            return Err(self.unknown_tenant(tenant));
        }
        let Some(name) = self
            .upstreams
            .get(upstream)
            .map(|u| u.config.oauth_grant_secret())
        else {
            return Err(self.unknown_upstream(upstream));
        };
        let Some(name) = name else {
            return Err(Refusal::invalid(format!(
                "upstream `{upstream}` takes no person's OAuth grant (its `oauth` settings are absent or a service account's)"
            )));
        };
        for sealed in [&record.sealed, access] {
            sealed
                .check_shape()
                .map_err(|e| Refusal::invalid(format!("sealed OAuth grant: {e}")))?;
        }
        let grants = self.oauth_grants.entry(tenant.clone()).or_default();
        let current = grants.get(upstream).map(|b| b.updated_ms);
        if replaces.is_some() && *replaces != current {
            return Err(changed_meanwhile(tenant, upstream));
        }
        let mut record = record.clone();
        let before = grants.get(upstream).map(|b| b.granted_ms);
        record.granted_ms = before.unwrap_or(at);
        record.updated_ms = at;
        grants.insert(upstream.clone(), record);
        self.secrets.entry(tenant.clone()).or_default().insert(
            name,
            SealedSecret {
                sealed: access.clone(),
                updated_ms: at,
            },
        );
        // A renewal every hour per tenant would flood the event log.
        if before.is_none() {
            self.log_admin(
                at,
                actor,
                Some(upstream),
                format!("OAuth grant of tenant `{tenant}` granted"),
            );
        }
        Ok(OAuthGrantChanged {
            tenant: tenant.clone(),
            upstream: upstream.clone(),
        })
    }

    pub(super) fn drop_oauth_grant(
        &mut self,
        (tenant, upstream): (&str, &str),
        if_updated_ms: Option<u64>,
        at: u64,
        actor: &str,
    ) -> Result<OAuthGrantChanged, Refusal> {
        if !self.tenants.contains_key(tenant) {
            return Err(self.unknown_tenant(tenant));
        }
        let current = (self.oauth_grants.get(tenant))
            .and_then(|grants| grants.get(upstream))
            .map(|g| g.updated_ms);
        if if_updated_ms.is_some() && if_updated_ms != current {
            return Err(changed_meanwhile(tenant, upstream));
        }
        let dropped = self
            .oauth_grants
            .get_mut(tenant)
            .and_then(|grants| grants.remove(upstream));
        if dropped.is_none() {
            return Err(Refusal::not_found(format!(
                "tenant `{tenant}` holds no OAuth grant for upstream `{upstream}`"
            )));
        }
        self.forget_grant(tenant, upstream);
        self.log_admin(
            at,
            actor,
            Some(upstream),
            format!("OAuth grant of tenant `{tenant}` dropped"),
        );
        Ok(OAuthGrantChanged {
            tenant: tenant.to_string(),
            upstream: upstream.to_string(),
        })
    }

    /// Drops every tenant's grant for `upstream` (removed, or no longer
    /// taking a person's grant).
    pub(super) fn drop_grants_of(&mut self, upstream: &str) {
        let tenants: Vec<String> = self
            .oauth_grants
            .iter()
            .filter(|(_, grants)| grants.contains_key(upstream))
            .map(|(tenant, _)| tenant.clone())
            .collect();
        for tenant in tenants {
            if let Some(grants) = self.oauth_grants.get_mut(&tenant) {
                grants.remove(upstream);
            }
            self.forget_grant(&tenant, upstream);
        }
    }

    /// Removes what is left of `tenant`'s grant for `upstream`: its access
    /// token, and empty maps.
    fn forget_grant(&mut self, tenant: &str, upstream: &str) {
        if self.oauth_grants.get(tenant).is_some_and(|g| g.is_empty()) {
            self.oauth_grants.remove(tenant);
        }
        let name = format!("{OAUTH_GRANT_SECRET_PREFIX}{upstream}");
        if let Some(secrets) = self.secrets.get_mut(tenant) {
            secrets.remove(&name);
            if secrets.is_empty() {
                self.secrets.remove(tenant);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{
        cluster_key::SealedValue,
        command::{COMMAND_FORMAT, Command, Envelope},
        outcome::{Outcome, RefusalCode},
        state::ControlState,
        tenant::TenantPatch,
    };

    fn apply(state: &mut ControlState, command: Command) -> Outcome {
        state.apply(&Envelope {
            format: COMMAND_FORMAT,
            at_ms: 1000,
            actor: "test".into(),
            command,
        })
    }

    /// A sealed value of the right shape (the state machine never opens it).
    fn sealed() -> SealedValue {
        SealedValue {
            nonce: "AAAAAAAAAAAAAAAA".into(),
            ciphertext: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==".into(),
            key_id: "k".into(),
        }
    }

    fn set(tenant: &str, name: &str) -> Command {
        Command::SetSecret {
            tenant: tenant.into(),
            name: name.into(),
            sealed: sealed(),
        }
    }

    fn with_tenant(id: &str) -> ControlState {
        let mut state = ControlState::default();
        let created = apply(
            &mut state,
            Command::CreateTenant {
                id: id.into(),
                patch: TenantPatch::default(),
            },
        );
        assert!(matches!(created, Outcome::Applied { .. }), "{created:?}");
        state
    }

    #[test]
    fn secrets_belong_to_existing_tenants_and_go_with_them() {
        let mut state = with_tenant("acme");
        assert!(matches!(
            apply(&mut state, set("ghost", "API_TOKEN")),
            Outcome::Refused {
                code: RefusalCode::NotFound,
                ..
            }
        ));
        assert!(matches!(
            apply(&mut state, set("acme", "API_TOKEN")),
            Outcome::Applied { .. }
        ));
        assert_eq!(state.secrets["acme"]["API_TOKEN"].updated_ms, 1000);
        let logged = state.events.back().map(|e| e.message.clone());
        assert_eq!(
            logged.as_deref(),
            Some("secret `API_TOKEN` of tenant `acme` set")
        );
        // A snapshot keeps them.
        let restored: ControlState =
            serde_json::from_slice(&serde_json::to_vec(&state).unwrap()).unwrap();
        assert_eq!(restored.secrets, state.secrets);
        // Deleting the tenant deletes its secrets; a new tenant of that id has none.
        apply(&mut state, Command::DeleteTenant { id: "acme".into() });
        assert!(state.secrets.is_empty());
        let mut state = with_tenant("acme");
        assert!(state.secrets.is_empty());
        let Outcome::Refused { code, message } = apply(
            &mut state,
            Command::DeleteSecret {
                tenant: "acme".into(),
                name: "API_TOKEN".into(),
            },
        ) else {
            panic!("deleting a secret that is not there must be refused");
        };
        assert_eq!(code, RefusalCode::NotFound, "{message}");
    }

    #[test]
    fn malformed_names_and_ciphertexts_are_refused_and_change_nothing() {
        let mut state = with_tenant("acme");
        let before = serde_json::to_string(&state).unwrap();
        let bad_name = apply(&mut state, set("acme", "API TOKEN"));
        assert!(matches!(
            bad_name,
            Outcome::Refused {
                code: RefusalCode::Invalid,
                ..
            }
        ));
        let short = Command::SetSecret {
            tenant: "acme".into(),
            name: "API_TOKEN".into(),
            sealed: SealedValue {
                ciphertext: "AAAA".into(),
                ..sealed()
            },
        };
        assert!(matches!(
            apply(&mut state, short),
            Outcome::Refused {
                code: RefusalCode::Invalid,
                ..
            }
        ));
        assert_eq!(serde_json::to_string(&state).unwrap(), before);
    }

    fn put_grant(tenant: &str, upstream: &str) -> Command {
        Command::PutOAuthGrant {
            grant: Box::new(crate::command::OAuthGrantPut {
                tenant: tenant.into(),
                upstream: upstream.into(),
                record: crate::state::OAuthGrantRecord {
                    sealed: sealed(),
                    expires_at_ms: Some(5000),
                    scopes: vec!["read".into()],
                    renewable: true,
                    granted_ms: 0,
                    updated_ms: 0,
                },
                access: sealed(),
                replaces: None,
            }),
        }
    }

    fn add_upstream(
        state: &mut ControlState,
        id: &str,
        grant: quiver_proto::upstream_config::OAuthGrant,
    ) {
        let mut config =
            quiver_proto::upstream_config::UpstreamConfig::http(id, "https://t.example/mcp");
        config.oauth = Some(quiver_proto::upstream_config::UpstreamOAuth {
            grant,
            redirect_uri: "https://q.example/oauth/callback".into(),
            client_id: Some("quiver".into()),
            client_secret: Some("${SECRET}".into()),
            client_metadata_url: None,
            scopes: vec![],
        });
        let put = apply(
            state,
            Command::PutUpstream {
                upstream: config,
                quarantine: false,
                replace: true,
            },
        );
        assert!(matches!(put, Outcome::Applied { .. }), "{put:?}");
    }

    #[test]
    fn a_grant_keeps_its_token_as_a_reserved_secret_and_goes_with_its_upstream_or_tenant() {
        use quiver_proto::upstream_config::OAuthGrant;
        let mut state = with_tenant("acme");
        add_upstream(&mut state, "tracker", OAuthGrant::AuthorizationCode);
        add_upstream(&mut state, "robot", OAuthGrant::ClientCredentials);
        // A service account takes no person's grant.
        assert!(matches!(
            apply(&mut state, put_grant("acme", "robot")),
            Outcome::Refused {
                code: RefusalCode::Invalid,
                ..
            }
        ));
        assert!(matches!(
            apply(&mut state, put_grant("acme", "tracker")),
            Outcome::Applied { .. }
        ));
        assert_eq!(state.oauth_grants["acme"]["tracker"].granted_ms, 1000);
        assert!(state.secrets["acme"].contains_key("oauth-tracker"));
        // Operators can neither set nor delete the token as a secret.
        for command in [
            set("acme", "oauth-tracker"),
            Command::DeleteSecret {
                tenant: "acme".into(),
                name: "oauth-tracker".into(),
            },
        ] {
            let Outcome::Refused { message, .. } = apply(&mut state, command) else {
                panic!("a reserved name is refused");
            };
            assert!(
                message.contains("quiver ctl upstream authorize"),
                "{message}"
            );
        }
        // Settings that no longer take a person's grant drop it.
        add_upstream(&mut state, "tracker", OAuthGrant::ClientCredentials);
        assert!(state.oauth_grants.is_empty() && state.secrets.is_empty());
        add_upstream(&mut state, "tracker", OAuthGrant::AuthorizationCode);
        apply(&mut state, put_grant("acme", "tracker"));
        apply(
            &mut state,
            Command::RemoveUpstream {
                id: "tracker".into(),
            },
        );
        assert!(state.oauth_grants.is_empty() && state.secrets.is_empty());
        // A renewal of a grant that changed meanwhile is discarded; so is
        // the drop of a renewal that failed.
        add_upstream(&mut state, "tracker", OAuthGrant::AuthorizationCode);
        apply(&mut state, put_grant("acme", "tracker"));
        let updated = state.oauth_grants["acme"]["tracker"].updated_ms;
        let Command::PutOAuthGrant { mut grant } = put_grant("acme", "tracker") else {
            unreachable!()
        };
        grant.replaces = Some(updated - 1);
        let stale = apply(&mut state, Command::PutOAuthGrant { grant });
        assert!(matches!(stale, Outcome::Refused { .. }), "{stale:?}");
        let stale_drop = Command::DropOAuthGrant {
            tenant: "acme".into(),
            upstream: "tracker".into(),
            if_updated_ms: Some(updated - 1),
        };
        assert!(matches!(
            apply(&mut state, stale_drop),
            Outcome::Refused { .. }
        ));
        assert!(state.oauth_grants["acme"].contains_key("tracker"));
        // Another URL voids tokens granted for the old one.
        let mut moved = state.upstreams["tracker"].config.clone();
        moved.transport = quiver_proto::upstream_config::UpstreamConfig::http(
            "tracker",
            "https://elsewhere.example/mcp",
        )
        .transport;
        let put = Command::PutUpstream {
            upstream: moved,
            quarantine: false,
            replace: true,
        };
        assert!(matches!(apply(&mut state, put), Outcome::Applied { .. }));
        assert!(state.oauth_grants.is_empty() && state.secrets.is_empty());
        // A snapshot keeps grants; deleting the tenant drops them.
        add_upstream(&mut state, "tracker", OAuthGrant::AuthorizationCode);
        apply(&mut state, put_grant("acme", "tracker"));
        let restored: ControlState =
            serde_json::from_slice(&serde_json::to_vec(&state).unwrap()).unwrap();
        assert_eq!(restored.oauth_grants, state.oauth_grants);
        apply(&mut state, Command::DeleteTenant { id: "acme".into() });
        assert!(state.oauth_grants.is_empty() && state.secrets.is_empty());
    }
}
