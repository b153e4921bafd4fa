//! What both stores share: the header (the state without its transcript, a revision, and the
//! length and checksum of the stored transcript), its checks on load, and the claim that
//! writes a resumed run as it goes. A backend only stores text: a header, and message lines
//! appended after the ones it holds.

use std::sync::{Arc, Mutex, MutexGuard};

use serde::{Deserialize, Serialize};

use super::lock::RunLock;
use super::{RunClaim, StoreError};
use crate::message::Message;
use crate::run_state::{RunState, reads_format};

/// The stored header of a run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct Header {
    /// The state without its transcript (`messages` is empty).
    pub(super) state: RunState,
    /// How many messages the transcript holds.
    pub(super) message_count: u64,
    /// How many bytes its lines take (each line ends with `\n`).
    pub(super) message_bytes: u64,
    /// The CRC-32 of those bytes.
    pub(super) message_crc: u32,
}

impl Header {
    /// The header of `state`, whose transcript is stored as `lines` (each with its `\n`).
    fn new(state: &RunState, lines: &[String]) -> Header {
        let mut header = Header {
            state: without_messages(state),
            message_count: 0,
            message_bytes: 0,
            message_crc: 0,
        };
        header.add_lines(lines);
        header
    }

    fn add_lines(&mut self, lines: &[String]) {
        let mut crc = crc32fast::Hasher::new_with_initial_len(self.message_crc, self.message_bytes);
        for line in lines {
            crc.update(line.as_bytes());
            self.message_bytes += line.len() as u64;
        }
        self.message_crc = crc.finalize();
        self.message_count += lines.len() as u64;
    }

    /// The stored text: the header's CRC-32 in hex, a newline, the header as JSON.
    pub(super) fn to_text(&self) -> String {
        let json = serde_json::to_string(self).unwrap_or_default();
        format!("{:08x}\n{json}", crc32fast::hash(json.as_bytes()))
    }

    /// Reads a stored header, checking its checksum and format.
    pub(super) fn from_text(run: &str, text: &str) -> Result<Header, StoreError> {
        let damaged = |what: &str| StoreError::Damaged {
            run: run.to_owned(),
            what: what.to_owned(),
        };
        let (sum, json) = text
            .split_once('\n')
            .ok_or_else(|| damaged("the header is cut short"))?;
        let sum =
            u32::from_str_radix(sum, 16).map_err(|_| damaged("the header has no checksum"))?;
        if crc32fast::hash(json.as_bytes()) != sum {
            return Err(damaged(
                "the header does not match its checksum (changed or cut)",
            ));
        }
        #[derive(Deserialize)]
        struct Format {
            state: FormatOnly,
        }
        #[derive(Deserialize)]
        struct FormatOnly {
            format: u32,
        }
        let format: Format = serde_json::from_str(json)
            .map_err(|err| damaged(&format!("the header is not a run header: {err}")))?;
        if !reads_format(format.state.format) {
            return Err(StoreError::UnsupportedFormat {
                run: run.to_owned(),
                found: format.state.format,
            });
        }
        serde_json::from_str(json)
            .map_err(|err| damaged(&format!("the header is not a run header: {err}")))
    }

    /// The state: this header's, with the stored transcript `lines` (checked against the
    /// header's count, length and checksum).
    pub(super) fn into_state(self, run: &str, lines: &str) -> Result<RunState, StoreError> {
        let damaged = |what: String| StoreError::Damaged {
            run: run.to_owned(),
            what,
        };
        let bytes = usize::try_from(self.message_bytes).unwrap_or(usize::MAX);
        if lines.len() < bytes {
            return Err(damaged(format!(
                "the transcript is cut: {} bytes stored, {bytes} written",
                lines.len()
            )));
        }
        // Bytes past the recorded length are an append that did not finish: not part of it.
        let lines = &lines[..bytes];
        if crc32fast::hash(lines.as_bytes()) != self.message_crc {
            return Err(damaged(
                "the transcript does not match its checksum (changed)".to_owned(),
            ));
        }
        let mut messages = Vec::with_capacity(self.message_count as usize);
        for (index, line) in lines.lines().enumerate() {
            let message: Message = serde_json::from_str(line)
                .map_err(|err| damaged(format!("message {index} is not a message: {err}")))?;
            messages.push(Arc::new(message));
        }
        if messages.len() as u64 != self.message_count {
            return Err(damaged(format!(
                "the transcript holds {} messages, {} written",
                messages.len(),
                self.message_count
            )));
        }
        let mut state = self.state;
        state.messages = messages;
        Ok(state)
    }
}

