use pi_tool::tool;

struct Opaque;

/// Fails opaquely.
#[tool]
async fn opaque() -> Result<String, Opaque> {
    Err(Opaque)
}

fn main() {}
