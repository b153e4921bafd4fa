use pi_tool::tool;

struct Calculator;

impl Calculator {
    /// Add two numbers.
    #[tool]
    async fn add(&self, a: i64, b: i64) -> String {
        (a + b).to_string()
    }
}

fn main() {}
