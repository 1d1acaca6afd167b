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
        ReadResourceResult, ServerConfig, SetLevelRequestParams, SubscribeRequestParams,
        UnsubscribeRequestParams,
    },
    service::{NotificationContext, RequestContext},
};

use crate::{
    gateway::Gateway,
    mode::Mode,
    modes::{
        self, Backends, ModeHandler, ToolRequest,
        forwarded::{self, convert},
    },
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
    /// Everything mode-specific: the tools, the instructions, the calls.
    handler: Arc<dyn ModeHandler>,
    /// Identifies the session's stash.
    id: Arc<str>,
}

impl GatewaySession {
    /// A new MCP session in `mode` on `gateway`.
    pub fn new(gateway: Arc<Gateway>, mode: Mode) -> GatewaySession {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id: Arc<str> = format!("{}-{n}", std::process::id()).into();
        let backends = Backends {
            dispatch: gateway.dispatch().clone(),
            scripts: gateway.scripts().cloned(),
            search_limit: gateway.config().search_limit,
        };
        GatewaySession {
            handler: modes::handler(mode, backends),
            gateway,
            mode,
            id,
        }
    }
}

impl GatewaySession {
    fn dispatch(&self) -> &dyn quiver_contract::Dispatch {
        self.gateway.dispatch().as_ref()
    }

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
        let server = forwarded::route_uri(self.dispatch(), &view, uri).await?;
        forwarded::send(
            self.dispatch(),
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
        let capabilities = self.handler.capabilities();
        let instructions = self.handler.instructions(&view);
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
        convert(forwarded::list_resources(self.dispatch(), &self.gateway.view(), false).await)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.passthrough_only("resources/templates/list")?;
        convert(forwarded::list_resources(self.dispatch(), &self.gateway.view(), true).await)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.passthrough_only("resources/read")?;
        let view = self.gateway.view();
        let server = forwarded::route_uri(self.dispatch(), &view, &request.uri).await?;
        let result = forwarded::send(
            self.dispatch(),
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
        convert(forwarded::list_prompts(self.dispatch(), &self.gateway.view()).await)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.passthrough_only("prompts/get")?;
        let view = self.gateway.view();
        let (server, name) = forwarded::route_prompt(self.dispatch(), &view, &request.name).await?;
        let mut params = serde_json::json!({"name": name});
        if let Some(arguments) = request.arguments {
            params["arguments"] = serde_json::Value::Object(arguments.into_iter().collect());
        }
        let result = forwarded::send(self.dispatch(), &server, "prompts/get", params).await?;
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
                    forwarded::route_prompt(self.dispatch(), &view, &exposed).await?;
                params["ref"]["name"] = serde_json::Value::String(name);
                server
            }
            Some("ref/resource") => {
                let uri = params["ref"]["uri"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                forwarded::route_uri(self.dispatch(), &view, &uri).await?
            }
            _ => {
                return Err(ErrorData::invalid_params(
                    "ref.type must be ref/prompt or ref/resource",
                    None,
                ));
            }
        };
        convert(forwarded::send(self.dispatch(), &server, "completion/complete", params).await?)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.handler.tools(&self.gateway.view()),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let request = ToolRequest {
            view: self.gateway.view(),
            name: request.name.as_ref(),
            arguments: request.arguments,
            session: &self.id,
            context: &context,
        };
        Ok(self.handler.call(request).await?.into())
    }
}
