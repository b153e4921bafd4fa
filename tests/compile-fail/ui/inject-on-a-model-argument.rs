use pi_tool::tool;

/// `#[inject]` on a type the context cannot provide.
#[tool]
async fn lookup(#[inject] key: String) -> String {
    key
}

fn main() {}
