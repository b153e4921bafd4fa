use pi_tool::{tool, tools};

struct Store;

#[tools]
impl Store {
    /// Read a value.
    #[tool]
    async fn get<K: serde::de::DeserializeOwned>(&self, key: K) -> String {
        let _ = key;
        String::new()
    }
}

fn main() {}
