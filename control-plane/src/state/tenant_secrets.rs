//! Applying the secret commands: a tenant's sealed secret set or deleted.
//! The state machine never sees a plaintext or the cluster key; it checks
//! the tenant, the name and the shape of the ciphertext, and the event log
//! names the secret only.

use quiver_proto::upstream_config::valid_secret_name;

use super::{ControlState, SealedSecret};
use crate::{
    cluster_key::SealedValue,
    outcome::{Refusal, SecretChanged},
};

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
}
