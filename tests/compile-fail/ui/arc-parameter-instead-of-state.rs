use std::sync::Arc;

use pi_tool::tool;

struct Db;

/// Count the rows.
#[tool]
async fn count(db: Arc<Db>, table: String) -> String {
    let _ = db;
    table
}

fn main() {}
