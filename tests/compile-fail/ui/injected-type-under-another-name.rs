use pi_tool::ToolContext as Ctx;
use pi_tool::{State, tool};

struct Db;
type DbState = State<Db>;

/// A renamed `ToolContext` and an aliased `State<T>` without `#[inject]`.
#[tool]
async fn lookup(key: String, ctx: Ctx, db: DbState) -> String {
    let _ = (ctx, db);
    key
}

fn main() {}
