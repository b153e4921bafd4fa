use pi_tool::{tool, tools};

struct Counter(u64);

#[tools]
impl Counter {
    /// Count.
    #[tool]
    fn hit(&mut self) -> String {
        self.0 += 1;
        self.0.to_string()
    }
}

fn main() {}
