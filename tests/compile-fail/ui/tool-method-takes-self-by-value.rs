use pi_tool::{tool, tools};

struct Counter(u64);

#[tools]
impl Counter {
    /// Count.
    #[tool]
    fn hit(self) -> String {
        self.0.to_string()
    }

    /// Count in a box.
    #[tool]
    fn boxed(self: Box<Self>) -> String {
        self.0.to_string()
    }
}

fn main() {}
