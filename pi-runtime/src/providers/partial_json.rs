//! Tool-call arguments that arrive in pieces: an incremental scanner that costs the size of
//! each piece, and a best-effort value of the arguments so far, built only when asked for.
//!
//! pi re-parses the whole buffer on every delta (quadratic in the number of deltas); here a
//! delta only advances a small state machine, and the final arguments are parsed once.

use serde_json::{Map, Value};

/// Accumulates streamed JSON text and tracks its structure as it grows.
///
/// [`push`](Self::push) costs the length of the pushed text. [`partial`](Self::partial) builds a
/// best-effort value of what arrived so far (incomplete members dropped, an unfinished string
/// value kept as far as it goes); it costs the size of the buffer, so call it when a value is
/// needed (a UI refresh), not on every delta. [`finish`](Self::finish) parses the whole text once.
///
/// ```
/// use pi_runtime::providers::PartialJson;
/// use serde_json::json;
///
/// let mut args = PartialJson::new();
/// args.push(r#"{"city": "Par"#);
/// assert_eq!(args.partial(), json!({"city": "Par"}));
/// args.push(r#"is", "days": 3"#);
/// assert_eq!(args.partial(), json!({"city": "Paris"}));
/// args.push("}");
/// assert_eq!(args.finish(), json!({"city": "Paris", "days": 3}));
/// ```
#[derive(Clone, Debug, Default)]
pub struct PartialJson {
    buffer: String,
    /// Open containers, innermost last.
    stack: Vec<Frame>,
    /// Where the scanner is inside the innermost container (or at the top level).
    token: Token,
    /// The text stopped being JSON at this byte; nothing after it is scanned.
    broken_at: Option<usize>,
    /// The top-level value is complete.
    complete: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Container {
    Object,
    Array,
}

#[derive(Clone, Copy, Debug)]
struct Frame {
    container: Container,
    /// Where an object is in its member grammar (unused for arrays).
    place: Place,
    /// Buffer length after the last complete member (or after the opening bracket).
    safe_len: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// After `{` or `,`: a key (or `}` after `{`) comes next.
    Key,
    /// After a key: `:` comes next.
    Colon,
    /// After `:` (or `[`/`,` in an array): a value comes next.
    Value,
    /// After a complete member: `,` or the closing bracket comes next.
    Separator,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Token {
    /// Between tokens.
    #[default]
    Between,
    /// Inside a string; `is_key` for object keys, `escape_at` where an unfinished escape began.
    Str {
        is_key: bool,
        escape_at: Option<usize>,
    },
    /// Inside a number or a `true`/`false`/`null` literal that began at `start`.
    Scalar { start: usize },
}

impl PartialJson {
    /// An empty buffer.
    pub fn new() -> Self {
        PartialJson::default()
    }

    /// The text received so far.
    pub fn as_str(&self) -> &str {
        &self.buffer
    }

    /// Whether a complete top-level value has arrived.
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// Appends a piece of JSON text, scanning only the new bytes.
    pub fn push(&mut self, piece: &str) {
        let start = self.buffer.len();
        self.buffer.push_str(piece);
        if self.broken_at.is_some() {
            return;
        }
        let mut index = start;
        while index < self.buffer.len() {
            // Inside a string only a quote or a backslash matters: skip to the next one.
            if let Token::Str {
                escape_at: None, ..
            } = self.token
            {
                let rest = &self.buffer.as_bytes()[index..];
                match rest.iter().position(|&b| b == b'"' || b == b'\\') {
                    Some(offset) => index += offset,
                    None => return,
                }
            }
            let byte = self.buffer.as_bytes()[index];
            if !self.step(index, byte) {
                self.broken_at = Some(index);
                return;
            }
            index += 1;
        }
    }

