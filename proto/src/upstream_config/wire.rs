//! An upstream's configuration to and from its protobuf message
//! (`quiver.v1.Upstream`), as the control plane sends the registry to edges
//! and executors.

use super::{Transport, UpstreamConfig, UpstreamOAuth, UpstreamProtocol};
use crate::{
    finding::HoldAt,
    manifest::ValidationMode,
    pb,
    registry::{UnknownEnumValue, known},
};

/// Why a `quiver.v1.Upstream` message is not an upstream configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UpstreamMessageError {
    /// It names neither transport.
    #[error("upstream `{0}`: the message has no transport")]
    NoTransport(String),
    /// An enum value this node does not know.
    #[error("upstream `{id}`: {source}")]
    Unknown {
        /// The upstream's id.
        id: String,
        /// The field and value.
        #[source]
        source: UnknownEnumValue,
    },
}

impl UpstreamConfig {
    /// The configuration as a message.
    pub fn to_pb(&self) -> pb::Upstream {
        let transport = match &self.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => pb::upstream::Transport::Stdio(pb::StdioTransport {
                command: command.clone(),
                args: args.clone(),
                env: env.clone().into_iter().collect(),
                cwd: cwd.clone(),
            }),
            Transport::Http { url, headers } => pb::upstream::Transport::Http(pb::HttpTransport {
                url: url.clone(),
                headers: headers.clone().into_iter().collect(),
            }),
        };
        let protocol = match self.protocol {
            UpstreamProtocol::Auto => pb::UpstreamProtocol::Auto,
            UpstreamProtocol::Sessions => pb::UpstreamProtocol::Sessions,
            UpstreamProtocol::Stateless => pb::UpstreamProtocol::Stateless,
        };
        pb::Upstream {
            id: self.id.clone(),
            namespace: self.namespace.clone(),
            description: self.description.clone(),
            transport: Some(transport),
            call_timeout_ms: self.call_timeout_ms,
            connect_timeout_ms: self.connect_timeout_ms,
            refresh_interval_secs: self.refresh_interval_secs,
            validation: pb::ValidationMode::from(self.validation).into(),
            breaker_failures: self.breaker_failures,
            breaker_open_secs: self.breaker_open_secs,
            hold_findings: HoldAt::to_pb(Some(self.hold_findings)).into(),
            tags: self.tags.clone(),
            group: self.group.clone(),
            discovery_tenant: self.discovery_tenant.clone(),
            protocol: protocol.into(),
            oauth: self.oauth.as_ref().map(UpstreamOAuth::to_pb),
        }
    }

    /// The configuration a message describes (unspecified enums read as
    /// their defaults).
    pub fn from_pb(message: pb::Upstream) -> Result<UpstreamConfig, UpstreamMessageError> {
        let id = message.id;
        let unknown = |source| UpstreamMessageError::Unknown {
            id: id.clone(),
            source,
        };
        let transport = match message.transport {
            None => return Err(UpstreamMessageError::NoTransport(id)),
            Some(pb::upstream::Transport::Stdio(stdio)) => Transport::Stdio {
                command: stdio.command,
                args: stdio.args,
                env: stdio.env.into_iter().collect(),
                cwd: stdio.cwd,
            },
            Some(pb::upstream::Transport::Http(http)) => Transport::Http {
                url: http.url,
                headers: http.headers.into_iter().collect(),
            },
        };
        let validation = ValidationMode::from_pb("Upstream.validation", message.validation);
        let hold = HoldAt::from_pb("Upstream.hold_findings", message.hold_findings);
        let protocol = match known("Upstream.protocol", message.protocol).map_err(unknown)? {
            pb::UpstreamProtocol::Unspecified | pb::UpstreamProtocol::Auto => {
                UpstreamProtocol::Auto
            }
            pb::UpstreamProtocol::Sessions => UpstreamProtocol::Sessions,
            pb::UpstreamProtocol::Stateless => UpstreamProtocol::Stateless,
        };
        let oauth = (message.oauth.map(UpstreamOAuth::from_pb))
            .transpose()
            .map_err(unknown)?;
        Ok(UpstreamConfig {
            validation: validation.map_err(unknown)?.unwrap_or_default(),
            hold_findings: hold.map_err(unknown)?.unwrap_or_default(),
            protocol,
            id,
            namespace: message.namespace,
            description: message.description,
            transport,
            call_timeout_ms: message.call_timeout_ms,
            connect_timeout_ms: message.connect_timeout_ms,
            refresh_interval_secs: message.refresh_interval_secs,
            breaker_failures: message.breaker_failures,
            breaker_open_secs: message.breaker_open_secs,
            tags: message.tags,
            group: message.group,
            discovery_tenant: message.discovery_tenant,
            oauth,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn upstream(transport: Transport) -> UpstreamConfig {
        UpstreamConfig {
            id: "github".into(),
            namespace: Some(String::new()),
            description: Some("Issues and code".into()),
            transport,
            call_timeout_ms: 1_000,
            connect_timeout_ms: 2_000,
            refresh_interval_secs: 0,
            validation: ValidationMode::Strict,
            breaker_failures: 0,
            breaker_open_secs: 9,
            hold_findings: HoldAt::Never,
            tags: vec!["code".into()],
            group: "dev".into(),
            discovery_tenant: Some("acme".into()),
            protocol: UpstreamProtocol::Stateless,
            oauth: Some(UpstreamOAuth {
                grant: super::super::OAuthGrant::ClientCredentials,
                redirect_uri: "https://quiver.example/oauth/callback".into(),
                client_id: Some("quiver".into()),
                client_secret: Some("${GH_SECRET}".into()),
                client_metadata_url: Some("https://quiver.example/client.json".into()),
                scopes: vec!["repo".into(), "read:org".into()],
            }),
        }
    }

    #[test]
    fn both_transports_survive_their_message_with_every_field() {
        for transport in [
            Transport::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "server".into()],
                env: BTreeMap::from([("TOKEN".into(), "${GITHUB_TOKEN}".into())]),
                cwd: Some("/srv".into()),
            },
            Transport::Http {
                url: "https://mcp.example.com/mcp".into(),
                headers: BTreeMap::from([("Authorization".into(), "Bearer ${T}".into())]),
            },
        ] {
            let config = upstream(transport);
            assert_eq!(UpstreamConfig::from_pb(config.to_pb()), Ok(config));
        }
    }

    #[test]
    fn unspecified_settings_read_as_defaults_and_unknown_ones_are_refused() {
        let mut message = upstream(Transport::Http {
            url: "http://127.0.0.1:1/mcp".into(),
            headers: BTreeMap::new(),
        })
        .to_pb();
        message.validation = 0;
        message.hold_findings = 0;
        message.protocol = 0;
        let config = UpstreamConfig::from_pb(message.clone()).expect("defaults");
        assert_eq!(config.validation, ValidationMode::Schema);
        assert_eq!(config.hold_findings, HoldAt::High);
        assert_eq!(config.protocol, UpstreamProtocol::Auto);

        message.protocol = 9;
        let error = UpstreamConfig::from_pb(message.clone()).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("Upstream.protocol: enum value 9"),
            "{error}"
        );
        message.transport = None;
        assert_eq!(
            UpstreamConfig::from_pb(message),
            Err(UpstreamMessageError::NoTransport("github".into()))
        );
    }
}
