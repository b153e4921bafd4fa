use pi_tool::{tool, tools};

struct Store<T>(T);

#[tools]
impl<T: Send + Sync + 'static> Store<T> {
    /// Read.
    #[tool]
    fn get(&self) -> String {
        String::new()
    }
}

trait Named {
    fn name(&self) -> String;
}

#[tools]
impl Named for Store<u8> {
    /// The name.
    #[tool]
    fn name(&self) -> String {
        String::new()
    }
}

fn main() {}
