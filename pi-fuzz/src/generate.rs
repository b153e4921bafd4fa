//! Seeded structured inputs for the stable driver: mutations of stored corpus inputs that keep
//! enough structure (JSON values, lines, events) to reach past the first parse.

use fastrand::Rng;
use serde_json::{Map, Number, Value, json};

/// A random JSON value, at most `depth` containers deep, leaning on the values argument
/// normalization and decoders treat specially (numeric and boolean strings, nulls, big and
/// fractional numbers, JSON inside strings).
pub fn value(rng: &mut Rng, depth: usize) -> Value {
    let pick = if depth == 0 {
        rng.usize(0..10)
    } else {
        rng.usize(0..13)
    };
    match pick {
        0 => Value::Null,
        1 => Value::Bool(rng.bool()),
        2 => json!(rng.i64(-300..300)),
        3 => json!(rng.u64(..)),
        4 => json!(rng.i64(..)),
        5 => Number::from_f64(rng.f64() * 1e3 - 500.0).map_or(Value::Null, Value::Number),
        6 => Value::String(
            [
                "5", "5.5", "-1", "1e400", "true", "false", "null", "", "0x1f", "\u{0}", "é",
            ][rng.usize(0..11)]
            .to_owned(),
        ),
        7 => Value::String(["{}", "[]", "{\"name\":\"x\"}", "[1,2"][rng.usize(0..4)].to_owned()),
        8 => Value::String(word(rng)),
        9 => json!(1e300 * if rng.bool() { 1.0 } else { -1.0 }),
        10 => Value::Array(
            (0..rng.usize(0..4))
                .map(|_| value(rng, depth - 1))
                .collect(),
        ),
        _ => Value::Object(
            (0..rng.usize(0..4))
                .map(|_| (word(rng), value(rng, depth - 1)))
                .collect(),
        ),
    }
}

/// A short word, often one of the keys the tools and wire formats use.
pub fn word(rng: &mut Rng) -> String {
    const WORDS: [&str; 24] = [
        "name",
        "kind",
        "type",
        "t",
        "c",
        "items",
        "tags",
        "shape",
        "radius",
        "choices",
        "delta",
        "content",
        "tool_calls",
        "arguments",
        "index",
        "id",
        "text",
        "candidates",
        "parts",
        "functionCall",
        "usage",
        "finish_reason",
        "stop_reason",
        "flatCount",
    ];
    if rng.usize(0..4) == 0 {
        (0..rng.usize(0..6)).map(|_| rng.alphanumeric()).collect()
    } else {
        WORDS[rng.usize(0..WORDS.len())].to_owned()
    }
}

/// `value` with one to three random edits: a leaf replaced, a member removed or added, an item
/// removed or duplicated, a value wrapped in a string.
pub fn mutate(rng: &mut Rng, mut value: Value) -> Value {
    for _ in 0..rng.usize(1..=3) {
        edit(rng, &mut value);
    }
    value
}

fn edit(rng: &mut Rng, value: &mut Value) {
    // Walk down a random path, stopping early at random.
    match value {
        Value::Object(map) if !map.is_empty() && rng.usize(0..3) != 0 => {
            let index = rng.usize(0..map.len());
            let key = map.keys().nth(index).cloned().unwrap_or_default();
            match rng.usize(0..8) {
                0 => {
                    map.shift_remove(&key);
                }
                1 => {
                    map.insert(word(rng), self::value(rng, 2));
                }
                _ => {
                    if let Some(child) = map.get_mut(&key) {
                        edit(rng, child);
                    }
                }
            }
        }
        Value::Array(items) if !items.is_empty() && rng.usize(0..3) != 0 => {
            let index = rng.usize(0..items.len());
            match rng.usize(0..8) {
                0 => {
                    items.remove(index);
                }
                1 => {
                    let copy = items[index].clone();
                    items.insert(index, copy);
                }
                _ => edit(rng, &mut items[index]),
            }
        }
        other => {
            *other = match rng.usize(0..4) {
                0 => Value::String(other.to_string()),
                _ => self::value(rng, 2),
            };
        }
    }
}

/// A JSON text of `value` with random whitespace, sometimes cut short or with a byte changed.
pub fn json_text(rng: &mut Rng, value: &Value) -> String {
    let mut text = if rng.bool() {
        value.to_string()
    } else {
        serde_json::to_string_pretty(value).unwrap_or_default()
    };
    match rng.usize(0..6) {
        0 => {
            let mut cut = rng.usize(0..=text.len());
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
        }
        1 if !text.is_empty() => {
            let mut at = rng.usize(0..text.len());
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            let junk = ["\\", "\"", "\n", ",", "}", "]", "\u{1}", "é", "\\u12"][rng.usize(0..9)];
            text.insert_str(at, junk);
        }
        _ => {}
    }
    text
}

/// A body of lines (JSON events or SSE lines) with whole lines dropped, repeated, swapped or
/// edited (a JSON line through [`mutate`]), and sometimes cut at a random byte.
pub fn mutate_lines(rng: &mut Rng, body: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(body);
    let mut lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
    for _ in 0..rng.usize(1..=4) {
        if lines.is_empty() {
            break;
        }
        let index = rng.usize(0..lines.len());
        match rng.usize(0..6) {
            0 => {
                lines.remove(index);
            }
            1 => {
                let copy = lines[index].clone();
                lines.insert(rng.usize(0..=lines.len()), copy);
            }
            2 => {
                let other = rng.usize(0..lines.len());
                lines.swap(index, other);
            }
            _ => {
                let line = &lines[index];
                let (prefix, json) = match line.strip_prefix("data: ") {
                    Some(rest) => ("data: ", rest),
                    None => ("", line.as_str()),
                };
                if let Ok(parsed) = serde_json::from_str::<Value>(json) {
                    let mutated = mutate(rng, parsed);
                    lines[index] = format!("{prefix}{mutated}");
                }
            }
        }
    }
    let mut out = lines.join("\n").into_bytes();
    if rng.usize(0..5) == 0 {
        out.truncate(rng.usize(0..=out.len()));
    }
    out
}

/// Bytes drawn from the pieces of the event-stream syntax (field names, line ends of every kind,
/// a split UTF-8 character), for the SSE parser.
pub fn sse_bytes(rng: &mut Rng) -> Vec<u8> {
    const PIECES: [&[u8]; 16] = [
        b"data:",
        b"data: ",
        b"event:",
        b"id: 1",
        b"retry: 5",
        b":",
        b"\n",
        b"\r",
        b"\r\n",
        b"\n\n",
        b" ",
        b"{\"a\":1}",
        b"[DONE]",
        b"\xc3",
        b"\xa9",
        b"x",
    ];
    let mut out = Vec::new();
    for _ in 0..rng.usize(0..40) {
        out.extend_from_slice(PIECES[rng.usize(0..PIECES.len())]);
    }
    out
}

/// An object of random members (a tool's arguments with the wrong keys).
pub fn object(rng: &mut Rng) -> Value {
    Value::Object(
        (0..rng.usize(0..5))
            .map(|_| (word(rng), value(rng, 2)))
            .collect::<Map<String, Value>>(),
    )
}
