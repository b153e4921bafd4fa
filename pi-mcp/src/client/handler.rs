//! Our side of the MCP session (rmcp's `ClientHandler`, by hand): routes each call's progress
//! notifications to that call, reports `tools/list_changed`, and hands the server's elicitation
//! requests to the application.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::ClientHandler;
use rmcp::model::{
    ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction, ErrorData,
    ProgressNotificationParam, ProgressToken,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use tokio::sync::mpsc;

use super::elicitation::Elicitation;

/// Progress notifications that arrived before their call registered (the server answered faster
/// than we stored the route) are kept, at most this many, and handed over on registration.
const EARLY_PROGRESS_LIMIT: usize = 32;

/// The handler rmcp drives for one connection.
pub(crate) struct PiClientHandler {
    config: ClientConfig,
    pub(crate) progress: Arc<ProgressRoutes>,
    /// Asks the refresher task to list the tools again; full means a refresh is already pending.
    list_changed: mpsc::Sender<()>,
    elicitation: Elicitation,
}

impl PiClientHandler {
    pub(crate) fn new(
        config: ClientConfig,
        list_changed: mpsc::Sender<()>,
        elicitation: Elicitation,
    ) -> Self {
        PiClientHandler {
            config,
            progress: Arc::default(),
            list_changed,
            elicitation,
        }
    }
}

impl ClientHandler for PiClientHandler {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.deliver(params);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        // A full channel already holds a pending refresh, which will see this change too.
        let _ = self.list_changed.try_send(());
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        // The server may withdraw the question (its call was cancelled): stop asking then.
        tokio::select! {
            answer = self.elicitation.answer(request) => Ok(answer),
            () = context.ct.cancelled() => Ok(ElicitResult::new(ElicitationAction::Cancel)),
        }
    }

    fn get_info(&self) -> ClientConfig {
        self.config.clone()
    }
}

/// Which running call each progress token belongs to.
#[derive(Default)]
pub(crate) struct ProgressRoutes {
    inner: Mutex<RoutesInner>,
}

#[derive(Default)]
struct RoutesInner {
    routes: HashMap<ProgressToken, mpsc::UnboundedSender<ProgressNotificationParam>>,
    early: VecDeque<ProgressNotificationParam>,
}

impl ProgressRoutes {
    fn lock(&self) -> std::sync::MutexGuard<'_, RoutesInner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn deliver(&self, params: ProgressNotificationParam) {
        let mut inner = self.lock();
        match inner.routes.get(&params.progress_token) {
            Some(route) => {
                let _ = route.send(params);
            }
            None => {
                if inner.early.len() == EARLY_PROGRESS_LIMIT {
                    inner.early.pop_front();
                }
                inner.early.push_back(params);
            }
        }
    }

    /// Sends the progress of `token` to `route` until the returned guard is dropped.
    pub(crate) fn register(
        self: &Arc<Self>,
        token: ProgressToken,
        route: mpsc::UnboundedSender<ProgressNotificationParam>,
    ) -> RouteGuard {
        let mut inner = self.lock();
        let mut kept = VecDeque::with_capacity(inner.early.len());
        for params in inner.early.drain(..) {
            if params.progress_token == token {
                let _ = route.send(params);
            } else {
                kept.push_back(params);
            }
        }
        inner.early = kept;
        inner.routes.insert(token.clone(), route);
        RouteGuard {
            routes: Arc::clone(self),
            token,
        }
    }
}

/// Removes a call's progress route when the call ends, however it ends.
pub(crate) struct RouteGuard {
    routes: Arc<ProgressRoutes>,
    token: ProgressToken,
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        self.routes.lock().routes.remove(&self.token);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(token: &str, value: f64) -> ProgressNotificationParam {
        ProgressNotificationParam::new(
            ProgressToken(rmcp::model::NumberOrString::String(token.into())),
            value,
        )
    }

    #[test]
    fn progress_that_arrives_before_its_call_registered_is_handed_over() {
        let routes = Arc::new(ProgressRoutes::default());
        routes.deliver(progress("a", 1.0));
        routes.deliver(progress("b", 1.0));
        let (tx, mut rx) = mpsc::unbounded_channel();
        let guard = routes.register(progress("a", 0.0).progress_token, tx);
        routes.deliver(progress("a", 2.0));
        assert_eq!(rx.try_recv().unwrap().progress, 1.0);
        assert_eq!(rx.try_recv().unwrap().progress, 2.0);
        assert!(rx.try_recv().is_err());
        // Another call's early progress stays for that call; after the guard drops, a late
        // notification for "a" no longer reaches the finished call.
        assert_eq!(routes.lock().early.len(), 1);
        drop(guard);
        routes.deliver(progress("a", 3.0));
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn unclaimed_progress_is_bounded() {
        let routes = ProgressRoutes::default();
        for step in 0..(EARLY_PROGRESS_LIMIT * 3) {
            routes.deliver(progress("nobody", step as f64));
        }
        assert_eq!(routes.lock().early.len(), EARLY_PROGRESS_LIMIT);
    }
}
