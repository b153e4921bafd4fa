//! Hints about what a tool does to its environment, for hosts that show or gate tools (MCP
//! clients read them as `annotations`). Never sent to model providers.

/// What a tool does to its environment: read-only, destructive, idempotent, open-world.
///
/// Every hint is optional: `None` means "not said", and a host applies its own default (MCP's:
/// not read-only, destructive, not idempotent, open world). `#[tool(read_only, idempotent)]`
/// sets them; a hand-written tool returns them from
/// [`AgentTool::annotations`](crate::AgentTool::annotations).
///
/// ```
/// use pi_tool::ToolAnnotations;
///
/// let hints = ToolAnnotations::new().read_only(true).open_world(false);
/// assert_eq!(hints.read_only, Some(true));
/// assert_eq!(hints.destructive, None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ToolAnnotations {
    /// The tool does not modify its environment.
    pub read_only: Option<bool>,
    /// The tool may destroy or overwrite data (meaningful only when not read-only).
    pub destructive: Option<bool>,
    /// Calling the tool again with the same arguments has no further effect.
    pub idempotent: Option<bool>,
    /// The tool reaches an open world (the web, other people), not only a closed domain.
    pub open_world: Option<bool>,
}

impl ToolAnnotations {
    /// No hints.
    pub const fn new() -> Self {
        ToolAnnotations {
            read_only: None,
            destructive: None,
            idempotent: None,
            open_world: None,
        }
    }

    /// Sets [`read_only`](Self::read_only).
    #[must_use]
    pub const fn read_only(mut self, value: bool) -> Self {
        self.read_only = Some(value);
        self
    }

    /// Sets [`destructive`](Self::destructive).
    #[must_use]
    pub const fn destructive(mut self, value: bool) -> Self {
        self.destructive = Some(value);
        self
    }

    /// Sets [`idempotent`](Self::idempotent).
    #[must_use]
    pub const fn idempotent(mut self, value: bool) -> Self {
        self.idempotent = Some(value);
        self
    }

    /// Sets [`open_world`](Self::open_world).
    #[must_use]
    pub const fn open_world(mut self, value: bool) -> Self {
        self.open_world = Some(value);
        self
    }

    /// Whether no hint is set.
    pub const fn is_empty(&self) -> bool {
        self.read_only.is_none()
            && self.destructive.is_none()
            && self.idempotent.is_none()
            && self.open_world.is_none()
    }
}
