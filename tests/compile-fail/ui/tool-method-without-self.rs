use pi_tool::{tool, tools};

struct Store;

#[tools]
impl Store {
    /// Make a store.
    #[tool]
    fn open(path: String) -> String {
        path
    }
}

fn main() {}
