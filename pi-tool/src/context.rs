//! What a running tool gets besides its arguments: its call id, the abort signal, a channel for
//! partial results, and shared state.

use std::any::{Any, TypeId, type_name};
use std::collections::HashMap;
use std::fmt;
use std::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::nested::{Children, Frame, NestedCall, NestedHost, Nesting};
use crate::{ToolError, ToolResult};

/// Receives the partial results a tool streams with [`ToolContext::update`].
///
/// It is called while the context holds its update lock, so it must not call back into the
/// same context's `update` (it would wait for itself).
pub type UpdateSink = Arc<dyn Fn(ToolResult) + Send + Sync>;

/// A host that runs many calls at once (an agent loop's batch of tool calls) and keeps their
/// ids and their partial results itself, so that each call's [`ToolContext`] costs at most one
/// allocation instead of one for the context, one for the id and one for an update closure,
/// and none when the host also keeps each call's [`CallSlot`].
///
/// `call` is the number the host gave the context in [`ToolContext::hosted`] (e.g. the call's
/// position in the model's message).
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use pi_tool::{CallHost, ToolContext, ToolResult};
///
/// struct Batch {
///     ids: Vec<String>,
///     updates: Mutex<Vec<(usize, ToolResult)>>,
/// }
///
/// impl CallHost for Batch {
///     fn tool_call_id(&self, call: usize) -> &str {
///         &self.ids[call]
///     }
///     fn update(&self, call: usize, partial: ToolResult) {
///         self.updates.lock().unwrap().push((call, partial));
///     }
/// }
///
/// let batch = Arc::new(Batch { ids: vec!["c0".into(), "c1".into()], updates: Mutex::default() });
/// let ctx = ToolContext::hosted(batch.clone(), 1);
/// assert_eq!(ctx.tool_call_id(), "c1");
/// ctx.update(ToolResult::text("half way"));
/// assert_eq!(batch.updates.lock().unwrap()[0].0, 1);
/// ```
pub trait CallHost: Send + Sync + 'static {
    /// The id of call number `call`.
    fn tool_call_id(&self, call: usize) -> &str;

    /// Receives a partial result of call number `call`. It is called while the context holds
    /// its update lock, so it must not call back into the same context's `update`.
    fn update(&self, call: usize, partial: ToolResult);

    /// The host's abort signal: each call's own signal is a child of it, so cancelling it
    /// aborts every call (as [`ToolContext::with_parent_signal`] does for one context).
    /// `None` (the default): each call has an independent signal.
    fn signal(&self) -> Option<&CancellationToken> {
        None
    }

    /// Shared state for every call of the host ([`State<T>`] parameters), unless a context
    /// is given its own with [`ToolContext::with_state`]. `None` (the default): no state.
    fn state(&self) -> Option<&StateMap> {
        None
    }

    /// Where call number `call` keeps its own signal and update switch, when the host keeps
    /// them (say, one [`CallSlot`] per call in a `Box<[CallSlot]>`, allocated once for all its
    /// calls): [`ToolContext::hosted`] then allocates nothing. A host that gives a call a slot
    /// must give the same slot for as long as the call's contexts live. `None` (the default):
    /// each hosted context allocates its own.
    fn call_slot(&self, call: usize) -> Option<&CallSlot> {
        let _ = call;
        None
    }

    /// Where the calls' nested calls ([`ToolContext::call_tool`]) run: the host's pipeline.
    /// `None` (the default): a nested call is an error result saying so.
    fn nested_host(&self) -> Option<&Arc<dyn NestedHost>> {
        None
    }
}

/// What a call's context changes while the call runs: its own abort signal (created on first
/// use) and whether its updates still reach the host. A context keeps its own, unless its
/// [`CallHost`] keeps one per call ([`CallHost::call_slot`]).
pub struct CallSlot {
    signal: OnceLock<CancellationToken>,
    /// Whether updates still reach the sink ([`CLOSED`] unset), and how many are being
    /// delivered (in steps of [`DELIVERING`]): closing waits for those, so that once
    /// [`ToolContext::close_updates`] returns no update is being delivered or will be. One
    /// atomic rather than a lock: closing, which every call does, is one atomic operation.
    updates: AtomicUsize,
    /// What the call's nested calls share (made by the first).
    children: OnceLock<Arc<Children>>,
}

impl CallSlot {
    /// A slot for a call that has not started: no signal yet, updates accepted.
    pub const fn new() -> Self {
        CallSlot {
            signal: OnceLock::new(),
            updates: AtomicUsize::new(0),
            children: OnceLock::new(),
        }
    }

    /// A slot in the same state, of its own from now on.
    fn copy(&self) -> Self {
        CallSlot {
            signal: self.signal.clone(),
            updates: AtomicUsize::new(self.updates.load(Ordering::Acquire) & CLOSED),
            children: self.children.clone(),
        }
    }

