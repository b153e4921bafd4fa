//! Two `#[tool]`s with one name in one program: `discover` refuses, naming both definitions.

use pi_tool::{RegistryError, ToolRegistry};

mod first {
    /// Search the web.
    #[pi_tool::tool]
    pub(crate) async fn search(query: String) -> String {
        query
    }
}

mod second {
    /// Search the files.
    #[pi_tool::tool(name = "search")]
    pub(crate) async fn search_files(query: String) -> String {
        query
    }
}

#[test]
fn discover_reports_both_definitions() {
    let err = ToolRegistry::discover().expect_err("duplicate");
    let RegistryError::DuplicateName {
        name,
        first,
        second,
    } = &err
    else {
        panic!("unexpected {err:?}")
    };
    assert_eq!(name, "search");
    assert!(
        first.starts_with("`duplicate_names::first::search` (pi-tool/tests/duplicate_names.rs:"),
        "{first}"
    );
    assert!(
        second.starts_with(
            "`duplicate_names::second::search_files` (pi-tool/tests/duplicate_names.rs:"
        ),
        "{second}"
    );
    assert!(
        err.to_string()
            .starts_with("two tools are named `search`: `duplicate_names::first::search` (")
    );
    // Registering by hand stays possible: the later one replaces the earlier.
    let mut tools = ToolRegistry::new();
    tools.register(first::SearchTool);
    tools.register(second::SearchFilesTool);
    assert_eq!(tools.len(), 1);
}
