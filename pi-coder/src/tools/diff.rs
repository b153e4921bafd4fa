//! pi's line-numbered diff (`generateDiffString` in edit-diff.ts): `+N`, `-N`, ` N` lines with
//! 4 lines of context around each change and ` ...` for what is skipped.

use similar::{DiffOp, TextDiff};

/// Lines of unchanged context shown next to a change.
const CONTEXT_LINES: usize = 4;

/// One run of lines: kept, removed or added.
enum Part<'a> {
    Same(Vec<&'a str>),
    Removed(Vec<&'a str>),
    Added(Vec<&'a str>),
}

impl Part<'_> {
    fn is_change(&self) -> bool {
        !matches!(self, Part::Same(_))
    }
}

/// The diff text and the first changed line (in the new file), as pi's edit tool reports them.
pub(crate) fn line_numbered_diff(old: &str, new: &str) -> (String, Option<usize>) {
    let diff = TextDiff::from_lines(old, new);
    let old_lines: Vec<&str> = diff
        .old_slices()
        .iter()
        .map(|l| l.trim_end_matches('\n'))
        .collect();
    let new_lines: Vec<&str> = diff
        .new_slices()
        .iter()
        .map(|l| l.trim_end_matches('\n'))
        .collect();
    let mut parts = Vec::new();
    for op in diff.ops() {
        match *op {
            DiffOp::Equal { old_index, len, .. } => {
                parts.push(Part::Same(old_lines[old_index..old_index + len].to_vec()))
            }
            DiffOp::Delete {
                old_index, old_len, ..
            } => {
                parts.push(Part::Removed(
                    old_lines[old_index..old_index + old_len].to_vec(),
                ));
            }
            DiffOp::Insert {
                new_index, new_len, ..
            } => {
                parts.push(Part::Added(
                    new_lines[new_index..new_index + new_len].to_vec(),
                ));
            }
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                parts.push(Part::Removed(
                    old_lines[old_index..old_index + old_len].to_vec(),
                ));
                parts.push(Part::Added(
                    new_lines[new_index..new_index + new_len].to_vec(),
                ));
            }
        }
    }

    let width = old
        .split('\n')
        .count()
        .max(new.split('\n').count())
        .to_string()
        .len();
    let skipped = format!(" {} ...", " ".repeat(width));
    let mut out: Vec<String> = Vec::new();
    let (mut old_no, mut new_no) = (1usize, 1usize);
    let mut first_changed = None;
    let mut last_was_change = false;
    for (index, part) in parts.iter().enumerate() {
        match part {
            Part::Removed(lines) | Part::Added(lines) => {
                first_changed.get_or_insert(new_no);
                let added = matches!(part, Part::Added(_));
                for line in lines {
                    if added {
                        out.push(format!("+{new_no:>width$} {line}"));
                        new_no += 1;
                    } else {
                        out.push(format!("-{old_no:>width$} {line}"));
                        old_no += 1;
                    }
                }
                last_was_change = true;
            }
            Part::Same(lines) => {
                let next_is_change = parts.get(index + 1).is_some_and(Part::is_change);
                if last_was_change && next_is_change && lines.len() > CONTEXT_LINES * 2 {
                    let hidden = lines.len() - 2 * CONTEXT_LINES;
                    for line in &lines[..CONTEXT_LINES] {
                        push_context(&mut out, line, width, &mut old_no, &mut new_no);
                    }
                    out.push(skipped.clone());
                    old_no += hidden;
                    new_no += hidden;
                    for line in &lines[lines.len() - CONTEXT_LINES..] {
                        push_context(&mut out, line, width, &mut old_no, &mut new_no);
                    }
                } else if last_was_change && next_is_change {
                    for line in lines {
                        push_context(&mut out, line, width, &mut old_no, &mut new_no);
                    }
                } else if last_was_change {
                    let shown = lines.len().min(CONTEXT_LINES);
                    for line in &lines[..shown] {
                        push_context(&mut out, line, width, &mut old_no, &mut new_no);
                    }
                    if lines.len() > shown {
                        out.push(skipped.clone());
                        old_no += lines.len() - shown;
                        new_no += lines.len() - shown;
                    }
                } else if next_is_change {
                    let hidden = lines.len().saturating_sub(CONTEXT_LINES);
                    if hidden > 0 {
                        out.push(skipped.clone());
                        old_no += hidden;
                        new_no += hidden;
                    }
                    for line in &lines[hidden..] {
                        push_context(&mut out, line, width, &mut old_no, &mut new_no);
                    }
                } else {
                    old_no += lines.len();
                    new_no += lines.len();
                }
                last_was_change = false;
            }
        }
    }
    (out.join("\n"), first_changed)
}

/// An unchanged line, numbered in the old file; both counters advance.
fn push_context(
    out: &mut Vec<String>,
    line: &str,
    width: usize,
    old_no: &mut usize,
    new_no: &mut usize,
) {
    out.push(format!(" {old_no:>width$} {line}"));
    *old_no += 1;
    *new_no += 1;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_pis_observed_format() {
        let (diff, first) = line_numbered_diff("line1\nline2\nline3\n", "line1\nLINE2\nline3\n");
        assert_eq!(diff, " 1 line1\n-2 line2\n+2 LINE2\n 3 line3");
        assert_eq!(first, Some(2));
    }

    #[test]
    fn skips_distant_context() {
        let old: String = (1..=20).map(|i| format!("l{i}\n")).collect();
        let new = old.replace("l10\n", "ten\n");
        let (diff, first) = line_numbered_diff(&old, &new);
        let expected = "    ...\n  6 l6\n  7 l7\n  8 l8\n  9 l9\n-10 l10\n+10 ten\n 11 l11\n 12 l12\n 13 l13\n 14 l14\n    ...";
        assert_eq!(diff, expected);
        assert_eq!(first, Some(10));
    }
}
