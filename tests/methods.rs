//! Methods as tools: `#[tools]` on an impl, `#[tool]` on its `&self` methods, every tool bound to
//! one shared value. Free fns and `State<T>` keep working beside them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use pi_tool::serde_json::json;
use pi_tool::{AgentTool, State, ToolCall, ToolContext, ToolRegistry, tool, tools};

/// A key-value store shared by its tools.
struct Db {
    entries: std::sync::Mutex<std::collections::BTreeMap<String, String>>,
    reads: AtomicU64,
}

struct Prefix(String);

#[derive(Debug, thiserror::Error)]
#[error("no key {0}")]
struct Missing(String);

#[tools]
impl Db {
    /// Read a key.
    #[tool(read_only)]
    async fn get(&self, key: String) -> Result<String, Missing> {
        tokio::task::yield_now().await;
        self.reads.fetch_add(1, Ordering::Relaxed);
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.get(&key).cloned().ok_or(Missing(key))
    }

    /// Write a key.
    #[pi_tool::tool(name = "put", label = "Put", sequential)]
    fn set(
        &self,
        /// The key
        key: String,
        value: String,
        prefix: State<Prefix>,
        ctx: ToolContext,
    ) -> String {
        let value = format!("{}{value}", prefix.0);
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, value.clone());
        format!("{} {value}", ctx.tool_call_id())
    }

    /// How many reads so far (an ordinary method: not a tool).
    fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }
}

/// A free tool beside the methods.
#[tool]
async fn ping() -> &'static str {
    "pong"
}

fn db() -> Arc<Db> {
    Arc::new(Db {
        entries: std::sync::Mutex::default(),
        reads: AtomicU64::new(0),
    })
}

#[tokio::test]
async fn methods_share_one_value_through_their_tools() {
    let db = db();
    let mut tools: ToolRegistry = db.tools().into_iter().collect();
    tools.register(PingTool);
    let tools = tools.with_state(Prefix("v=".into()));
    assert_eq!(tools.names().collect::<Vec<_>>(), ["get", "ping", "put"]);

    let put = tools
        .run(&ToolCall::new(
            "c1",
            "put",
            json!({"key": "a", "value": "1"}),
        ))
        .await;
    assert_eq!((put.is_error, put.text_content()), (false, "c1 v=1".into()));
    let got = tools
        .run(&ToolCall::new("c2", "get", json!({"key": "a"})))
        .await;
    assert_eq!((got.is_error, got.text_content()), (false, "v=1".into()));
    let missing = tools
        .run(&ToolCall::new("c3", "get", json!({"key": "b"})))
        .await;
    assert_eq!(
        (missing.is_error, missing.text_content()),
        (true, "no key b".into())
    );
    // The tools hold the same `Db` as the caller.
    assert_eq!(db.reads(), 2);
    let ping = tools.run(&ToolCall::new("c4", "ping", json!({}))).await;
    assert_eq!(ping.text_content(), "pong");
}

#[test]
fn method_tools_carry_their_keys_and_schema() {
    let db = db();
    let tools = db.tools();
    let put: &Arc<dyn AgentTool> = tools.iter().find(|t| t.spec().name == "put").expect("put");
    assert_eq!(put.label(), "Put");
    assert_eq!(
        put.execution_mode(),
        Some(pi_tool::ExecutionMode::Sequential)
    );
    assert_eq!(
        put.spec().parameters,
        json!({
            "type": "object",
            "properties": {
                "key": {"type": "string", "description": "The key"},
                "value": {"type": "string"}
            },
            "required": ["key", "value"]
        })
    );
    let get = tools.iter().find(|t| t.spec().name == "get").expect("get");
    assert!(get.annotations().read_only.unwrap_or(false));
    assert_eq!(get.spec().description, "Read a key.");
    // The generated types are nameable.
    let _: fn(Arc<Db>) -> DbGetTool = DbGetTool;
}

#[test]
fn methods_are_not_discovered() {
    let found = ToolRegistry::discover().expect("unique names");
    assert_eq!(found.names().collect::<Vec<_>>(), ["ping"]);
}
