use pi_tool::tool;

/// Dangerous.
#[tool]
async unsafe fn danger(x: String) -> String {
    x
}

/// Foreign.
#[tool]
async extern "C" fn foreign(x: String) -> String {
    x
}

fn main() {}
