//! Panic guards: a panicking hook or model becomes an error value, never a crashed run.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};

use futures_util::FutureExt;

/// The message of a panic payload (`&str` or `String`), or a placeholder.
pub(crate) fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(message) = panic.downcast_ref::<&str>() {
        (*message).to_owned()
    } else if let Some(message) = panic.downcast_ref::<String>() {
        message.clone()
    } else {
        "the panic carried no message".to_owned()
    }
}

/// Calls `make` and awaits the future it returns; a panic in either becomes `Err(message)`.
pub(crate) async fn guarded<F, Fut>(make: F) -> Result<Fut::Output, String>
where
    F: FnOnce() -> Fut,
    Fut: Future,
{
    let future = catch_unwind(AssertUnwindSafe(make)).map_err(|panic| panic_message(&*panic))?;
    AssertUnwindSafe(future)
        .catch_unwind()
        .await
        .map_err(|panic| panic_message(&*panic))
}