    /// Whether updates are still accepted (a delivery may still be refused: see
    /// [`delivery`](Self::delivery)).
    fn accepts_updates(&self) -> bool {
        self.updates.load(Ordering::Acquire) & CLOSED == 0
    }

    /// Marks an update being delivered until the guard is dropped; `None` once closed.
    fn delivery(&self) -> Option<Delivery<'_>> {
        let before = self.updates.fetch_add(DELIVERING, Ordering::AcqRel);
        let delivery = Delivery(self);
        (before & CLOSED == 0).then_some(delivery)
    }

    /// Stops the call's updates (see [`ToolContext::close_updates`]): later ones are refused,
    /// and one being delivered on another thread is waited for.
    fn close_updates(&self) {
        let before = self.updates.fetch_or(CLOSED, Ordering::AcqRel);
        if before >= DELIVERING {
            while self.updates.load(Ordering::Acquire) >= DELIVERING {
                std::thread::yield_now();
            }
        }
    }
}

/// [`CallSlot::updates`]: updates are refused.
const CLOSED: usize = 1;
/// [`CallSlot::updates`]: one update being delivered.
const DELIVERING: usize = 2;

/// An update being delivered: counted in its slot until dropped (also when the sink panics).
struct Delivery<'a>(&'a CallSlot);

impl Drop for Delivery<'_> {
    fn drop(&mut self) {
        self.0.updates.fetch_sub(DELIVERING, Ordering::AcqRel);
    }
}

impl Default for CallSlot {
    fn default() -> Self {
        CallSlot::new()
    }
}

impl fmt::Debug for CallSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallSlot")
            .field("signal", &self.signal.get())
            .field("accepting_updates", &self.accepts_updates())
            .finish()
    }
}

/// The state of a context that has none.
static NO_STATE: StateMap = StateMap { values: None };

/// Who a context belongs to: a call of its own (id and sink held here) or a call of a host.
#[derive(Clone)]
enum CallIdentity {
    Own {
        tool_call_id: String,
        updates: Option<UpdateSink>,
    },
    Hosted {
        host: Arc<dyn CallHost>,
        call: usize,
    },
}

/// The per-call context handed to a tool: call id, abort signal, update channel, shared state.
///
/// A `#[tool]` fn receives it by declaring a parameter of type `ToolContext`. Cloning is cheap
/// (one reference count), so a tool may move clones into tasks it spawns.
#[derive(Clone)]
pub struct ToolContext {
    repr: Repr,
}

#[derive(Clone)]
enum Repr {
    /// Everything in one allocation.
    Own(Arc<ContextInner>),
    /// A call whose host keeps its id, updates, signal, state and [`CallSlot`]: nothing of its
    /// own to allocate.
    Slotted {
        host: Arc<dyn CallHost>,
        call: usize,
    },
}

/// A context's own data: a call costs one allocation, not one per field.
struct ContextInner {
    call: CallIdentity,
    /// A key that stays the same when a durable host runs the same call again (after a crash),
    /// so a side-effecting tool can deduplicate its effect. `None` in-process.
    idempotency_key: Option<Arc<str>>,
    /// The host's token this call's own signal derives from: cancelling it cancels the call,
    /// while the call cancelling its own signal leaves the host's token alone. When `None`, a
    /// [`CallHost`]'s signal is the parent.
    parent: Option<CancellationToken>,
    /// The context's own state; when `None`, its [`CallHost`]'s.
    state: Option<StateMap>,
    /// Its own signal (created on first use, a child of `parent` when there is one) and update
    /// switch.
    slot: CallSlot,
    /// Where its nested calls run; when [`Nesting::None`], its [`CallHost`]'s.
    nesting: Nesting,
}

impl ContextInner {
    fn duplicate(&self) -> Self {
        ContextInner {
            call: self.call.clone(),
            idempotency_key: self.idempotency_key.clone(),
            parent: self.parent.clone(),
            state: self.state.clone(),
            slot: self.slot.copy(),
            nesting: self.nesting.clone(),
        }
    }
}

impl ToolContext {
    /// A context for the call `tool_call_id`, with its own signal, no update sink and no state.
    pub fn new(tool_call_id: impl Into<String>) -> Self {
        ToolContext::with_identity(CallIdentity::Own {
            tool_call_id: tool_call_id.into(),
            updates: None,
        })
    }

    /// A context for call number `call` of `host`, which holds the call's id and receives its
    /// updates (see [`CallHost`]); otherwise like [`new`](Self::new).
    ///
    /// When the host keeps the call's [`CallSlot`] ([`CallHost::call_slot`]), the context
    /// allocates nothing.
    pub fn hosted(host: Arc<dyn CallHost>, call: usize) -> Self {
        if host.call_slot(call).is_some() {
            return ToolContext {
                repr: Repr::Slotted { host, call },
            };
        }
        ToolContext::with_identity(CallIdentity::Hosted { host, call })
    }