    /// Advances over one byte; false when the text is not JSON.
    fn step(&mut self, index: usize, byte: u8) -> bool {
        match self.token {
            Token::Str { is_key, escape_at } => {
                match (escape_at, byte) {
                    (Some(at), _) => {
                        // `\uXXXX` is six bytes; any other escape is two.
                        let long = self.buffer.as_bytes().get(at + 1) == Some(&b'u');
                        let done = if long { index >= at + 5 } else { true };
                        if done {
                            self.token = Token::Str {
                                is_key,
                                escape_at: None,
                            };
                        }
                    }
                    (None, b'\\') => {
                        self.token = Token::Str {
                            is_key,
                            escape_at: Some(index),
                        }
                    }
                    (None, b'"') => {
                        self.token = Token::Between;
                        if is_key {
                            self.set_place(Place::Colon);
                        } else {
                            self.value_done(index + 1);
                        }
                    }
                    _ => {}
                }
                true
            }
            Token::Scalar { .. } => {
                if byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'+' | b'-') {
                    return true;
                }
                self.token = Token::Between;
                self.value_done(index);
                self.step(index, byte)
            }
            Token::Between => self.between(index, byte),
        }
    }

    fn between(&mut self, index: usize, byte: u8) -> bool {
        if byte.is_ascii_whitespace() {
            return true;
        }
        if self.complete {
            return false;
        }
        let place = self
            .stack
            .last()
            .map(|frame| (frame.container, frame.place));
        match (place, byte) {
            (Some((Container::Object, Place::Key)), b'"') => {
                self.token = Token::Str {
                    is_key: true,
                    escape_at: None,
                };
                true
            }
            (Some((Container::Object, Place::Key)), b'}') => self.close(index, Container::Object),
            (Some((Container::Object, Place::Colon)), b':') => {
                self.set_place(Place::Value);
                true
            }
            (Some((container, Place::Separator)), b',') => {
                self.set_place(if container == Container::Object {
                    Place::Key
                } else {
                    Place::Value
                });
                true
            }
            (Some((Container::Object, Place::Separator)), b'}') => {
                self.close(index, Container::Object)
            }
            (Some((Container::Array, Place::Separator)), b']') => {
                self.close(index, Container::Array)
            }
            (Some((Container::Array, Place::Value)), b']') => {
                // `[]` and `[ ]` are fine; `[1,]` is not.
                let bytes = self.buffer.as_bytes();
                let empty = self.stack.last().is_some_and(|frame| {
                    bytes[frame.safe_len - 1] == b'['
                        && bytes[frame.safe_len..index]
                            .iter()
                            .all(u8::is_ascii_whitespace)
                });
                empty && self.close(index, Container::Array)
            }
            (None | Some((_, Place::Value)), _) => self.value_begins(index, byte),
            _ => false,
        }
    }

    fn value_begins(&mut self, index: usize, byte: u8) -> bool {
        match byte {
            b'{' | b'[' => {
                let container = if byte == b'{' {
                    Container::Object
                } else {
                    Container::Array
                };
                self.stack.push(Frame {
                    container,
                    place: if container == Container::Object {
                        Place::Key
                    } else {
                        Place::Value
                    },
                    safe_len: index + 1,
                });
                true
            }
            b'"' => {
                self.token = Token::Str {
                    is_key: false,
                    escape_at: None,
                };
                true
            }
            b'-' | b'0'..=b'9' | b't' | b'f' | b'n' => {
                self.token = Token::Scalar { start: index };
                true
            }
            _ => false,
        }
    }

    fn close(&mut self, index: usize, container: Container) -> bool {
        match self.stack.pop() {
            Some(frame) if frame.container == container => {
                self.value_done(index + 1);
                true
            }
            _ => false,
        }
    }

    /// A value ended at `end` (exclusive): the enclosing member is complete.
    fn value_done(&mut self, end: usize) {
        match self.stack.last_mut() {
            Some(frame) => {
                frame.place = Place::Separator;
                frame.safe_len = end;
            }
            None => self.complete = true,
        }
    }

    fn set_place(&mut self, place: Place) {
        if let Some(frame) = self.stack.last_mut() {
            frame.place = place;
        }
    }

