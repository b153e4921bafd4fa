//! Sessions: ours round-trip, pi's own files (recorded with pi 0.73.1's `SessionManager`, see
//! `sessions/pi-0.73.1/record.mjs`) give the conversation pi itself would resume, and a bad line
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
fn resuming_a_pi_session_continues_in_a_file_of_ours_and_leaves_pi_file_alone() {
    let dir = tempfile::tempdir().unwrap();
    let pi_file = dir.path().join("pi.jsonl");
    std::fs::copy(fixture("branched.jsonl"), &pi_file).unwrap();
    let before = std::fs::read(&pi_file).unwrap();
    let ours = dir.path().join("ours");
    let mut resumed = Session::resume(&pi_file, dir.path(), &ours).unwrap();
    assert_eq!(resumed.imported_from.as_deref(), Some(pi_file.as_path()));
    assert!(resumed.session.path().starts_with(&ours));
    resumed.session.append(&Message::user("next")).unwrap();
    assert_eq!(std::fs::read(&pi_file).unwrap(), before);

    let copy = Session::read(resumed.session.path()).unwrap();
    assert_eq!(
        copy.format,
        SessionFormat::PiTool(u64::from(FORMAT_VERSION))
    );
    assert_eq!(copy.messages.len(), resumed.messages.len() + 1);
    assert_eq!(
        copy.messages[..resumed.messages.len()],
        resumed.messages[..]
    );
    // Appending to pi's file directly is refused.
    let err = Session::open_or_create(&pi_file, dir.path()).unwrap_err();
    assert!(matches!(err, SessionError::PiFormat { .. }), "{err}");
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
    assert_eq!(header["format"], "pi-tool");
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
    let err = Session::resume(&path, dir.path(), &dir.path().join("ours")).unwrap_err();
    assert!(
        matches!(err, SessionError::Corrupt { line: 5, .. }),
        "{err}"
    );
    assert!(!dir.path().join("ours").exists());
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
    let listed = Session::list(&[ours.clone(), pi_dir.clone()]);
    let latest = Session::latest(&[ours.clone(), pi_dir.clone()]).unwrap();
    assert!(
        latest.starts_with(&ours) || latest == pi_dir.join("a.jsonl"),
        "{latest:?}"
    );
    assert_eq!(Session::latest(&[dir.path().join("none")]), None);
    assert_eq!(listed.len(), 2, "{listed:?}");
    let newest = listed
        .iter()
        .find(|s| s.format == SessionFormat::PiTool(2))
        .unwrap();
    assert_eq!(newest.first_prompt, "newest prompt");
    let pi = listed
        .iter()
        .find(|s| s.format == SessionFormat::Pi(3))
        .unwrap();
    assert_eq!(pi.messages, 5);
}
