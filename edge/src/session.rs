//! One MCP session: the rmcp server handler that answers `initialize`,
//! `tools/list` and `tools/call` for a mode, over the gateway's current view.
#![allow(deprecated)] // logging is current in the protocol versions served here

use std::{borrow::Cow, sync::Arc};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult,
        GetPromptRequestParams, GetPromptResponse, GetPromptResult, Implementation,
        ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
        PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse,
        ReadResourceResult, ServerCapabilities, ServerConfig, SetLevelRequestParams,
        SubscribeRequestParams, UnsubscribeRequestParams,
    },
    service::{NotificationContext, RequestContext},
};

use crate::{
    gateway::Gateway,
    mode::Mode,
    modes::{
        code,
        forwarded::{self, convert},
        passthrough, search,
    },
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
    /// Identifies the session's stash.
    id: Arc<str>,
}

impl GatewaySession {
    pub(crate) fn new(gateway: Arc<Gateway>, mode: Mode) -> GatewaySession {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id: Arc<str> = format!("{}-{n}", std::process::id()).into();
        GatewaySession { gateway, mode, id }
    }

    /// The session's mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }
}

impl GatewaySession {
    fn passthrough_only(&self, method: &str) -> Result<(), ErrorData> {
        if self.mode == Mode::Passthrough {
            Ok(())
        } else {
            Err(ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                format!("{method} is served in passthrough mode only (path /passthrough/mcp)"),
                None,
            ))
        }
    }

    async fn forward_subscription(&self, method: &str, uri: &str) -> Result<(), ErrorData> {
        self.passthrough_only(method)?;
        let view = self.gateway.view();
        let server = forwarded::route_uri(&self.gateway, &view, uri).await?;
        forwarded::send(
            &self.gateway,
            &server,
            method,
            serde_json::json!({"uri": uri}),
        )
        .await?;
        Ok(())
    }
}

impl ServerHandler for GatewaySession {
    fn get_info(&self) -> ServerConfig {
        let view = self.gateway.view();
        let mut capabilities = if self.mode == Mode::Passthrough {
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_logging()
                .enable_prompts()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_completions()
                .build()
        } else {
            ServerCapabilities::builder()
                .enable_tools()
                .enable_logging()
                .build()
        };
        if self.mode != Mode::Passthrough {
            capabilities.tools.get_or_insert_default().list_changed = None;
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

    async fn set_level(
        &self,
        _request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // Upstream log messages are relayed as they come; the level is accepted for conformance.
        Ok(())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.passthrough_only("resources/list")?;
        convert(forwarded::list_resources(&self.gateway, &self.gateway.view(), false).await)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.passthrough_only("resources/templates/list")?;
        convert(forwarded::list_resources(&self.gateway, &self.gateway.view(), true).await)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.passthrough_only("resources/read")?;
        let view = self.gateway.view();
        let server = forwarded::route_uri(&self.gateway, &view, &request.uri).await?;
        let result = forwarded::send(
            &self.gateway,
            &server,
            "resources/read",
            serde_json::json!({"uri": request.uri}),
        )
        .await?;
        Ok(ReadResourceResponse::Complete(
            convert::<ReadResourceResult>(result)?,
        ))
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.forward_subscription("resources/subscribe", &request.uri)
            .await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.forward_subscription("resources/unsubscribe", &request.uri)
            .await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.passthrough_only("prompts/list")?;
        convert(forwarded::list_prompts(&self.gateway, &self.gateway.view()).await)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.passthrough_only("prompts/get")?;
        let view = self.gateway.view();
        let (server, name) = forwarded::route_prompt(&self.gateway, &view, &request.name).await?;
        let mut params = serde_json::json!({"name": name});
        if let Some(arguments) = request.arguments {
            params["arguments"] = serde_json::Value::Object(arguments.into_iter().collect());
        }
        let result = forwarded::send(&self.gateway, &server, "prompts/get", params).await?;
        Ok(GetPromptResponse::Complete(convert::<GetPromptResult>(
            result,
        )?))
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.passthrough_only("completion/complete")?;
        let view = self.gateway.view();
        let mut params = serde_json::to_value(&request)
            .map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
        let server = match params["ref"]["type"].as_str() {
            Some("ref/prompt") => {
                let exposed = params["ref"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let (server, name) =
                    forwarded::route_prompt(&self.gateway, &view, &exposed).await?;
                params["ref"]["name"] = serde_json::Value::String(name);
                server
            }
            Some("ref/resource") => {
                let uri = params["ref"]["uri"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                forwarded::route_uri(&self.gateway, &view, &uri).await?
            }
            _ => {
                return Err(ErrorData::invalid_params(
                    "ref.type must be ref/prompt or ref/resource",
                    None,
                ));
            }
        };
        convert(forwarded::send(&self.gateway, &server, "completion/complete", params).await?)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = match self.mode {
            Mode::Passthrough => passthrough::list(&self.gateway.view()),
            Mode::Search => search::list(),
            Mode::Code => code::list(self.gateway.scripts().is_some()),
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
                Some(tool) => {
                    crate::modes::forward(&self.gateway, tool, &view, args, &context).await
                }
                None => {
                    let suggestions = closest(name, view.exposed_names(), 3);
                    return Err(ErrorData::invalid_params(
                        unknown_tool_message(
                            name,
                            &suggestions,
                            "call tools/list for the available names",
                        ),
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
                "execute" if self.gateway.scripts().is_some() => {
                    code::execute_tool(
                        &self.gateway,
                        view.clone(),
                        &self.id,
                        args,
                        context.ct.clone(),
                        crate::relay::SessionRelay::new(
                            context.peer.clone(),
                            context.meta.get_progress_token(),
                        ),
                    )
                    .await
                }
                other => {
                    let mut names: Vec<&str> = vec!["list", "search", "describe", "execute"];
                    names.retain(|n| !code::is_meta(other) || *n != other);
                    let suggestions = closest(other, names.into_iter(), 3);
                    return Err(ErrorData::invalid_params(
                        unknown_tool_message(
                            other,
                            &suggestions,
                            "code mode has the tools list, search and describe",
                        ),
                        None,
                    ));
                }
            },
        };
        Ok(result.into())
    }
}
