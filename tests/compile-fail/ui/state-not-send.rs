use std::rc::Rc;

use pi_tool::{tool, State};

/// Reads a counter that cannot cross threads.
#[tool]
async fn counter(count: State<Rc<u32>>) -> String {
    count.to_string()
}

fn main() {}