    fn with_identity(call: CallIdentity) -> Self {
        ToolContext::built(call, None)
    }

    /// A context of its own for `tool_call_id` with `state` and `host` for its nested calls,
    /// built at once (what a runner makes per call: one allocation, written once).
    pub(crate) fn with_id_state_and_host(
        tool_call_id: &str,
        state: &StateMap,
        host: Arc<dyn NestedHost>,
    ) -> Self {
        let call = CallIdentity::Own {
            tool_call_id: tool_call_id.to_owned(),
            updates: None,
        };
        let mut ctx = ToolContext::built(call, Some(state.clone()));
        if let Repr::Own(inner) = &mut ctx.repr
            && let Some(inner) = Arc::get_mut(inner)
        {
            inner.nesting = Nesting::Host(host);
        }
        ctx
    }

    fn built(call: CallIdentity, state: Option<StateMap>) -> Self {
        ToolContext {
            repr: Repr::Own(Arc::new(ContextInner {
                call,
                idempotency_key: None,
                parent: None,
                state,
                slot: CallSlot::new(),
                nesting: Nesting::None,
            })),
        }
    }

    /// The context's own data, copied first if another clone shares it (or taken out of its
    /// host's slot: a context changed by a builder no longer shares its host's).
    fn inner_mut(&mut self) -> &mut ContextInner {
        if let Repr::Slotted { host, call } = &self.repr {
            let inner = ContextInner {
                call: CallIdentity::Hosted {
                    host: Arc::clone(host),
                    call: *call,
                },
                idempotency_key: None,
                parent: None,
                state: None,
                slot: self.slot().copy(),
                nesting: Nesting::None,
            };
            self.repr = Repr::Own(Arc::new(inner));
        }
        let Repr::Own(inner) = &mut self.repr else {
            unreachable!("a slotted context was given its own data above");
        };
        if Arc::get_mut(inner).is_none() {
            *inner = Arc::new(inner.duplicate());
        }
        Arc::get_mut(inner).expect("unique after the copy above")
    }

    /// The call's own signal and update switch.
    fn slot(&self) -> &CallSlot {
        match &self.repr {
            Repr::Own(inner) => &inner.slot,
            Repr::Slotted { host, call } => host
                .call_slot(*call)
                .expect("a `CallHost` must keep giving a call the slot it gave it once"),
        }
    }

    /// Uses `signal` as this call's abort signal (shared: a tool cancelling it cancels it for
    /// everyone holding it).
    #[must_use]
    pub fn with_signal(mut self, signal: CancellationToken) -> Self {
        let inner = self.inner_mut();
        inner.slot.signal = OnceLock::from(signal);
        inner.parent = None;
        self
    }

    /// Gives the call its own abort signal, a child of `parent`: cancelling `parent` (aborting
    /// the run) cancels the call, but a tool cancelling its own signal stops only itself. The
    /// child token is created only if the tool asks for [`signal`](Self::signal).
    #[must_use]
    pub fn with_parent_signal(mut self, parent: CancellationToken) -> Self {
        let inner = self.inner_mut();
        inner.slot.signal = OnceLock::new();
        inner.parent = Some(parent);
        self
    }

    /// Sends partial results to `sink` (instead of a host's [`CallHost::update`]).
    #[must_use]
    pub fn with_updates(mut self, sink: UpdateSink) -> Self {
        let tool_call_id = self.tool_call_id().to_owned();
        self.inner_mut().call = CallIdentity::Own {
            tool_call_id,
            updates: Some(sink),
        };
        self
    }

    /// Makes `state` available to [`State<T>`] parameters.
    #[must_use]
    pub fn with_state(mut self, state: StateMap) -> Self {
        self.inner_mut().state = Some(state);
        self
    }

    /// The id of the call being executed.
    pub fn tool_call_id(&self) -> &str {
        match &self.repr {
            Repr::Own(inner) => match &inner.call {
                CallIdentity::Own { tool_call_id, .. } => tool_call_id,
                CallIdentity::Hosted { host, call } => host.tool_call_id(*call),
            },
            Repr::Slotted { host, call } => host.tool_call_id(*call),
        }
    }

    /// Whether partial results sent with [`update`](Self::update) go anywhere (a sink or a
    /// host receives them), so a tool can skip building progress nobody reads.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use pi_tool::ToolContext;
    ///
    /// assert!(!ToolContext::new("c1").has_update_sink());
    /// assert!(ToolContext::new("c1").with_updates(Arc::new(|_| {})).has_update_sink());
    /// ```
    pub fn has_update_sink(&self) -> bool {
        self.has_updates()
    }

