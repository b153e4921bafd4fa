//! The result-size stage every host shares: the text of one result is cut to the host's
//! limit, with a note that tells the model how much was dropped and how to ask for less.

use crate::Content;

/// Cuts the text of a result to `max_bytes`, in place; a note saying how much was dropped
/// takes the place of the rest. Images are kept
/// ([`CallLimits::max_result_bytes`](crate::CallLimits::max_result_bytes)). Allocates nothing
/// when the text fits.
#[inline]
pub fn fit_result(content: &mut Vec<Content>, max_bytes: usize) {
    let total: usize = content
        .iter()
        .filter_map(Content::as_text)
        .map(str::len)
        .sum();
    if total > max_bytes {
        cut(content, max_bytes, total);
    }
}

/// The cut of [`fit_result`], for text over the limit.
fn cut(content: &mut Vec<Content>, max_bytes: usize, total: usize) {
    let mut budget = max_bytes;
    let mut kept = 0;
    content.retain_mut(|block| {
        let Content::Text { text } = block else {
            return true;
        };
        if budget == 0 {
            return false;
        }
        if text.len() > budget {
            // Cut here and drop later text: it would read as if it followed the cut directly.
            text.truncate(cut_point(text, budget));
            budget = 0;
        } else {
            budget -= text.len();
        }
        kept += text.len();
        !text.is_empty()
    });
    content.push(Content::text(format!(
        "[Tool output truncated: {kept} of {total} bytes shown. The rest exceeded the limit of \
         {max_bytes} bytes for one tool result. Ask for less at a time: a narrower \
         query, a smaller range, or an offset and limit.]"
    )));
}

/// The byte index to cut `text` at so at most `budget` bytes stay: after the last line break
/// in the second half of the budget, else at a character boundary.
fn cut_point(text: &str, budget: usize) -> usize {
    let mut cut = budget.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    match text[..cut].rfind('\n') {
        Some(line_end) if line_end + 1 >= cut / 2 => line_end + 1,
        _ => cut,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_cut_at_a_line_end_or_char_boundary() {
        let mut content = vec![Content::text("ab\ncd\nef"), Content::text("gh")];
        fit_result(&mut content, 7);
        assert_eq!(content[0].as_text(), Some("ab\ncd\n"));
        assert_eq!(
            content.len(),
            2,
            "the second block is dropped, the note added"
        );
        assert!(
            content[1]
                .as_text()
                .is_some_and(|note| note.starts_with("[Tool output truncated: 6 of 10 bytes shown"))
        );

        let mut content = vec![Content::text("ééé")];
        fit_result(&mut content, 3);
        assert_eq!(content[0].as_text(), Some("é"));
    }

    #[test]
    fn text_within_the_limit_is_left_alone() {
        let mut content = vec![Content::text("abc")];
        fit_result(&mut content, 3);
        assert_eq!(content, vec![Content::text("abc")]);
    }
}