    /// A best-effort value of the text so far: complete members, and an unfinished string value
    /// as far as it goes. Empty text gives `{}`; text that is not JSON gives what came before the
    /// first bad byte.
    pub fn partial(&self) -> Value {
        if self.complete
            && self.broken_at.is_none()
            && let Ok(value) = serde_json::from_str(&self.buffer)
        {
            return value;
        }
        let mut text = String::with_capacity(self.buffer.len() + self.stack.len() + 2);
        let scanned = self.broken_at.unwrap_or(self.buffer.len());
        let mut frames = self.stack.as_slice();
        match (self.broken_at, self.token) {
            (
                None,
                Token::Str {
                    is_key: false,
                    escape_at,
                },
            ) => {
                let end = escape_at.unwrap_or(scanned);
                text.push_str(&self.buffer[..end]);
                text.push('"');
                if frames.is_empty() {
                    return serde_json::from_str(&text)
                        .unwrap_or_else(|_| Value::Object(Map::new()));
                }
            }
            (None, Token::Scalar { start }) if frames.is_empty() => {
                return serde_json::from_str(&self.buffer[start..])
                    .unwrap_or_else(|_| Value::Object(Map::new()));
            }
            // Anything else unfinished (a key, a number, a literal) is dropped back to the end
            // of the last complete member.
            _ => match frames.last() {
                Some(innermost) => text.push_str(&self.buffer[..innermost.safe_len]),
                None => return Value::Object(Map::new()),
            },
        }
        // Close what is open, innermost first. An outer frame whose member is the inner
        // container is in `Value` place, so closing it is valid.
        while let Some((frame, rest)) = frames.split_last() {
            text.push(if frame.container == Container::Object {
                '}'
            } else {
                ']'
            });
            frames = rest;
        }
        serde_json::from_str(&text).unwrap_or_else(|_| Value::Object(Map::new()))
    }

    /// Parses the whole text once: the final arguments of a tool call.
    ///
    /// Empty text is `{}`. Text that is not JSON is repaired as pi does (raw control characters
    /// inside strings escaped, lone backslashes doubled). Text that stops inside an object or
    /// array (a call cut by the output limit) gives the best-effort [`partial`](Self::partial)
    /// value. Anything else that still is not JSON is returned as a string, so that argument
    /// validation reports it to the model.
    ///
    /// ```
    /// use pi_runtime::providers::PartialJson;
    /// use serde_json::json;
    ///
    /// let mut cut = PartialJson::new();
    /// cut.push(r#"{"path": "notes.txt", "lines": ["one", "tw"#);
    /// assert_eq!(cut.finish(), json!({"path": "notes.txt", "lines": ["one", "tw"]}));
    ///
    /// let mut broken = PartialJson::new();
    /// broken.push(r#"{"path": oops}"#);
    /// assert_eq!(broken.finish(), json!(r#"{"path": oops}"#));
    /// ```
    pub fn finish(self) -> Value {
        parse_arguments(&self.buffer)
    }

    /// The text so far is the beginning of an object or array that stopped early: no bad
    /// byte, nothing complete yet.
    fn is_cut_short(&self) -> bool {
        self.broken_at.is_none() && !self.complete && !self.stack.is_empty()
    }
}

/// Final arguments from the whole accumulated text; see [`PartialJson::finish`].
pub(crate) fn parse_arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(Map::new());
    }
    if let Ok(value) = serde_json::from_str(raw) {
        return value;
    }
    let repaired = repair_json(raw);
    if let Ok(value) = serde_json::from_str(&repaired) {
        return value;
    }
    let mut scanner = PartialJson::new();
    scanner.push(&repaired);
    if scanner.is_cut_short() {
        return scanner.partial();
    }
    Value::String(raw.to_owned())
}

