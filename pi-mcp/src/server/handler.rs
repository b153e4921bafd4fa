//! rmcp's `ServerHandler`, written by hand over our catalog: `tools/list`, `tools/call`.

use std::sync::Arc;

use pi_tool::tool_not_found_message;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, ErrorData, InitializeResult,
    ListToolsResult, PaginatedRequestParams, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler};

use super::call;
use super::catalog::Catalog;
use super::request_ids::RequestIds;

/// The handler every session shares; cloning is two reference counts.
#[derive(Clone)]
pub(crate) struct RegistryHandler {
    catalog: Arc<Catalog>,
    /// Over HTTP, the sessions' request ids, which a client's cancel reaches calls through.
    ids: Option<Arc<RequestIds>>,
}

impl RegistryHandler {
    pub(crate) fn new(catalog: Arc<Catalog>) -> Self {
        RegistryHandler { catalog, ids: None }
    }

    pub(crate) fn with_request_ids(mut self, ids: Arc<RequestIds>) -> Self {
        self.ids = Some(ids);
        self
    }
}

impl ServerHandler for RegistryHandler {
    fn get_info(&self) -> InitializeResult {
        self.catalog.info.clone()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // One registry for every client, fixed while serving: shareable, revalidated each time.
        Ok(ListToolsResult::with_all_items(self.catalog.listed.clone())
            .with_ttl_ms(0)
            .with_cache_scope(CacheScope::Public))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.catalog
            .by_name
            .get(name)
            .and_then(|_| self.catalog.listed.iter().find(|tool| tool.name == name))
            .cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(served) = self.catalog.by_name.get(request.name.as_ref()) else {
            return Err(ErrorData::invalid_params(
                tool_not_found_message(&request.name, self.catalog.names()),
                None,
            ));
        };
        if let Some(ids) = &self.ids {
            ids.attach(&context);
        }
        Ok(call::run(&self.catalog, served, request, context).await)
    }
}
