//! `#[tool(defer)]` on a free fn and on a `#[tools]` method makes `deferred()` answer `true`;
//! a tool without it stays sent (`false`).

use std::sync::Arc;

use pi_tool::{AgentTool, tool, tools};

/// Search the archive.
#[tool(defer)]
async fn search_archive(query: String) -> String {
    query
}

/// Say hello.
#[tool]
async fn hello() -> String {
    "hello".to_owned()
}

struct Db;

#[tools]
impl Db {
    /// Drop a table.
    #[tool(defer, destructive)]
    async fn drop_table(&self, table: String) -> String {
        table
    }
}

fn main() {
    assert!(SearchArchiveTool.deferred());
    assert!(!HelloTool.deferred());
    let db_tools = Arc::new(Db).tools();
    let drop_table = db_tools.iter().find(|t| t.spec().name == "drop_table").unwrap();
    assert!(drop_table.deferred());
    assert!(drop_table.annotations().destructive == Some(true));
}