    /// Whether updates have somewhere to go.
    fn has_updates(&self) -> bool {
        match &self.repr {
            Repr::Own(inner) => match &inner.call {
                CallIdentity::Own { updates, .. } => updates.is_some(),
                CallIdentity::Hosted { .. } => true,
            },
            Repr::Slotted { .. } => true,
        }
    }

    /// Sets the call's idempotency key (a durable host does, e.g. `pi-restate`: session id and
    /// tool call id), so the same call run again after a crash carries the same key.
    #[must_use]
    pub fn with_idempotency_key(mut self, key: impl Into<Arc<str>>) -> Self {
        self.inner_mut().idempotency_key = Some(key.into());
        self
    }

    /// The key under which a side-effecting tool should deduplicate its effect: the same every
    /// time this call runs, also when a durable host runs it again after a crash (at-least-once
    /// execution). `None` when the host gives no such guarantee (an in-process run).
    pub fn idempotency_key(&self) -> Option<&str> {
        match &self.repr {
            Repr::Own(inner) => inner.idempotency_key.as_deref(),
            Repr::Slotted { .. } => None,
        }
    }

    /// The abort signal: cancelled when the run is aborted. Long-running tools should select on
    /// [`CancellationToken::cancelled`] and return early.
    pub fn signal(&self) -> &CancellationToken {
        self.slot().signal.get_or_init(|| match self.parent() {
            Some(parent) => parent.child_token(),
            None => CancellationToken::new(),
        })
    }

    /// The token a host watches to see the call aborted from outside: the call's own signal if
    /// it exists (given with [`with_signal`](Self::with_signal), or asked for), else the token
    /// it would derive from. Watching does not create the call's own signal (a child token,
    /// registered with its parent, per call); what cancels it before it exists is its parent.
    pub(crate) fn abort_signal(&self) -> &CancellationToken {
        match self.slot().signal.get() {
            Some(own) => own,
            None => match self.parent() {
                Some(parent) => parent,
                None => self.signal(),
            },
        }
    }

    /// The token the call's own signal derives from: its own parent, or its host's signal.
    fn parent(&self) -> Option<&CancellationToken> {
        match &self.repr {
            Repr::Own(inner) => match (&inner.parent, &inner.call) {
                (Some(parent), _) => Some(parent),
                (None, CallIdentity::Hosted { host, .. }) => host.signal(),
                (None, CallIdentity::Own { .. }) => None,
            },
            Repr::Slotted { host, .. } => host.signal(),
        }
    }

    /// Whether anyone but the tool itself can abort the call: its signal was given or asked
    /// for, or it has a parent signal. A fresh [`ToolContext::new`] cannot be, so a runner
    /// need not watch it.
    pub(crate) fn may_be_aborted(&self) -> bool {
        self.slot().signal.get().is_some() || self.parent().is_some()
    }

    /// Whether the call has been aborted (the run's signal, or the call's own).
    pub fn is_aborted(&self) -> bool {
        match self.slot().signal.get() {
            Some(signal) => signal.is_cancelled(),
            None => self.parent().is_some_and(CancellationToken::is_cancelled),
        }
    }

    /// Streams a partial result to the host (a progress line, the output so far).
    ///
    /// Ignored once the tool has finished, so a stray late update never reaches the host after
    /// the final result.
    pub fn update<D: Serialize>(&self, partial: ToolResult<D>) {
        if !self.has_updates() || !self.slot().accepts_updates() {
            return;
        }
        let partial = match partial.into_value() {
            Ok(partial) => partial,
            Err(err) => ToolResult::text(err.to_string()),
        };
        // Delivered while marked as being delivered, so `close_updates` cannot slip in between
        // check and send: it waits for the delivery to end.
        let Some(_delivery) = self.slot().delivery() else {
            return;
        };
        match &self.repr {
            Repr::Own(inner) => match &inner.call {
                CallIdentity::Own {
                    updates: Some(sink),
                    ..
                } => sink(partial),
                CallIdentity::Own { updates: None, .. } => {}
                CallIdentity::Hosted { host, call } => host.update(*call, partial),
            },
            Repr::Slotted { host, call } => host.update(*call, partial),
        }
    }

    /// Stops accepting updates; later [`update`](Self::update) calls are ignored. The runner calls
    /// this when the tool's future completes, and the loop when it answers a call itself (after
    /// the abort grace): once this returns, no update of this call reaches the sink any more,
    /// even from a task the tool left running.
    pub fn close_updates(&self) {
        self.slot().close_updates();
    }

    /// Lends the call `host`'s pipeline for its nested calls ([`call_tool`](Self::call_tool)).
    /// `ToolRegistry::run`, `pi-mcp`'s server, `pi-restate`'s tool service and the agent loop
    /// lend theirs; a context made by hand has none until given one.
    #[must_use]
    pub fn with_nested_host(mut self, host: Arc<dyn NestedHost>) -> Self {
        self.inner_mut().nesting = Nesting::Host(host);
        self
    }

