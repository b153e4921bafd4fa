use std::rc::Rc;

use pi_tool::tool;

async fn pause() {}

/// Holds an `Rc` across an await.
#[tool]
async fn hold(x: String) -> String {
    let shared = Rc::new(x);
    pause().await;
    shared.to_string()
}

fn main() {}
