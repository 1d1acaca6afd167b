//! The one way a call is prepared: a tool already found in a view, its
//! arguments checked against the tool's schema, turned into the [`ToolCall`]
//! an executor dispatches. The edge's modes, a script's host and the
//! executor's gRPC service all go through [`ToolView::prepare_call`].

use serde_json::{Map, Value};

use crate::{ToolView, ViewTool, argument_check::ArgumentErrors, search_telemetry};

/// Who made a call and through what, for the audit record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallOrigin {
    /// The key id or token subject (`key:…`, `token:…@issuer`, `anonymous`).
    pub caller: String,
    /// The edge that took the request.
    pub edge: String,
    /// Hex SHA-256 of the script that made the call, when a script did.
    pub script_sha256: Option<String>,
    /// The OAuth access token the caller presented to the edge (none for an
    /// API key): what an upstream that acts on behalf of the caller takes an
    /// exchange of (RFC 8693). Never in an audit record or a log (its
    /// `Debug` shows nothing).
    pub subject_token: Option<quiver_proto::secret_value::SecretValue>,
    /// Made by an MCP App's view (its call named the tool as its server
    /// does): the executor checks it against the tools apps may call.
    pub from_app: bool,
}

/// One tool call, checked against the caller's view and the tool's schema.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// Tenant the call is made for (for audit and the executor's own policy check).
    pub tenant: String,
    /// Who made it (empty until the edge or the script host fills it in).
    pub origin: CallOrigin,
    /// Upstream id.
    pub server: String,
    /// Tool name on that upstream.
    pub tool: String,
    /// Arguments (an object; absent arguments are sent as `{}`).
    pub arguments: Option<Map<String, Value>>,
}

impl ToolView {
    /// Checks `arguments` against `tool`'s schema, at the validation level of
    /// the view's tenant or else of its server, and builds the call `tenant`
    /// makes. `null` means the
    /// caller sent no arguments: they are checked as `{}` and stay absent.
    pub fn prepare_call(
        &self,
        tenant: &str,
        tool: ViewTool<'_>,
        arguments: &Value,
    ) -> Result<ToolCall, ArgumentErrors> {
        let absent = arguments.is_null();
        let empty = Value::Object(Map::new());
        let checked = if absent { &empty } else { arguments };
        self.index()
            .check(tool.manifest_index)
            .check(checked, self.validation_of(tool.server))?;
        // Whatever search returned it, it is now called.
        search_telemetry::called(tool);
        Ok(ToolCall {
            tenant: tenant.to_string(),
            origin: CallOrigin::default(),
            server: tool.tool.id.server.clone(),
            tool: tool.tool.id.tool.clone(),
            arguments: if absent {
                None
            } else {
                arguments.as_object().cloned()
            },
        })
    }
}