    /// Calls the tool `name` of this call's host with `arguments`, through the same pipeline
    /// as the model's calls: lookup, the argument limits, `prepare_arguments`, validation, the
    /// host's hooks (the agent loop's `before_tool_call` and `after_tool_call`, which see this
    /// call as the parent), the tool's timeout, `blocking`, panic capture and the result limit.
    ///
    /// It never fails: an unknown tool, invalid arguments, a timeout, a refusal or a panic come
    /// back as an error result, as they would to the model. The nested call's signal is a child
    /// of this call's (aborting this call aborts it); a sequential tool's nested call is kept
    /// apart from this call's other nested calls; past
    /// [`CallLimits::max_nesting_depth`](crate::CallLimits::max_nesting_depth) levels the call
    /// is refused. It emits no events
    /// of the loop's (a `tracing` span shows it); its partial results are dropped unless
    /// [`on_update`](NestedCall::on_update) takes them. Its id is this call's id, `/` and its
    /// number (`call_7/1`, `call_7/2`, ...).
    pub fn call_tool(
        &self,
        name: impl Into<String>,
        arguments: serde_json::Value,
    ) -> NestedCall<'_> {
        NestedCall::new(self, name.into(), arguments)
    }

    /// The pipeline nested calls of this call run in, if its host lent one.
    pub fn nested_host(&self) -> Option<&Arc<dyn NestedHost>> {
        let host = match &self.repr {
            Repr::Own(inner) => match (&inner.nesting, &inner.call) {
                (Nesting::None, CallIdentity::Hosted { host, .. }) => host,
                (nesting, _) => return nesting.host(),
            },
            Repr::Slotted { host, .. } => host,
        };
        host.nested_host()
    }

    /// How deeply this call is nested: 0 for a call the model (or a client) made, 1 for a call
    /// made from inside one, and so on.
    pub fn nesting_depth(&self) -> u32 {
        match &self.repr {
            Repr::Own(inner) => inner.nesting.depth(),
            Repr::Slotted { .. } => 0,
        }
    }

    /// The call this context runs, when it is a nested call (its name, id and arguments);
    /// `None` for a top-level call.
    pub fn nested_call(&self) -> Option<&crate::ToolCall> {
        match &self.repr {
            Repr::Own(inner) => inner.nesting.call(),
            Repr::Slotted { .. } => None,
        }
    }

    /// What this call's nested calls share.
    pub(crate) fn children(&self) -> &Children {
        self.slot().children.get_or_init(Arc::default)
    }

    /// The context of this call's nested call number `number`, at `frame`: its own id, a
    /// signal that is a child of this call's, this call's state, and an idempotency key under
    /// this call's.
    pub(crate) fn child(&self, frame: Frame, number: u32, updates: Option<UpdateSink>) -> Self {
        let call = CallIdentity::Own {
            tool_call_id: frame.call.id.clone(),
            updates,
        };
        ToolContext {
            repr: Repr::Own(Arc::new(ContextInner {
                call,
                idempotency_key: self
                    .idempotency_key()
                    .map(|key| Arc::from(format!("{key}/{number}"))),
                parent: Some(self.signal().clone()),
                state: Some(self.state().clone()),
                slot: CallSlot::new(),
                nesting: Nesting::Frame(frame),
            })),
        }
    }

    /// The shared state of this call.
    pub fn state(&self) -> &StateMap {
        let host = match &self.repr {
            Repr::Own(inner) => match (&inner.state, &inner.call) {
                (Some(state), _) => return state,
                (None, CallIdentity::Hosted { host, .. }) => host,
                (None, CallIdentity::Own { .. }) => return &NO_STATE,
            },
            Repr::Slotted { host, .. } => host,
        };
        host.state().unwrap_or(&NO_STATE)
    }
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("tool_call_id", &self.tool_call_id())
            .field("idempotency_key", &self.idempotency_key())
            .field("aborted", &self.is_aborted())
            .field("has_update_sink", &self.has_updates())
            .field("state", self.state())
            .finish()
    }
}

