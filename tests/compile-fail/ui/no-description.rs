use pi_tool::tool;

#[tool]
async fn mystery(x: String) -> String {
    x
}

fn main() {}