/// `state` without its transcript (the header's part).
fn without_messages(state: &RunState) -> RunState {
    RunState {
        format: state.format,
        system_prompt: state.system_prompt.clone(),
        messages: Vec::new(),
        waiting: state.waiting.clone(),
        nested: state.nested.clone(),
        activated_tools: state.activated_tools.clone(),
        requests: state.requests,
        decisions: state.decisions.clone(),
        started: state.started.clone(),
        finished: state.finished.clone(),
        revision: state.revision,
    }
}

/// Each message as one JSON line.
pub(super) fn lines(messages: &[Arc<Message>]) -> Vec<String> {
    messages
        .iter()
        .map(|message| {
            let mut line = serde_json::to_string(message).unwrap_or_default();
            line.push('\n');
            line
        })
        .collect()
}

/// What a store keeps, as text.
pub(super) trait Backend: Send + Sync + 'static {
    /// Stores a new run: its header and transcript lines. Fails if the run exists.
    fn create(&self, run: &str, header: &str, lines: &[String]) -> Result<(), StoreError>;
    /// The stored header and transcript bytes.
    fn read(&self, run: &str) -> Result<(String, String), StoreError>;
    /// The stored header alone (what a claim checks: the transcript is not read).
    fn read_header(&self, run: &str) -> Result<String, StoreError>;
    /// Appends `lines` after the first `bytes_before` bytes of the transcript (dropping any
    /// bytes after them) and replaces the header, as one atomic step for the header.
    ///
    /// `durable`: the record must survive a power cut before this returns (a call's start, a
    /// pause, an end). Other records (decisions, a call's result, a turn's messages) may wait
    /// for the next durable one, as long as no later record is kept without them: a power cut
    /// loses them together with everything after them, so the run is as it was at the last
    /// durable record (a call started there and not finished is interrupted, as after a crash
    /// during it).
    fn append(
        &self,
        run: &str,
        bytes_before: u64,
        lines: &[String],
        header: &str,
        durable: bool,
    ) -> Result<(), StoreError>;
    /// Takes the run's lock (refused while held elsewhere).
    fn lock(&self, run: &str) -> Result<RunLock, StoreError>;
}

/// Creates a run in `backend`.
pub(super) fn create(backend: &dyn Backend, state: &RunState) -> Result<String, StoreError> {
    let run = super::new_run_id();
    let lines = lines(&state.messages);
    let header = Header::new(state, &lines);
    backend.create(&run, &header.to_text(), &lines)?;
    Ok(run)
}

/// Loads a run from `backend`.
pub(super) fn load(backend: &dyn Backend, run: &str) -> Result<(Header, RunState), StoreError> {
    super::check_run_id(run)?;
    let (header_text, lines) = backend.read(run)?;
    let header = Header::from_text(run, &header_text)?;
    let state = header.clone().into_state(run, &lines)?;
    Ok((header, state))
}

/// Claims a run of `backend` for resuming `state`.
pub(super) fn claim<B: Backend>(
    backend: Arc<B>,
    run: &str,
    state: &RunState,
) -> Result<Box<dyn RunClaim>, StoreError> {
    super::check_run_id(run)?;
    let lock = backend.lock(run)?;
    // The header alone: `state` was loaded and checked whole; what a claim needs to know is
    // whether the run changed since (parsing the transcript again doubled a resume's cost).
    let header = Header::from_text(run, &backend.read_header(run)?)?;
    if header.state.revision != state.revision {
        return Err(StoreError::Stale {
            run: run.to_owned(),
            loaded: state.revision,
            stored: header.state.revision,
        });
    }
    Ok(Box::new(Claim {
        backend,
        run: run.to_owned(),
        header: Mutex::new(header),
        _lock: lock,
    }))
}

/// A held run: the header as stored, rewritten (with any new messages) on each record.
struct Claim<B: Backend> {
    backend: Arc<B>,
    run: String,
    header: Mutex<Header>,
    _lock: RunLock,
}

impl<B: Backend> Claim<B> {
    fn header(&self) -> MutexGuard<'_, Header> {
        self.header
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Applies `change` to a copy of the header, appends the messages of `transcript` past the
    /// stored ones, and writes both; the held header changes only once they are written.
    fn write(
        &self,
        transcript: &[Arc<Message>],
        durable: bool,
        change: impl FnOnce(&mut Header),
    ) -> Result<(), StoreError> {
        let mut held = self.header();
        let mut header = held.clone();
        change(&mut header);
        let stored = usize::try_from(header.message_count).unwrap_or(usize::MAX);
        let new = lines(transcript.get(stored..).unwrap_or_default());
        let bytes_before = header.message_bytes;
        header.add_lines(&new);
        self.backend
            .append(&self.run, bytes_before, &new, &header.to_text(), durable)?;
        *held = header;
        Ok(())
    }
}