/// A stored value with its type's name (for `Debug` and for the error of a missing value). The
/// `dyn Any` holds an `Arc<T>`, so unsized values (`dyn Trait`) can be stored too.
type StateEntry = (&'static str, Arc<dyn Any + Send + Sync>);

/// Typed shared state, one value per type, handed to every call (databases, clients, config).
///
/// A value stored as `Arc<T>` (`with_state(Arc::new(db))`, or `Arc<dyn Trait>`) also answers a
/// request for `T`, so `State<T>` finds it either way.
///
/// Cloning is cheap: the map is shared and copied only when a clone is modified. An empty map
/// allocates nothing (every call's context starts with one).
#[derive(Clone, Default)]
pub struct StateMap {
    values: Option<Arc<HashMap<TypeId, StateEntry>>>,
}

impl StateMap {
    /// An empty map.
    pub fn new() -> Self {
        StateMap::default()
    }

    /// Whether a value of the type with this id is stored.
    pub(crate) fn contains_type(&self, id: TypeId) -> bool {
        self.values
            .as_ref()
            .is_some_and(|values| values.contains_key(&id))
    }

    /// Stores `value`, replacing any earlier value of the same type.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        self.insert_arc(Arc::new(value));
    }

    /// Stores an already shared value, replacing any earlier value of the same type. `T` may be
    /// unsized: `insert_arc::<dyn Store>(Arc::new(db))` serves `State<dyn Store>`.
    pub fn insert_arc<T: ?Sized + Send + Sync + 'static>(&mut self, value: Arc<T>) {
        Arc::make_mut(self.values.get_or_insert_default())
            .insert(TypeId::of::<T>(), (type_name::<T>(), Arc::new(value)));
    }

    /// The value of type `T`, if one was stored as `T` or as `Arc<T>`.
    pub fn get<T: ?Sized + Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.lookup::<T>(TypeId::of::<T>()).or_else(|| {
            self.lookup::<Arc<T>>(TypeId::of::<Arc<T>>())
                .map(|outer| (*outer).clone())
        })
    }

    fn lookup<T: ?Sized + 'static>(&self, id: TypeId) -> Option<Arc<T>> {
        let (_, value) = self.values.as_ref()?.get(&id)?;
        value.downcast_ref::<Arc<T>>().cloned()
    }

    /// The names of the stored types, sorted (for error messages).
    pub fn type_names(&self) -> Vec<&'static str> {
        let mut names: Vec<_> = self.entries().map(|(name, _)| *name).collect();
        names.sort_unstable();
        names
    }

    /// How many values are stored.
    pub fn len(&self) -> usize {
        self.values.as_ref().map_or(0, |values| values.len())
    }

    /// Whether no value is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn entries(&self) -> impl Iterator<Item = &StateEntry> {
        self.values.iter().flat_map(|values| values.values())
    }

    /// Adds every value of `other`, replacing values of the same type.
    pub fn extend(&mut self, other: &StateMap) {
        let Some(others) = other.values.as_ref().filter(|others| !others.is_empty()) else {
            return;
        };
        if self.is_empty() {
            self.values = Some(Arc::clone(others));
            return;
        }
        let values = Arc::make_mut(self.values.get_or_insert_default());
        for (id, value) in others.iter() {
            values.insert(*id, value.clone());
        }
    }
}

impl fmt::Debug for StateMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(self.entries().map(|(name, _)| name))
            .finish()
    }
}

/// A `#[tool]` parameter that receives shared state of type `T` instead of a model argument.
///
/// The value comes from [`ToolRegistry::with_state`](crate::ToolRegistry::with_state) (or the
/// agent's state); it never appears in the schema. A call whose state is missing fails with an
/// error result naming the type.
///
/// ```
/// use pi_tool::{tool, State, ToolRegistry};
///
/// struct Greeting(String);
///
/// /// Greet someone.
/// #[tool]
/// async fn greet(name: String, greeting: State<Greeting>) -> String {
///     format!("{}, {name}!", greeting.0)
/// }
///
/// let tools = ToolRegistry::new().with(GreetTool).with_state(Greeting("Hello".into()));
/// # let _ = tools;
/// ```
pub struct State<T: ?Sized>(Arc<T>);

impl<T: ?Sized> State<T> {
    /// Wraps shared state (for calling a `#[tool]` fn directly, e.g. in a test).
    pub fn new(value: Arc<T>) -> Self {
        State(value)
    }

    /// The shared pointer.
    pub fn into_arc(self) -> Arc<T> {
        self.0
    }
}

/// What shared state must be: `Send + Sync + 'static`, so any worker thread can use it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be shared state: it must be `Send + Sync + 'static`",
    label = "not `Send + Sync + 'static`",
    note = "tools run on any worker thread; wrap the value in a `Mutex` or use `Arc` instead of `Rc`"
)]
pub trait SharedState: Send + Sync + 'static {}

impl<T: ?Sized + Send + Sync + 'static> SharedState for T {}

impl<T: ?Sized + SharedState> State<T> {
    /// Takes the `T` out of a call's context (stored as `T` or as `Arc<T>`). When it is missing,
    /// the error names the type asked for and every type that was stored.
    pub fn from_context(ctx: &ToolContext) -> Result<Self, ToolError> {
        let state = ctx.state();
        state
            .get::<T>()
            .map(State)
            .ok_or_else(|| missing_state(type_name::<T>(), state))
    }
}

