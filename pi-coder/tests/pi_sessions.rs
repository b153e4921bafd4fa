//! Sessions in pi's format: pi's own files (recorded with pi 0.73.1's `SessionManager`, see
//! `sessions/pi-0.73.1/record.mjs`) give the conversation pi itself would resume and are
//! continued in place as pi continues them; this crate's earlier files are migrated; a bad line
//! is a clear error that changes nothing.

use std::path::{Path, PathBuf};

use pi_coder::{FORMAT_VERSION, Session, SessionError, SessionFormat};
use pi_runtime::{AssistantContent, AssistantMessage, Message, StopReason};
use serde_json::json;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/sessions/pi-0.73.1")
        .join(name)
}

/// What pi's `buildSessionContext` + `convertToLlm` gave for the recording.
fn pi_context(name: &str) -> Vec<Message> {
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_branched_pi_session_reads_as_pi_resumes_it() {
    let saved = Session::read(&fixture("branched.jsonl")).unwrap();
    assert_eq!(saved.format, SessionFormat::Pi(3));
    assert_eq!(saved.messages, pi_context("branched.context.json"));
    // The abandoned branch is not in the conversation.
    let text = serde_json::to_string(&saved.messages).unwrap();
    assert!(!text.contains("Abandoned"), "{text}");
    assert_eq!(saved.messages.len(), 10);
}

#[test]
fn a_compacted_pi_session_starts_with_pi_summary() {
    let saved = Session::read(&fixture("compacted.jsonl")).unwrap();
    assert_eq!(saved.messages, pi_context("compacted.context.json"));
    let Message::User(first) = &saved.messages[0] else {
        panic!("{:?}", saved.messages[0]);
    };
    assert!(
        first.content[0]
            .as_text()
            .unwrap()
            .starts_with("The conversation history before this point was compacted"),
        "{first:?}"
    );
}

#[test]
fn resuming_a_pi_session_appends_to_pi_s_file_as_pi_does() {
    let dir = tempfile::tempdir().unwrap();
    let pi_file = dir.path().join("pi.jsonl");
    std::fs::copy(fixture("branched.jsonl"), &pi_file).unwrap();
    let before = std::fs::read_to_string(&pi_file).unwrap();
    let mut resumed = Session::resume(&pi_file).unwrap();
    assert_eq!(resumed.session.path(), pi_file);
    let leaf = resumed.session.leaf_id().unwrap().to_owned();
    resumed.session.append(&Message::user("next")).unwrap();
    resumed.session.append(&answer("done")).unwrap();
    let after = std::fs::read_to_string(&pi_file).unwrap();
    assert!(
        after.starts_with(&before),
        "pi's lines stay as pi wrote them"
    );
    let added: Vec<serde_json::Value> = after[before.len()..]
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(added.len(), 2);
    assert_eq!(
        added[0]["parentId"],
        json!(leaf),
        "the new entry hangs off pi's leaf"
    );
    assert_eq!(added[1]["parentId"], added[0]["id"]);
    assert_eq!(added[0]["id"].as_str().unwrap().len(), 8);
    assert!(added[0]["timestamp"].as_str().unwrap().ends_with('Z'));
    // Reading it again gives pi's conversation plus the two new messages.
    let copy = Session::read(&pi_file).unwrap();
    assert_eq!(copy.format, SessionFormat::Pi(3));
    assert_eq!(copy.messages.len(), resumed.messages.len() + 2);
    assert_eq!(
        copy.messages[..resumed.messages.len()],
        resumed.messages[..]
    );
}

fn answer(text: &str) -> Message {
    Message::Assistant(AssistantMessage::new(
        vec![AssistantContent::text(text)],
        StopReason::Stop,
    ))
}

#[test]
fn a_file_of_this_crate_s_earlier_format_is_migrated_to_pi_s() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.jsonl");
    std::fs::write(
        &path,
        "{\"type\":\"session\",\"format\":\"pi-tool\",\"version\":2,\"id\":\"0123456789abcdef\",\"timestamp\":1796128317055,\"cwd\":\"/p\"}\n\
         {\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}],\"timestamp\":1796128317055}}\n\
         {\"type\":\"message\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"hello\"}],\"stopReason\":\"stop\",\"timestamp\":1796128317056}}\n",
    )
    .unwrap();
    assert_eq!(
        Session::read(&path).unwrap().format,
        SessionFormat::PiTool(2)
    );
    let resumed = Session::resume(&path).unwrap();
    assert_eq!(resumed.messages.len(), 2);
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines[0],
        json!({"type":"session","version":3,"id":"0123456789abcdef","timestamp":"2026-12-01T12:31:57.055Z","cwd":"/p"})
    );
    assert_eq!(lines[1]["parentId"], serde_json::Value::Null);
    assert_eq!(lines[2]["parentId"], lines[1]["id"]);
    assert_eq!(Session::read(&path).unwrap().format, SessionFormat::Pi(3));
}

