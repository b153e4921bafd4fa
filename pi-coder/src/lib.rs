#![doc = include_str!("../README.md")]

pub mod agent;
pub mod cli;
pub mod compaction;
pub mod config;
pub mod events;
pub mod export;
mod fs_error;
pub mod mcp;
mod mcp_serve;
pub mod models;
mod pi_session;
pub mod render;
pub mod session;
mod spill;
pub mod system_prompt;
pub mod tools;
pub mod truncate;
mod workspace;

use pi_tool::ToolRegistry;

pub use agent::{
    AgentControl, Approval, ApprovalRequest, Approver, BashResult, CodingAgent, ContextUsage,
    PromptOutcome, SessionStats,
};
pub use compaction::{CompactionReason, CompactionResult, CompactionSettings};
pub use events::{CompactionEnd, Observer, PiJson};
pub use models::{ModelInfo, ModelRegistry};
pub use pi_sandbox::{SandboxMode, SandboxPolicy};
pub use render::Renderer;
pub use session::{
    FORMAT_VERSION, Resumed, SavedSession, Session, SessionError, SessionFormat, SessionSummary,
};
pub use tools::bash::{BashParams, BashTool, bash};
pub use tools::edit::{EditParams, EditTool, Replacement, edit};
pub use tools::find::{FindParams, FindTool, find};
pub use tools::grep::{GrepParams, GrepTool, grep};
pub use tools::ls::{LsParams, LsTool, ls};
pub use tools::read::{ReadParams, ReadTool, read};
pub use tools::write::{WriteParams, WriteTool, write};
pub use workspace::Workspace;

/// The names of all seven built-in tools.
pub const ALL_TOOL_NAMES: [&str; 7] = ["read", "bash", "edit", "write", "grep", "find", "ls"];
/// pi's default active tools (`sdk.ts`): read, bash, edit, write.
pub const DEFAULT_TOOL_NAMES: [&str; 4] = ["read", "bash", "edit", "write"];
/// The tools that never change anything: read, grep, find, ls.
pub const READ_ONLY_TOOL_NAMES: [&str; 4] = ["read", "grep", "find", "ls"];

/// All seven tools, sharing `workspace` as their `State<Workspace>`.
pub fn coding_tools(workspace: Workspace) -> ToolRegistry {
    ToolRegistry::new()
        .with(ReadTool)
        .with(BashTool)
        .with(EditTool)
        .with(WriteTool)
        .with(GrepTool)
        .with(FindTool)
        .with(LsTool)
        .with_state(workspace)
}

/// pi's default active set ([`DEFAULT_TOOL_NAMES`]) on `workspace`.
pub fn default_tools(workspace: Workspace) -> ToolRegistry {
    select(workspace, &DEFAULT_TOOL_NAMES)
}

/// The read-only set ([`READ_ONLY_TOOL_NAMES`]) on `workspace`.
pub fn read_only_tools(workspace: Workspace) -> ToolRegistry {
    select(workspace, &READ_ONLY_TOOL_NAMES)
}

fn select(workspace: Workspace, names: &[&str]) -> ToolRegistry {
    let all = coding_tools(workspace);
    let mut chosen = all.clone();
    for name in all.names() {
        if !names.contains(&name) {
            chosen.remove(name);
        }
    }
    chosen
}
