//! `ConformanceServer`: the rmcp `ServerHandler` that routes each MCP method to the
//! module owning that feature (tools, resources, prompts). It holds only per-session
//! state (log level, resource subscriptions); the catalogue itself is static.

// The suite tests the 2025-06-18/2025-11-25 protocol, whose logging, sampling and
// resources/subscribe rmcp marks deprecated in favour of the 2026-07-28 revision.
#![allow(deprecated)]

use std::{
    borrow::Cow,
    collections::BTreeSet,
    sync::{Mutex, PoisonError},
};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams,
        CompleteResult, GetPromptRequestParams, GetPromptResponse, GetTaskParams, GetTaskResult,
        Implementation, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
        ListToolsResult, LoggingLevel, PaginatedRequestParams, ProtocolVersion,
        ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
        SetLevelRequestParams, SubscribeRequestParams, SubscriptionFilter,
        UnsubscribeRequestParams, UpdateTaskParams,
    },
    service::{NotificationContext, RequestContext, SubscriptionContext},
};

use crate::{prompts, resources, stateless, tasks, tools};

/// One MCP session's worth of the fixture. The HTTP transport builds one per session;
/// stdio serves exactly one.
#[derive(Debug, Default)]
pub struct ConformanceServer {
    /// Minimum level set by `logging/setLevel`; `None` until the client sets one, in
    /// which case every message is sent.
    log_level: Mutex<Option<LoggingLevel>>,
    /// URIs the client subscribed to with `resources/subscribe`.
    subscriptions: Mutex<BTreeSet<String>>,
}

impl ConformanceServer {
    pub fn new() -> Self {
        Self::default()
    }
}

impl tools::LogFilter for ConformanceServer {
    fn should_log(&self, level: LoggingLevel) -> bool {
        let minimum = *self
            .log_level
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        minimum.is_none_or(|minimum| severity(level) >= severity(minimum))
    }
}

/// RFC 5424 order, lowest first.
fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

impl ServerHandler for ConformanceServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_completions()
            .enable_prompts()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_tools()
            .enable_tasks()
            .build();
        let mut capabilities = capabilities;
        // The trigger tools change both lists (`stateless`).
        if let Some(tools) = capabilities.tools.as_mut() {
            tools.list_changed = Some(true);
        }
        if let Some(prompts) = capabilities.prompts.as_mut() {
            prompts.list_changed = Some(true);
        }
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(
                "quiver-conformance-upstream",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "Fixture for the MCP conformance suite: every tool, resource and prompt \
                 is named after the scenario that calls it.",
            )
    }

    /// Every revision rmcp knows: 2026-07-28 clients are asked with
    /// `input_required` where older ones get server-to-client requests.
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS)
    }

    /// A tool's definition, so rmcp checks `Mcp-Param-*` headers against its
    /// `x-mcp-header` annotations.
    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        tools::catalogue()
            .into_iter()
            .chain(stateless::catalogue())
            .chain(tasks::catalogue())
            .find(|tool| tool.name == name)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        stateless::add_session(context.peer);
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        stateless::add_listener(subscription.sink().clone());
        subscription.cancelled().await;
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut all = tools::catalogue();
        all.extend(stateless::catalogue());
        all.extend(tasks::catalogue());
        Ok(ListToolsResult::with_all_items(all))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let (responses, state) = (
            request.input_responses.clone(),
            request.request_state.clone(),
        );
        if let Some(answer) = stateless::call(&request.name, responses, state, &context).await {
            return answer;
        }
        if let Some(answer) = tasks::call(&request, &context).await {
            return answer;
        }
        tools::call(self, request, context).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(resources::catalogue()))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(
            resources::templates(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        resources::read(&request.uri).map(Into::into)
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        resources::subscribe(&self.subscriptions, request.uri)
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        resources::unsubscribe(&self.subscriptions, &request.uri);
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let mut all = prompts::catalogue();
        all.extend(stateless::prompts());
        Ok(ListPromptsResult::with_all_items(all))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if let Some(answer) = stateless::get_prompt(&request.name, request.input_responses) {
            return answer;
        }
        prompts::get(&request.name, request.arguments.as_ref()).map(Into::into)
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        prompts::complete(&request)
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        tasks::TASKS
            .get_task(&request.task_id)
            .map(GetTaskResult::new)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        tasks::TASKS.update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        tasks::TASKS.cancel_task(&request.task_id)
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        *self
            .log_level
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(request.level);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::LogFilter as _;

    #[test]
    fn logs_everything_until_a_level_is_set_then_filters_below_it() {
        let server = ConformanceServer::new();
        assert!(server.should_log(LoggingLevel::Debug));
        *server.log_level.lock().unwrap() = Some(LoggingLevel::Warning);
        assert!(!server.should_log(LoggingLevel::Info));
        assert!(server.should_log(LoggingLevel::Warning));
        assert!(server.should_log(LoggingLevel::Emergency));
    }

    #[test]
    fn advertises_every_capability_the_scenarios_use() {
        let caps = ConformanceServer::new().get_info().capabilities;
        assert!(caps.tools.is_some());
        assert!(caps.prompts.is_some());
        assert!(caps.logging.is_some());
        assert!(caps.completions.is_some());
        let resources = caps.resources.expect("resources capability");
        assert_eq!(resources.subscribe, Some(true));
    }
}
