//! Sequential exclusion: a call of a [`Sequential`](crate::ExecutionMode::Sequential) tool never
//! runs while another call of the same host runs.
//!
//! A host that serves concurrent requests (an MCP server, a Restate tool service,
//! `ToolRegistry::run` called from several tasks) admits each call through its [`CallGate`]:
//! shared for a parallel tool, exclusive for a sequential one, first come first served (a
//! sequential call that waits keeps later calls out, so it is never starved). The agent loop
//! needs no gate: it runs a batch holding a sequential tool one call at a time itself.

use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// A host's admission of calls: shared for a parallel tool, exclusive for a sequential one, in
/// arrival order.
///
/// ```
/// use pi_tool::CallGate;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let gate = CallGate::new();
/// let shared = gate.admit(false).await;
/// let mut exclusive = Box::pin(gate.admit(true));
/// // A sequential tool's call waits until the parallel call's admission ends.
/// assert!(futures_util::FutureExt::now_or_never(&mut exclusive).is_none());
/// drop(shared);
/// let _running_alone = exclusive.await;
/// assert!(gate.is_closed());
/// # });
/// ```
#[derive(Debug, Default)]
pub struct CallGate {
    // Tokio's lock is fair: waiters are served in arrival order, readers included.
    lock: RwLock<()>,
}

/// A call's admission; dropping it lets others in.
#[must_use = "the admission ends when the guard is dropped"]
#[derive(Debug)]
pub struct GateGuard<'a> {
    _held: Held<'a>,
}

#[derive(Debug)]
enum Held<'a> {
    Shared(#[allow(dead_code, reason = "held for its drop")] RwLockReadGuard<'a, ()>),
    Exclusive(#[allow(dead_code, reason = "held for its drop")] RwLockWriteGuard<'a, ()>),
}

impl CallGate {
    /// An open gate.
    pub fn new() -> Self {
        CallGate::default()
    }

    /// Admits a call: exclusively when `exclusive` (a sequential tool), else shared with other
    /// parallel calls. Waits, first come first served, while the gate is taken; dropping the
    /// future while it waits leaves no trace (a cancelled call never runs).
    pub async fn admit(&self, exclusive: bool) -> GateGuard<'_> {
        let held = if exclusive {
            Held::Exclusive(self.lock.write().await)
        } else {
            Held::Shared(self.lock.read().await)
        };
        GateGuard { _held: held }
    }

    /// Whether a new parallel call would wait now: a sequential call holds the gate or is
    /// waiting for it.
    pub fn is_closed(&self) -> bool {
        self.lock.try_read().is_err()
    }
}