#[test]
fn a_file_pi_appended_to_without_ids_reads_whole() {
    // pi 0.73.1 on a file of our earlier format: it rewrote the header to version 3, kept our
    // entries (no ids) and appended its own, the first naming no parent.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crossed.jsonl");
    std::fs::write(
        &path,
        "{\"type\":\"session\",\"format\":\"pi-tool\",\"version\":3,\"id\":\"x\",\"timestamp\":1796128317055,\"cwd\":\"/p\"}\n\
         {\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":\"one\",\"timestamp\":1}}\n\
         {\"type\":\"message\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"two\"}],\"stopReason\":\"stop\",\"timestamp\":2}}\n\
         {\"type\":\"thinking_level_change\",\"id\":\"aaaaaaaa\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"thinkingLevel\":\"off\"}\n\
         {\"type\":\"message\",\"id\":\"bbbbbbbb\",\"parentId\":\"aaaaaaaa\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"back in pi\"}],\"timestamp\":3}}\n",
    )
    .unwrap();
    let resumed = Session::resume(&path).unwrap();
    let roles: Vec<&str> = resumed.messages.iter().map(Message::role).collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
}

#[test]
fn every_message_kind_survives_a_round_trip_in_our_format() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let (mut session, earlier) = Session::open_or_create(&path, dir.path()).unwrap();
    assert!(earlier.is_empty());
    let mut written = pi_context("branched.context.json");
    let mut failed =
        AssistantMessage::new(vec![AssistantContent::text("partial")], StopReason::Error);
    failed.error_message = Some("HTTP 500: boom".into());
    written.push(Message::Assistant(failed));
    for message in &written {
        session.append(message).unwrap();
    }
    drop(session);
    let header: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert!(header.get("format").is_none(), "pi's header");
    assert_eq!(header["version"], json!(FORMAT_VERSION));
    let (_, read) = Session::open_or_create(&path, dir.path()).unwrap();
    assert_eq!(read, written);
}

#[test]
fn a_corrupt_line_in_a_pi_file_is_named_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pi.jsonl");
    let original = std::fs::read_to_string(fixture("branched.jsonl")).unwrap();
    let mut lines: Vec<&str> = original.lines().collect();
    lines.insert(4, "{\"type\":\"message\",\"id\":\"x\",");
    let text = lines.join("\n") + "\n";
    std::fs::write(&path, &text).unwrap();
    let err = Session::read(&path).unwrap_err();
    assert!(
        err.to_string().contains("pi.jsonl:5: not a session entry"),
        "{err}"
    );
    let err = Session::resume(&path).unwrap_err();
    assert!(
        matches!(err, SessionError::Corrupt { line: 5, .. }),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

#[test]
fn a_pi_file_cut_short_keeps_everything_before_the_cut() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pi.jsonl");
    let original = std::fs::read_to_string(fixture("compacted.jsonl")).unwrap();
    // Cut in the middle of the last entry, as a crash while pi wrote it would.
    let cut = original.trim_end().len() - 20;
    std::fs::write(&path, &original[..cut]).unwrap();
    let saved = Session::read(&path).unwrap();
    let full = pi_context("compacted.context.json");
    assert_eq!(saved.messages, full[..full.len() - 1]);
}

#[test]
fn a_message_that_is_not_a_message_is_an_error_naming_the_entry() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pi.jsonl");
    std::fs::write(
        &path,
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/\"}\n\
         {\"type\":\"message\",\"id\":\"a1\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"message\":{\"role\":\"assistant\",\"content\":\"not blocks\"}}\n",
    )
    .unwrap();
    let err = Session::read(&path).unwrap_err();
    assert!(
        err.to_string().contains("entry \"a1\": not a message"),
        "{err}"
    );
}

#[test]
fn a_newer_format_version_is_refused_with_its_number() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("future.jsonl");
    std::fs::write(
        &path,
        "{\"type\":\"session\",\"format\":\"pi-tool\",\"version\":99,\"id\":\"x\",\"timestamp\":0,\"cwd\":\"/\"}\n",
    )
    .unwrap();
    let err = Session::open_or_create(&path, dir.path()).unwrap_err();
    assert!(
        err.to_string()
            .contains("session format version 99 is newer"),
        "{err}"
    );
}

#[test]
fn listing_finds_ours_and_pi_sessions_and_skips_other_files() {
    let dir = tempfile::tempdir().unwrap();
    let pi_dir = dir.path().join("pi");
    std::fs::create_dir_all(&pi_dir).unwrap();
    std::fs::copy(fixture("compacted.jsonl"), pi_dir.join("a.jsonl")).unwrap();
    std::fs::write(pi_dir.join("broken.jsonl"), "not a session\n").unwrap();
    let ours = dir.path().join("ours");
    let mut session = Session::create(Session::new_path(&ours), dir.path()).unwrap();
    session
        .append(&Message::user("  newest\n prompt "))
        .unwrap();
    session.append(&answer("ok")).unwrap();
    let listed = Session::list(&[ours.clone(), pi_dir.clone()]);
    let latest = Session::latest(&[ours.clone(), pi_dir.clone()]).unwrap();
    assert!(
        latest.starts_with(&ours) || latest == pi_dir.join("a.jsonl"),
        "{latest:?}"
    );
    assert_eq!(Session::latest(&[dir.path().join("none")]), None);
    assert_eq!(listed.len(), 2, "{listed:?}");
    let newest = listed.iter().find(|s| s.path.starts_with(&ours)).unwrap();
    assert_eq!(newest.first_prompt, "newest prompt");
    assert_eq!(newest.format, SessionFormat::Pi(3));
    let pi = listed.iter().find(|s| s.path.starts_with(&pi_dir)).unwrap();
    assert_eq!(
        pi.messages, 6,
        "pi's count: every message entry, compacted ones too"
    );
}