/// The error of a `State<T>` that finds no `T`: what was asked, what was stored, how to fix it.
fn missing_state(asked: &str, state: &StateMap) -> ToolError {
    let stored = state.type_names();
    let stored = if stored.is_empty() {
        "no shared state was stored".to_owned()
    } else {
        let list = stored
            .iter()
            .map(|name| format!("`{name}`"))
            .collect::<Vec<_>>()
            .join(", ");
        format!("stored: {list}")
    };
    ToolError::new(format!(
        "the tool needs shared state of type `{asked}`, but none was provided ({stored}); add it with `with_state(value)`, or `with_state(Arc<{asked}>)`"
    ))
}

impl<T: ?Sized> Deref for State<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: ?Sized> Clone for State<T> {
    fn clone(&self) -> Self {
        State(Arc::clone(&self.0))
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for State<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[test]
    fn a_calls_own_signal_follows_the_parent_but_never_cancels_it() {
        let run = CancellationToken::new();
        let ctx = ToolContext::new("c1").with_parent_signal(run.clone());
        assert!(!ctx.is_aborted());
        ctx.signal().cancel();
        assert!(ctx.is_aborted());
        assert!(!run.is_cancelled(), "the run's token is untouched");

        // An abort of the run is seen whether or not the tool ever asked for its signal.
        let untouched = ToolContext::new("c2").with_parent_signal(run.clone());
        let asked = ToolContext::new("c3").with_parent_signal(run.clone());
        let child = asked.signal().clone();
        run.cancel();
        assert!(untouched.is_aborted());
        assert!(untouched.signal().is_cancelled());
        assert!(child.is_cancelled());
    }

    #[test]
    fn an_idempotency_key_is_kept_by_clones_and_later_builders() {
        assert_eq!(ToolContext::new("c1").idempotency_key(), None);
        let ctx = ToolContext::new("c1").with_idempotency_key("session-7/c1");
        let shared = ctx.clone();
        let rebuilt = shared.with_parent_signal(CancellationToken::new());
        assert_eq!(ctx.idempotency_key(), Some("session-7/c1"));
        assert_eq!(rebuilt.idempotency_key(), Some("session-7/c1"));
        assert_eq!(rebuilt.tool_call_id(), "c1");
    }

    /// A host of two calls that records their updates, and may keep their slots.
    struct TwoCalls {
        signal: CancellationToken,
        state: StateMap,
        updates: Mutex<Vec<(usize, String)>>,
        slots: Option<[CallSlot; 2]>,
    }

    impl CallHost for TwoCalls {
        fn tool_call_id(&self, call: usize) -> &str {
            ["first", "second"][call]
        }
        fn update(&self, call: usize, partial: ToolResult) {
            let text = partial.text_content();
            self.updates
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((call, text));
        }
        fn signal(&self) -> Option<&CancellationToken> {
            Some(&self.signal)
        }
        fn state(&self) -> Option<&StateMap> {
            Some(&self.state)
        }
        fn call_slot(&self, call: usize) -> Option<&CallSlot> {
            self.slots.as_ref()?.get(call)
        }
    }

    fn two_calls(keeps_slots: bool) -> Arc<TwoCalls> {
        let mut state = StateMap::new();
        state.insert(7_u32);
        Arc::new(TwoCalls {
            signal: CancellationToken::new(),
            state,
            updates: Mutex::default(),
            slots: keeps_slots.then(|| [CallSlot::new(), CallSlot::new()]),
        })
    }

    #[test]
    fn a_hosted_context_takes_its_id_signal_state_and_updates_from_the_host() {
        for keeps_slots in [false, true] {
            takes_everything_from_the_host(two_calls(keeps_slots));
        }
    }

    fn takes_everything_from_the_host(host: Arc<TwoCalls>) {
        let ctx = ToolContext::hosted(host.clone(), 1);
        assert_eq!(ctx.tool_call_id(), "second");
        assert_eq!(ctx.state().get::<u32>().as_deref(), Some(&7));
        ctx.update(ToolResult::text("half way"));
        ctx.close_updates();
        ctx.update(ToolResult::text("too late"));
        let updates = host
            .updates
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        assert_eq!(updates, vec![(1, "half way".to_owned())]);

        // The host's signal is the parent of each call's own.
        let asked = ToolContext::hosted(host.clone(), 0);
        let own = asked.signal().clone();
        own.cancel();
        assert!(!host.signal.is_cancelled(), "a call cancels only itself");
        let untouched = ToolContext::hosted(host.clone(), 1);
        assert!(!untouched.is_aborted());
        host.signal.cancel();
        assert!(untouched.is_aborted());
    }

    #[test]
    fn a_hosted_context_given_its_own_state_signal_or_sink_uses_them() {
        for keeps_slots in [false, true] {
            uses_its_own_over_the_hosts(two_calls(keeps_slots));
        }
    }

    fn uses_its_own_over_the_hosts(host: Arc<TwoCalls>) {
        let mut state = StateMap::new();
        state.insert("own");
        let sink_seen = Arc::new(Mutex::new(0));
        let seen = Arc::clone(&sink_seen);
        let parent = CancellationToken::new();
        let ctx = ToolContext::hosted(host.clone(), 0)
            .with_state(state)
            .with_parent_signal(parent.clone())
            .with_updates(Arc::new(move |_| {
                *seen.lock().unwrap_or_else(|p| p.into_inner()) += 1;
            }));
        assert_eq!(ctx.tool_call_id(), "first", "the id survives a new sink");
        assert_eq!(ctx.state().get::<u32>(), None);
        assert_eq!(ctx.state().get::<&str>().as_deref(), Some(&"own"));
        ctx.update(ToolResult::text("to the sink"));
        assert_eq!(*sink_seen.lock().unwrap_or_else(|p| p.into_inner()), 1);
        assert!(
            host.updates
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_empty()
        );
        host.signal.cancel();
        assert!(
            !ctx.is_aborted(),
            "its own parent replaces the host's signal"
        );
        parent.cancel();
        assert!(ctx.is_aborted());
    }

    #[test]
    fn a_context_in_its_hosts_slot_shares_it_with_its_clones_until_a_builder_changes_it() {
        let host = two_calls(true);
        let ctx = ToolContext::hosted(host.clone(), 0);
        let clone = ctx.clone();
        let signal = ctx.signal().clone();
        assert!(clone.signal().is_cancelled() == signal.is_cancelled());
        signal.cancel();
        assert!(clone.is_aborted(), "clones share the slot's signal");
        assert!(!host.signal.is_cancelled());

        let keyed = ToolContext::hosted(host.clone(), 1).with_idempotency_key("k");
        assert_eq!(keyed.idempotency_key(), Some("k"));
        assert_eq!(keyed.tool_call_id(), "second");
        let original = ToolContext::hosted(host.clone(), 1);
        assert_eq!(original.idempotency_key(), None);
        original.close_updates();
        keyed.update(ToolResult::text("its own switch"));
        assert_eq!(
            host.updates
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
            vec![(1, "its own switch".to_owned())],
            "a context changed by a builder has a switch of its own"
        );
    }

    #[test]
    fn an_empty_state_map_answers_nothing_and_extends_to_nothing() {
        let state = StateMap::default();
        assert!(state.is_empty());
        assert_eq!(state.get::<u32>(), None);
        assert!(state.type_names().is_empty());
        let mut extended = StateMap::new();
        extended.extend(&state);
        assert!(extended.is_empty());
        assert_eq!(ToolContext::new("c").state().len(), 0);
    }

    #[test]
    fn closed_updates_reach_no_sink_even_from_a_clone() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        let ctx = ToolContext::new("c1").with_updates(Arc::new(move |partial: ToolResult| {
            sink.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(partial.content.len());
        }));
        let leftover = ctx.clone();
        leftover.update(ToolResult::text("before"));
        ctx.close_updates();
        leftover.update(ToolResult::text("after"));
        assert_eq!(seen.lock().unwrap_or_else(|p| p.into_inner()).len(), 1);
    }

