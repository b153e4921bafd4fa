//! `searchTools(query, {limit})` for scripts: the query and the limit checked as the agent
//! loop's `tool_search` checks them, the catalog's search, the matches as script values.

use pi_tool::{DEFAULT_SEARCH_LIMIT, MAX_QUERY_BYTES, MAX_SEARCH_LIMIT};
use rquickjs::{Ctx, Exception, Value};
use serde_json::Value as Json;

use crate::catalog::Catalog;
use crate::to_js::to_js;

/// `searchTools(query, {limit})`: checks the query and the limit as `tool_search` does, and
/// answers the matches as `[{name, description}]`, best first.
pub(crate) fn search_tools<'js>(
    ctx: &Ctx<'js>,
    catalog: &Catalog,
    query: Value<'js>,
    options: Option<Value<'js>>,
) -> rquickjs::Result<Value<'js>> {
    let usage = "searchTools(query, {limit}): query is a few words saying what the tool does";
    let Some(query) = query.as_string() else {
        return Err(Exception::throw_type(ctx, usage));
    };
    let query = query.to_string()?;
    let query = query.trim();
    if query.is_empty() {
        return Err(Exception::throw_type(ctx, usage));
    }
    if query.len() > MAX_QUERY_BYTES {
        return Err(Exception::throw_range(
            ctx,
            &format!(
                "searchTools: the query is {} bytes; at most {MAX_QUERY_BYTES} are searched: use a few keywords",
                query.len()
            ),
        ));
    }
    let mut limit = DEFAULT_SEARCH_LIMIT;
    if let Some(options) = options.as_ref().and_then(Value::as_object) {
        let given: Value<'js> = options.get("limit")?;
        if !given.is_undefined() {
            match given.as_number() {
                Some(n) if n.fract() == 0.0 && (1.0..=MAX_SEARCH_LIMIT as f64).contains(&n) => {
                    limit = n as usize;
                }
                _ => {
                    return Err(Exception::throw_range(
                        ctx,
                        &format!(
                            "searchTools: limit is a whole number from 1 to {MAX_SEARCH_LIMIT}"
                        ),
                    ));
                }
            }
        }
    }
    let found: Vec<Json> = catalog
        .search(query, limit)
        .into_iter()
        .map(|found| serde_json::json!({ "name": found.name, "description": found.description }))
        .collect();
    to_js(ctx, &Json::Array(found))
}