impl<B: Backend> RunClaim for Claim<B> {
    fn run_id(&self) -> &str {
        &self.run
    }

    fn record_decisions(&self, state: &RunState) -> Result<(), StoreError> {
        // Not durable by itself: the first call's start (durable) is written after it.
        self.write(&[], false, |header| {
            header.state.decisions = state.decisions.clone();
            header.state.revision += 1;
        })
    }

    fn call_started(&self, id: &str) -> Result<(), StoreError> {
        self.write(&[], true, |header| {
            header.state.started.insert(id.to_owned());
        })
    }

    fn call_finished(&self, id: &str, result: &Message) -> Result<(), StoreError> {
        // Not synced by itself: the next synced record (the next call's start, the pause or
        // the end) makes it durable with it. A kill -9 loses nothing (the commit is with the
        // system); a power cut before that sync leaves the call started and not finished,
        // which a resume treats as interrupted, as after a crash during the call.
        let result = Arc::new(result.clone());
        self.write(&[], false, |header| {
            header.state.finished.insert(id.to_owned(), result);
        })
    }

    fn append(&self, transcript: &[Arc<Message>]) -> Result<(), StoreError> {
        // A turn's messages: the results are already durable in `finished`, and an answer
        // lost with a power cut is asked for again.
        self.write(transcript, false, |_| {})
    }

    fn paused(&self, state: &RunState) -> Result<u64, StoreError> {
        let mut revision = 0;
        self.write(&state.messages, true, |header| {
            revision = header.state.revision + 1;
            header.state = without_messages(state);
            header.state.revision = revision;
        })?;
        Ok(revision)
    }

    fn ended(&self, transcript: &[Arc<Message>]) -> Result<(), StoreError> {
        self.write(transcript, true, |header| {
            header.state.waiting.clear();
            header.state.nested.clear();
            header.state.decisions.clear();
            header.state.started.clear();
            header.state.finished.clear();
            header.state.revision += 1;
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A backend that keeps the header and lines in memory and notes which writes it was asked
    /// to make durable.
    struct Recording {
        locks: tempfile::TempDir,
        header: Mutex<String>,
        durable: Mutex<Vec<bool>>,
    }

    impl Backend for Recording {
        fn create(&self, _: &str, header: &str, _: &[String]) -> Result<(), StoreError> {
            *self.header.lock().unwrap() = header.to_owned();
            Ok(())
        }
        fn read(&self, _: &str) -> Result<(String, String), StoreError> {
            Ok((self.header.lock().unwrap().clone(), String::new()))
        }
        fn read_header(&self, _: &str) -> Result<String, StoreError> {
            Ok(self.header.lock().unwrap().clone())
        }
        fn append(
            &self,
            _: &str,
            _: u64,
            _: &[String],
            header: &str,
            durable: bool,
        ) -> Result<(), StoreError> {
            *self.header.lock().unwrap() = header.to_owned();
            self.durable.lock().unwrap().push(durable);
            Ok(())
        }
        fn lock(&self, run: &str) -> Result<RunLock, StoreError> {
            RunLock::take(&self.locks.path().join(run), run)
        }
    }

    #[test]
    fn a_resume_with_one_call_syncs_only_the_call_s_start_and_the_pause() {
        let backend = Arc::new(Recording {
            locks: tempfile::tempdir().unwrap(),
            header: Mutex::new(String::new()),
            durable: Mutex::new(Vec::new()),
        });
        let state = RunState {
            format: 1,
            system_prompt: String::new(),
            messages: Vec::new(),
            waiting: Vec::new(),
            nested: Default::default(),
            activated_tools: Vec::new(),
            requests: 0,
            decisions: Default::default(),
            started: Default::default(),
            finished: Default::default(),
            revision: 0,
        };
        let run = create(backend.as_ref(), &state).unwrap();
        let claim = claim(Arc::clone(&backend), &run, &state).unwrap();
        let answer = Arc::new(Message::user("the model's next turn"));
        // The records a resume makes, in the loop's order.
        claim.record_decisions(&state).unwrap();
        claim.call_started("c1").unwrap();
        claim
            .call_finished("c1", &Message::user("the call's result"))
            .unwrap();
        claim.append(std::slice::from_ref(&answer)).unwrap();
        claim.paused(&state).unwrap();
        // The start is synced before the call runs; its result waits for the pause's sync.
        assert_eq!(
            *backend.durable.lock().unwrap(),
            [false, true, false, false, true]
        );
    }
}