    #[test]
    fn closing_waits_for_an_update_being_delivered_and_refuses_later_ones() {
        use std::sync::mpsc;

        // The sink holds the first update until told to go on.
        let (entered, wait_entered) = mpsc::channel();
        let (go_on, wait_go_on) = mpsc::channel::<()>();
        let wait_go_on = Mutex::new(wait_go_on);
        let delivered = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&delivered);
        let ctx = ToolContext::new("c1").with_updates(Arc::new(move |partial: ToolResult| {
            entered.send(()).unwrap_or_default();
            let _ = wait_go_on.lock().unwrap_or_else(|p| p.into_inner()).recv();
            seen.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(partial.text_content());
        }));
        let sender = ctx.clone();
        let updating = std::thread::spawn(move || sender.update(ToolResult::text("first")));
        wait_entered.recv().expect("the sink got the first update");
        let closer = ctx.clone();
        let (closed, wait_closed) = mpsc::channel();
        let closing = std::thread::spawn(move || {
            closer.close_updates();
            closed.send(()).unwrap_or_default();
        });
        // While the first update is being delivered, closing does not return.
        assert!(
            wait_closed
                .recv_timeout(std::time::Duration::from_millis(50))
                .is_err(),
            "close_updates returned while an update was being delivered"
        );
        go_on.send(()).expect("the sink waits");
        updating.join().expect("the update returns");
        wait_closed
            .recv()
            .expect("closing returns once the delivery ended");
        closing.join().expect("closing returns");
        ctx.update(ToolResult::text("too late"));
        assert_eq!(
            *delivered.lock().unwrap_or_else(|p| p.into_inner()),
            vec!["first".to_owned()]
        );
    }
}
