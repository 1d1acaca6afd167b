//! One MCP session: the rmcp server handler that answers `initialize`,
//! `tools/list` and `tools/call` for a mode, over the gateway's current view.
#![allow(deprecated)] // logging is current in the protocol versions served here

use std::{borrow::Cow, sync::Arc};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult, PaginatedRequestParams,
        ProtocolVersion, ServerCapabilities, ServerConfig, SetLevelRequestParams,
    },
    service::{NotificationContext, RequestContext},
};

use crate::{
    gateway::Gateway,
    mode::Mode,
    modes::{code, passthrough, search},
    suggest::{closest, unknown_tool_message},
};

/// The protocol versions the edge speaks (sessions, SSE, server-to-client requests).
pub const SUPPORTED_VERSIONS: &[ProtocolVersion] = &[
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2024_11_05,
];

/// The handler of one MCP session in one mode.
#[derive(Clone)]
pub struct GatewaySession {
    gateway: Arc<Gateway>,
    mode: Mode,
}

impl GatewaySession {
    pub(crate) fn new(gateway: Arc<Gateway>, mode: Mode) -> GatewaySession {
        GatewaySession { gateway, mode }
    }

    /// The session's mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }
}

impl ServerHandler for GatewaySession {
    fn get_info(&self) -> ServerConfig {
        let view = self.gateway.view();
        let mut capabilities = ServerCapabilities::builder().enable_tools().enable_logging().build();
        if self.mode == Mode::Passthrough {
            if let Some(tools) = capabilities.tools.as_mut() {
                tools.list_changed = Some(true);
            }
        }
        let instructions = match self.mode {
            Mode::Passthrough => passthrough::instructions(&view),
            Mode::Search => search::instructions(),
            Mode::Code => code::instructions(&view),
        };
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("quiver", env!("CARGO_PKG_VERSION")))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
            .with_instructions(instructions)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(SUPPORTED_VERSIONS)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if self.mode == Mode::Passthrough {
            self.gateway.listen_for_changes(context.peer);
        }
    }

    async fn set_level(&self, _request: SetLevelRequestParams, _context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        // Upstream log messages are relayed as they come; the level is accepted for conformance.
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = match self.mode {
            Mode::Passthrough => passthrough::list(&self.gateway.view()),
            Mode::Search => search::list(),
            Mode::Code => code::list(),
        };
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let view = self.gateway.view();
        let limit = self.gateway.config().search_limit;
        let name = request.name.as_ref();
        let args = request.arguments;
        let result = match self.mode {
            Mode::Passthrough => match view.by_exposed(name) {
                Some(tool) => crate::modes::forward(&self.gateway, tool, &view, args, &context).await,
                None => {
                    let suggestions = closest(name, view.exposed_names(), 3);
                    return Err(ErrorData::invalid_params(
                        unknown_tool_message(name, &suggestions, "call tools/list for the available names"),
                        Some(serde_json::json!({"suggestions": suggestions})),
                    ));
                }
            },
            Mode::Search => match name {
                "search_tools" => search::search_tools(&view, args, limit),
                "call_tool" => search::call_tool(&self.gateway, &view, args, &context).await,
                other => search::call_by_name(&self.gateway, &view, other, args, &context).await,
            },
            Mode::Code => match name {
                "list" => code::list_tool(&view, args),
                "search" => code::search_tool(&view, args, limit),
                "describe" => code::describe_tool(&view, args),
                other => {
                    let mut names: Vec<&str> = vec!["list", "search", "describe"];
                    names.retain(|n| !code::is_meta(other) || *n != other);
                    let suggestions = closest(other, names.into_iter(), 3);
                    return Err(ErrorData::invalid_params(
                        unknown_tool_message(other, &suggestions, "code mode has the tools list, search and describe"),
                        None,
                    ));
                }
            },
        };
        Ok(result.into())
    }
}
