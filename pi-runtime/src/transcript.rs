//! [`Transcript`]: the messages a hook is shown, shared with the run instead of copied.

use std::cell::RefCell;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use crate::message::Message;

/// A snapshot of a run's transcript (or of the messages it added), as the turn and tool-call
/// hooks see it. It derefs to `[Arc<Message>]`, so `len()`, `iter()`, `last()` and indexing
/// work as on a slice.
///
/// Taking one costs one reference count, whatever the transcript's length: the snapshot
/// shares the run's own buffer. The run appends to that buffer in place while no snapshot of
/// it is alive; a snapshot kept past the run's next message makes that append copy the
/// buffer once (one pointer per message), and the snapshot keeps showing the messages it was
/// taken with. Hooks that look at the context and drop it, as most do, never cause a copy.
///
/// ```
/// use std::sync::Arc;
/// use pi_runtime::{Message, Transcript};
///
/// let transcript = Transcript::from(vec![Arc::new(Message::user("hi"))]);
/// let snapshot = transcript.clone();
/// assert_eq!(snapshot.len(), 1);
/// assert_eq!(snapshot[0].role(), "user");
/// assert!(Transcript::shares_buffer(&transcript, &snapshot));
/// ```
#[derive(Clone, Default, PartialEq)]
pub struct Transcript {
    messages: Arc<Vec<Arc<Message>>>,
}

impl Transcript {
    /// An empty transcript.
    pub fn new() -> Self {
        Transcript::default()
    }

    /// Whether `a` and `b` are views of one buffer (neither was copied from the other).
    pub fn shares_buffer(a: &Transcript, b: &Transcript) -> bool {
        Arc::ptr_eq(&a.messages, &b.messages)
    }

    /// The messages as a vector: no copy when this is the buffer's only view.
    pub fn into_vec(self) -> Vec<Arc<Message>> {
        Arc::try_unwrap(self.messages).unwrap_or_else(|shared| shared.as_ref().clone())
    }

    /// Appends a message: in place while no other view of the buffer is alive.
    pub(crate) fn push(&mut self, message: Arc<Message>) {
        Arc::make_mut(&mut self.messages).push(message);
    }

    /// Makes room for `additional` more messages (in place while no other view is alive).
    pub(crate) fn reserve(&mut self, additional: usize) {
        Arc::make_mut(&mut self.messages).reserve(additional);
    }

    /// Takes the messages out, leaving the transcript empty.
    pub(crate) fn take(&mut self) -> Vec<Arc<Message>> {
        std::mem::take(self).into_vec()
    }
}

impl Extend<Arc<Message>> for Transcript {
    fn extend<I: IntoIterator<Item = Arc<Message>>>(&mut self, messages: I) {
        Arc::make_mut(&mut self.messages).extend(messages);
    }
}

impl Deref for Transcript {
    type Target = [Arc<Message>];

    fn deref(&self) -> &[Arc<Message>] {
        &self.messages
    }
}

impl AsRef<[Arc<Message>]> for Transcript {
    fn as_ref(&self) -> &[Arc<Message>] {
        &self.messages
    }
}

impl From<Vec<Arc<Message>>> for Transcript {
    fn from(messages: Vec<Arc<Message>>) -> Self {
        Transcript {
            messages: Arc::new(messages),
        }
    }
}

/// Another view of the same buffer (what `clone` gives).
impl From<&Transcript> for Transcript {
    fn from(transcript: &Transcript) -> Self {
        transcript.clone()
    }
}

impl From<Transcript> for Vec<Arc<Message>> {
    fn from(transcript: Transcript) -> Self {
        transcript.into_vec()
    }
}

impl<'a> IntoIterator for &'a Transcript {
    type Item = &'a Arc<Message>;
    type IntoIter = std::slice::Iter<'a, Arc<Message>>;

    fn into_iter(self) -> Self::IntoIter {
        self.messages.iter()
    }
}

impl fmt::Debug for Transcript {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.messages.iter()).finish()
    }
}

thread_local! {
    /// The transcript of the model request being made on this thread (see [`lend`]).
    static LENT: RefCell<Option<Transcript>> = const { RefCell::new(None) };
}

/// Runs `start` (a model's synchronous `stream` call, which gets `transcript` as a borrowed
/// slice) with `transcript` lent on this thread, so that a model of this crate that keeps an
/// owned copy of the request ([`ScriptedModel`](crate::ScriptedModel),
/// [`FnModel`](crate::FnModel)) takes a snapshot instead of copying every pointer.
pub(crate) fn lend<R>(transcript: &Transcript, start: impl FnOnce() -> R) -> R {
    /// Takes the lent transcript back, also when `start` panics.
    struct Return;
    impl Drop for Return {
        fn drop(&mut self) {
            LENT.with(|lent| lent.borrow_mut().take());
        }
    }
    LENT.with(|lent| *lent.borrow_mut() = Some(transcript.clone()));
    let _return = Return;
    start()
}

/// `messages` as an owned snapshot: the lent transcript when `messages` is exactly its slice
/// (one reference count), else a copy of the pointers.
pub(crate) fn snapshot_of(messages: &[Arc<Message>]) -> Transcript {
    LENT.with(|lent| {
        lent.borrow()
            .as_ref()
            .filter(|lent| std::ptr::eq(lent.as_ref(), messages))
            .cloned()
    })
    .unwrap_or_else(|| Transcript::from(messages.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(text: &str) -> Arc<Message> {
        Arc::new(Message::user(text))
    }

    #[test]
    fn a_snapshot_shares_the_buffer() {
        let mut transcript = Transcript::new();
        transcript.push(message("a"));
        let snapshot = transcript.clone();
        assert!(Transcript::shares_buffer(&transcript, &snapshot));
        assert_eq!(snapshot.as_ptr(), transcript.as_ptr());
    }

    #[test]
    fn appending_after_the_snapshots_are_gone_does_not_copy() {
        let mut transcript = Transcript::from(Vec::with_capacity(4));
        transcript.push(message("a"));
        let buffer = transcript.as_ptr();
        drop(transcript.clone());
        transcript.push(message("b"));
        transcript.extend([message("c")]);
        assert_eq!(transcript.as_ptr(), buffer);
        assert_eq!(transcript.len(), 3);
    }

    #[test]
    fn a_kept_snapshot_keeps_its_messages() {
        let mut transcript = Transcript::new();
        transcript.push(message("a"));
        let snapshot = transcript.clone();
        transcript.push(message("b"));
        assert_eq!(snapshot.len(), 1);
        assert_eq!(transcript.len(), 2);
        assert!(Arc::ptr_eq(&snapshot[0], &transcript[0]));
        assert!(!Transcript::shares_buffer(&transcript, &snapshot));
        assert_eq!(transcript.take().len(), 2);
        assert!(transcript.is_empty());
    }

    #[test]
    fn a_lent_transcript_is_snapshot_only_for_its_own_slice() {
        let transcript = Transcript::from(vec![message("a"), message("b")]);
        let copy = transcript.to_vec();
        lend(&transcript, || {
            assert!(Transcript::shares_buffer(
                &snapshot_of(&transcript),
                &transcript
            ));
            let part = snapshot_of(&transcript[..1]);
            assert!(!Transcript::shares_buffer(&part, &transcript));
            assert_eq!(part.len(), 1);
            assert!(!Transcript::shares_buffer(&snapshot_of(&copy), &transcript));
        });
        let after = snapshot_of(&transcript);
        assert!(
            !Transcript::shares_buffer(&after, &transcript),
            "returned after the call"
        );
        assert_eq!(after.len(), 2);
    }
}
