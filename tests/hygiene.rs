//! `#[tool]` output uses absolute paths only: a scope that shadows `Box`, `Result`, `Ok`,
//! `String`, `serde`, `pi_tool`, `core`, `std` and friends still compiles and runs.

mod hostile {
    #![allow(
        dead_code,
        non_camel_case_types,
        clippy::upper_case_acronyms,
        clippy::module_inception
    )]

    pub(crate) struct Box;
    pub(crate) struct Ok;
    pub(crate) struct Err;
    pub(crate) struct Some;
    pub(crate) struct None;
    pub(crate) struct Option;
    pub(crate) struct Vec;
    pub(crate) struct String;
    pub(crate) struct Arc;
    pub(crate) struct Default;
    pub(crate) struct Clone;
    pub(crate) type Result = ();
    pub(crate) mod serde {}
    pub(crate) mod schemars {}
    pub(crate) mod serde_json {}
    pub(crate) mod pi_tool {}
    pub(crate) mod inventory {}
    pub(crate) mod core {}
    pub(crate) mod std {}
    pub(crate) mod alloc {}

    /// Greet someone.
    #[::pi_tool::tool(label = "Greeter")]
    pub(crate) async fn greet(
        /// Who to greet
        name: ::std::string::String,
        times: ::core::option::Option<u8>,
        ctx: ::pi_tool::ToolContext,
    ) -> ::core::result::Result<::std::string::String, ::std::io::Error> {
        let times = times.unwrap_or(1);
        ::core::result::Result::Ok(::std::format!("{} x{times} ({})", name, ctx.tool_call_id()))
    }
}

#[tokio::test]
async fn a_hostile_scope_still_gets_a_working_tool() {
    let tools = pi_tool::ToolRegistry::new().with(hostile::GreetTool);
    let call = pi_tool::ToolCall::new(
        "c7",
        "greet",
        pi_tool::serde_json::json!({"name": "Ada", "times": "2"}),
    );
    assert_eq!(tools.run(&call).await.text_content(), "Ada x2 (c7)");
    let tool = tools.get("greet").expect("registered");
    let schema = &tool.spec().parameters;
    assert_eq!(schema["properties"]["name"]["description"], "Who to greet");
}
