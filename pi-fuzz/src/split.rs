//! Cutting an input into the pieces a stream would deliver: the first byte of a target's input
//! seeds the cut points, so the fuzzer explores splits as well as contents.

/// `text` cut into pieces of 1 to 16 bytes (lengths drawn from `seed`), each moved forward to
/// the next character boundary so every piece is a `&str`.
pub(crate) fn str_pieces(text: &str, seed: u8) -> Vec<&str> {
    let mut rng = fastrand::Rng::with_seed(u64::from(seed));
    let mut pieces = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + rng.usize(1..=16)).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        pieces.push(&text[start..end]);
        start = end;
    }
    pieces
}

/// `bytes` cut into pieces of 1 to 16 bytes drawn from `seed` (UTF-8 characters may be split).
pub(crate) fn byte_pieces(bytes: &[u8], seed: u8) -> Vec<&[u8]> {
    let mut rng = fastrand::Rng::with_seed(u64::from(seed));
    let mut pieces = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let (piece, tail) = rest.split_at(rng.usize(1..=16).min(rest.len()));
        pieces.push(piece);
        rest = tail;
    }
    pieces
}
