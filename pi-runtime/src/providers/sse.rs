//! Server-sent events (the `text/event-stream` format every provider streams in), decoded from
//! bytes as they arrive, in time linear in the bytes.

/// One server-sent event: its `event:` name (empty when absent) and its `data:` lines joined
/// with `\n`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, or empty.
    pub event: String,
    /// The `data:` field (several `data:` lines joined with `\n`).
    pub data: String,
}

/// Splits a byte stream into [`SseEvent`]s. Chunks may end anywhere, also inside a line or a
/// UTF-8 character; lines end with `\n`, `\r\n` or `\r`; `:` comments and `id:`/`retry:` fields
/// are skipped.
///
/// ```
/// use pi_runtime::providers::SseDecoder;
///
/// let mut decoder = SseDecoder::new();
/// let mut events = decoder.push(b"event: ping\nda");
/// events.extend(decoder.push(b"ta: {\"a\":1}\n\n"));
/// assert_eq!(events.len(), 1);
/// assert_eq!((events[0].event.as_str(), events[0].data.as_str()), ("ping", "{\"a\":1}"));
/// ```
#[derive(Debug, Default)]
pub struct SseDecoder {
    line: Vec<u8>,
    after_cr: bool,
    pending: SseEvent,
    has_data: bool,
    unframed: String,
}

/// How much text outside event fields is kept (enough for a provider's error object).
const UNFRAMED_LIMIT: usize = 4096;

impl SseDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        SseDecoder::default()
    }

    /// Feeds bytes; returns the events they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        let mut rest = bytes;
        while let Some(position) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            let (line, tail) = rest.split_at(position);
            let is_lf_after_cr = self.after_cr && line.is_empty() && tail[0] == b'\n';
            self.after_cr = tail[0] == b'\r';
            rest = &tail[1..];
            if is_lf_after_cr {
                continue;
            }
            self.line.extend_from_slice(line);
            self.end_line(&mut events);
        }
        if !rest.is_empty() {
            self.after_cr = false;
            self.line.extend_from_slice(rest);
        }
        events
    }

    /// Lines that are not event fields (nor comments), joined with `\n`, up to 4 KiB. Event
    /// streams have none, but some servers write a plain JSON error into the stream when it
    /// fails midway (Gemini does); the caller can report it.
    ///
    /// ```
    /// use pi_runtime::providers::SseDecoder;
    ///
    /// let mut decoder = SseDecoder::new();
    /// let events = decoder.push(b"data: {}\n\n{\n  \"error\": {\"code\": 499}\n}\n");
    /// assert_eq!(events.len(), 1);
    /// assert_eq!(decoder.unframed(), "{\n  \"error\": {\"code\": 499}\n}");
    /// ```
    pub fn unframed(&self) -> &str {
        &self.unframed
    }

    /// The stream ended: returns the last event when it was not followed by a blank line.
    pub fn finish(&mut self) -> Option<SseEvent> {
        let mut events = Vec::new();
        if !self.line.is_empty() {
            self.end_line(&mut events);
        }
        self.dispatch(&mut events);
        events.pop()
    }

    fn end_line(&mut self, events: &mut Vec<SseEvent>) {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            self.dispatch(events);
            return;
        }
        if line[0] == b':' {
            return;
        }
        let text = String::from_utf8_lossy(&line);
        let (field, value) = match text.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (text.as_ref(), ""),
        };
        match field {
            "event" => self.pending.event = value.to_owned(),
            "data" => {
                if self.has_data {
                    self.pending.data.push('\n');
                }
                self.pending.data.push_str(value);
                self.has_data = true;
            }
            "id" | "retry" => {}
            _ => self.keep_unframed(&text),
        }
        self.line = line;
        self.line.clear();
    }

    fn keep_unframed(&mut self, line: &str) {
        if self.unframed.len() + line.len() >= UNFRAMED_LIMIT {
            return;
        }
        if !self.unframed.is_empty() {
            self.unframed.push('\n');
        }
        self.unframed.push_str(line);
    }

    fn dispatch(&mut self, events: &mut Vec<SseEvent>) {
        if self.has_data {
            events.push(std::mem::take(&mut self.pending));
        }
        self.pending = SseEvent::default();
        self.has_data = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STREAM: &str = ": comment\r\nevent: a\r\ndata: one\r\ndata: two\r\n\r\ndata:{\"x\":\"é\"}\n\nid: 3\rdata: last\r\r";

    fn decode_in_chunks(size: usize) -> Vec<SseEvent> {
        let mut decoder = SseDecoder::new();
        let mut events: Vec<SseEvent> = STREAM
            .as_bytes()
            .chunks(size)
            .flat_map(|c| decoder.push(c))
            .collect();
        events.extend(decoder.finish());
        events
    }

    #[test]
    fn every_chunking_gives_the_same_events() {
        let whole = decode_in_chunks(STREAM.len());
        assert_eq!(
            whole,
            vec![
                SseEvent {
                    event: "a".into(),
                    data: "one\ntwo".into()
                },
                SseEvent {
                    event: String::new(),
                    data: "{\"x\":\"é\"}".into()
                },
                SseEvent {
                    event: String::new(),
                    data: "last".into()
                },
            ]
        );
        for size in 1..STREAM.len() {
            assert_eq!(decode_in_chunks(size), whole, "chunks of {size}");
        }
    }

    #[test]
    fn an_event_without_a_final_blank_line_is_returned_by_finish() {
        let mut decoder = SseDecoder::new();
        assert!(decoder.push(b"data: [DONE]").is_empty());
        assert_eq!(decoder.finish().map(|e| e.data), Some("[DONE]".to_owned()));
        assert_eq!(decoder.finish(), None);
    }
}
