//! Steering messages for a running session: a second virtual object per session id, so that
//! they can be queued while `prompt` holds the session itself.

use pi_runtime::Message;
use restate_sdk::prelude::*;
use serde_json::Value;

/// The Restate name of the inbox object.
pub const INBOX_OBJECT: &str = "PiSessionInbox";
/// The state key of the queued steering messages.
const STEERING_KEY: &str = "steering";

/// The steering queue of each session, served as the virtual object `PiSessionInbox` (same key
/// as the session). Bind it next to a [`PiSession`](crate::PiSession) that has
/// [`with_steering`](crate::PiSession::with_steering).
#[derive(Clone, Copy, Debug, Default)]
pub struct PiSessionInbox;

#[restate_sdk::object]
impl PiSessionInbox {
    /// Queues a steering message.
    #[handler]
    async fn push(
        &self,
        ctx: ObjectContext<'_>,
        message: Json<Message>,
    ) -> Result<(), HandlerError> {
        let mut queued = ctx
            .get::<Json<Vec<Message>>>(STEERING_KEY)
            .await?
            .map(Json::into_inner)
            .unwrap_or_default();
        queued.push(message.into_inner());
        ctx.set(STEERING_KEY, Json(queued));
        Ok(())
    }

    /// Takes every queued message (the request body is ignored: send `null`).
    #[handler]
    async fn take(
        &self,
        ctx: ObjectContext<'_>,
        _request: Json<Value>,
    ) -> Result<Json<Vec<Message>>, HandlerError> {
        let queued = ctx
            .get::<Json<Vec<Message>>>(STEERING_KEY)
            .await?
            .unwrap_or_default();
        ctx.clear(STEERING_KEY);
        Ok(queued)
    }
}
