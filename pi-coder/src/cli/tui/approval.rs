//! Approval questions in the interface: an [`Approver`] whose questions the interface shows
//! under the call's box (`Run this command? [y]es / [N]o / [a]lways`) and answers with one key
//! (`y`, `a`; anything else, Escape and Ctrl+C decline). Other hosts of the agent that need the
//! user's word on a call ([`ask`]) go through the same channel.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::{mpsc, oneshot};

use crate::agent::{ApprovalRequest, Approver};

/// The question shown.
pub(crate) const QUESTION: &str = "Run this command? [y]es / [N]o / [a]lways";

/// A question waiting for the user: what to show, and where the answer goes.
pub(crate) struct Question {
    pub(crate) text: String,
    pub(crate) detail: String,
    reply: oneshot::Sender<Answer>,
}

/// The user's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    Yes,
    No,
    Always,
}

impl Question {
    pub(crate) fn answer(self, answer: Answer) {
        let _ = self.reply.send(answer);
    }
}

/// The answer a key gives: `y` yes, `a` always, anything else no.
pub(crate) fn answer_for(c: char) -> Answer {
    match c.to_ascii_lowercase() {
        'y' => Answer::Yes,
        'a' => Answer::Always,
        _ => Answer::No,
    }
}

/// Where the interface receives questions.
pub(crate) type Questions = mpsc::UnboundedReceiver<Question>;

/// Sends questions to the interface; cheap to clone.
#[derive(Clone)]
pub(crate) struct Asker(mpsc::UnboundedSender<Question>);

/// A new channel of questions.
pub(crate) fn channel() -> (Asker, Questions) {
    let (sender, receiver) = mpsc::unbounded_channel();
    (Asker(sender), receiver)
}

impl Asker {
    /// Asks the user `text` (with `detail` under it, e.g. the command) in the interface; `No`
    /// when the interface is gone. For any host in pi-coder that needs the user's word.
    pub(crate) async fn ask(&self, text: &str, detail: &str) -> Answer {
        let (reply, answer) = oneshot::channel();
        let question = Question {
            text: text.to_owned(),
            detail: detail.to_owned(),
            reply,
        };
        if self.0.send(question).is_err() {
            return Answer::No;
        }
        answer.await.unwrap_or(Answer::No)
    }

    /// The agent's approver for `bash` calls: asks each command, unless `a` was answered
    /// before; an aborted run declines.
    pub(crate) fn approver(&self) -> Approver {
        let always = Arc::new(AtomicBool::new(false));
        let asker = self.clone();
        Arc::new(move |request: ApprovalRequest| {
            let asker = asker.clone();
            let always = Arc::clone(&always);
            Box::pin(async move {
                if always.load(Ordering::Relaxed) {
                    return true;
                }
                let detail = format!("$ {}", request.command);
                let answer = tokio::select! {
                    answer = asker.ask(QUESTION, &detail) => answer,
                    () = request.signal.cancelled() => Answer::No,
                };
                if answer == Answer::Always {
                    always.store(true, Ordering::Relaxed);
                }
                answer != Answer::No
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn answers_reach_the_approver_and_always_sticks() {
        let (asker, mut questions) = channel();
        let approver = asker.approver();
        let signal = pi_tool::CancellationToken::new();
        let request = |command: &str| ApprovalRequest {
            call_id: "c1".into(),
            command: command.into(),
            signal: signal.clone(),
        };
        let first = tokio::spawn(approver(request("ls")));
        let question = questions.recv().await.unwrap();
        assert_eq!(question.text, QUESTION);
        assert_eq!(question.detail, "$ ls");
        question.answer(answer_for('a'));
        assert!(first.await.unwrap());
        // After "always", no question.
        assert!(approver(request("rm x")).await);
        assert!(questions.try_recv().is_err());

        let (asker, mut questions) = channel();
        let declined = tokio::spawn(ask_later(asker));
        questions.recv().await.unwrap().answer(answer_for('n'));
        assert!(!declined.await.unwrap());
    }

    async fn ask_later(asker: Asker) -> bool {
        matches!(
            asker.ask("Continue?", "").await,
            Answer::Yes | Answer::Always
        )
    }
}
