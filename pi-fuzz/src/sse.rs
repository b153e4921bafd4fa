//! Target: the server-sent-events parser every provider stream goes through.

use pi_runtime::providers::{SseDecoder, SseEvent};

use crate::split::byte_pieces;

/// Input: a split seed byte, then a byte stream. Asserts, for any bytes and any split:
///
/// - the events (and the unframed text kept for error reports) are the same as when the whole
///   stream arrives in one piece;
/// - no event name or data holds a line break other than the `\n` joining `data:` lines (and
///   names none at all), and the unframed text stays within its 4 KiB bound;
/// - every `data:` line of the stream is accounted for: the events hold at most as many data
///   lines as the stream has lines.
pub fn sse(data: &[u8]) {
    let Some((&seed, body)) = data.split_first() else {
        return;
    };
    let (whole, whole_unframed) = decode(&[body]);
    let (split, split_unframed) = decode(&byte_pieces(body, seed));
    assert_eq!(split, whole, "events depend on the split");
    assert_eq!(
        split_unframed, whole_unframed,
        "unframed text depends on the split"
    );
    assert!(
        whole_unframed.len() <= 4096,
        "unframed text over its 4 KiB bound"
    );
    let lines = body.iter().filter(|&&b| b == b'\n' || b == b'\r').count() + 1;
    let data_lines: usize = whole.iter().map(|e| e.data.matches('\n').count() + 1).sum();
    assert!(
        data_lines <= lines,
        "{data_lines} data lines from {lines} lines"
    );
    for event in &whole {
        assert!(!event.event.contains(['\n', '\r']), "{event:?}");
        assert!(!event.data.contains('\r'), "{event:?}");
    }
}

fn decode(pieces: &[&[u8]]) -> (Vec<SseEvent>, String) {
    let mut decoder = SseDecoder::new();
    let mut events = Vec::new();
    for piece in pieces {
        events.extend(decoder.push(piece));
    }
    events.extend(decoder.finish());
    // A finished decoder has nothing more.
    assert_eq!(decoder.finish(), None, "a second finish found an event");
    (events, decoder.unframed().to_owned())
}