/// Escapes raw control characters inside strings and doubles backslashes that start no valid
/// escape (pi's `repairJson`).
fn repair_json(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len() + 8);
    let mut in_string = false;
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if !in_string {
            in_string = c == '"';
            out.push(c);
            continue;
        }
        match c {
            '"' => {
                in_string = false;
                out.push(c);
            }
            '\\' => match chars.peek() {
                Some('"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't' | 'u') => {
                    out.push('\\');
                    if let Some(next) = chars.next() {
                        out.push(next);
                    }
                }
                _ => out.push_str("\\\\"),
            },
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn partial_after_each_byte(text: &str) -> Vec<Value> {
        let mut parser = PartialJson::new();
        let mut values = Vec::new();
        for (index, c) in text.char_indices() {
            parser.push(&text[index..index + c.len_utf8()]);
            values.push(parser.partial());
        }
        values
    }

    #[test]
    fn every_prefix_gives_an_object_that_only_grows() {
        let text = r#"{"a": [1, 2.5e3, {"b": "x\"y\u00e9"}], "c": true, "d": null, "e": {}}"#;
        let values = partial_after_each_byte(text);
        for value in &values {
            assert!(value.is_object(), "{value}");
        }
        assert_eq!(
            values.last(),
            Some(&serde_json::from_str::<Value>(text).unwrap())
        );
    }

    #[test]
    fn unfinished_members_are_dropped_and_strings_kept() {
        let cases = [
            ("", json!({})),
            ("{", json!({})),
            (r#"{"ci"#, json!({})),
            (r#"{"city""#, json!({})),
            (r#"{"city":"#, json!({})),
            (r#"{"city": "Pa"#, json!({"city": "Pa"})),
            (r#"{"city": "P\"#, json!({"city": "P"})),
            (r#"{"city": "P\u00"#, json!({"city": "P"})),
            (r#"{"n": 12"#, json!({})),
            (r#"{"n": 12,"#, json!({"n": 12})),
            (r#"{"n": tr"#, json!({})),
            (r#"{"a": [1, 2"#, json!({"a": [1]})),
            (r#"{"a": [1, 2]"#, json!({"a": [1, 2]})),
            (
                r#"{"a": {"b": "c"}, "d": [{"e""#,
                json!({"a": {"b": "c"}, "d": [{}]}),
            ),
        ];
        for (text, expected) in cases {
            let mut parser = PartialJson::new();
            parser.push(text);
            assert_eq!(parser.partial(), expected, "{text}");
        }
    }

    #[test]
    fn text_that_is_not_json_keeps_what_came_before() {
        let mut parser = PartialJson::new();
        parser.push(r#"{"a": 1, "b": ]"#);
        assert_eq!(parser.partial(), json!({"a": 1}));
        assert_eq!(parser.finish(), json!(r#"{"a": 1, "b": ]"#));
    }

    #[test]
    fn finish_gives_the_partial_value_of_text_cut_short() {
        let cases = [
            (r#"{"a": 1, "b": "x"#, json!({"a": 1, "b": "x"})),
            ("{\"text\": \"line1\nli", json!({"text": "line1\nli"})),
            (r#"[1, {"c": tr"#, json!([1, {}])),
            // Not the start of an object or array, or not JSON at all: kept as text.
            (r#""just a str"#, json!(r#""just a str"#)),
            (r#"{"a": 1}}"#, json!(r#"{"a": 1}}"#)),
            ("not json", json!("not json")),
        ];
        for (text, expected) in cases {
            let mut parser = PartialJson::new();
            parser.push(text);
            assert_eq!(parser.finish(), expected, "{text}");
        }
    }

    #[test]
    fn finish_repairs_raw_control_characters() {
        let mut parser = PartialJson::new();
        parser.push("{\"text\": \"line1\nline2 \\d\"}");
        assert_eq!(parser.finish(), json!({"text": "line1\nline2 \\d"}));
    }

    #[test]
    fn arbitrary_text_never_panics_and_valid_json_parses_exactly() {
        let alphabet: Vec<char> = "{}[]\":,\\ u0a1tfnrule.-eé\n".chars().collect();
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for _ in 0..5000 {
            let len = next(40);
            let text: String = (0..len).map(|_| alphabet[next(alphabet.len())]).collect();
            let mut parser = PartialJson::new();
            for (index, c) in text.char_indices() {
                parser.push(&text[index..index + c.len_utf8()]);
                if index % 3 == 0 {
                    let _ = parser.partial();
                }
            }
            let _ = parser.partial();
            if let Ok(expected) = serde_json::from_str::<Value>(&text) {
                assert_eq!(parser.finish(), expected, "{text:?}");
            }
        }
    }

    #[test]
    fn an_empty_array_with_whitespace_inside_is_json() {
        // Found by the `partial_json` fuzz target: `[ ]` broke the scan, so nothing after it
        // showed while the arguments streamed.
        let mut parser = PartialJson::new();
        parser.push("{\"a\": [\n], \"b\": [1 , [ ] ], \"c\": \"x");
        assert_eq!(parser.partial(), json!({"a": [], "b": [1, []], "c": "x"}));
        let mut bad = PartialJson::new();
        bad.push("[1, ]");
        assert_eq!(bad.partial(), json!([1]));
        assert!(!bad.is_complete());
    }

    #[test]
    fn completion_is_tracked() {
        let mut parser = PartialJson::new();
        parser.push(r#"{"a": [1]"#);
        assert!(!parser.is_complete());
        parser.push("} ");
        assert!(parser.is_complete());
    }
}
