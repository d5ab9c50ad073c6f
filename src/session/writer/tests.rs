use std::sync::Arc;

use super::*;
use crate::llm::ToolCall;
use crate::plan::{PlanState, PlanStep, StepStatus};
use crate::redact::Redactor;
use crate::session::{Holder, SessionError, SessionStore};
use crate::transcript::Edit;

const SECRET: &str = "correct-horse-battery-staple-42";

fn store_in(home: &Path) -> SessionStore {
    let mut redactor = Redactor::new();
    redactor.add_secret(SECRET);
    SessionStore::new(home, Arc::new(redactor))
}

fn holder() -> Holder {
    Holder::this_process("odek test")
}

fn append(message: Message) -> Edit {
    Edit::Append { message }
}

fn delta(edits: Vec<Edit>, len: usize) -> TranscriptDelta {
    TranscriptDelta {
        edits,
        len,
        plan: None,
    }
}

/// A new session held by a writer, after its first turn began (snapshot on disk).
fn started(store: &SessionStore) -> SessionWriter {
    let session = store.new_session("m", None, "task", vec![Message::system("sys")]);
    let mut writer = store.create(session, &holder()).expect("create");
    writer.begin_turn().expect("begin");
    writer
}

fn journal_text(store: &SessionStore, id: &str) -> String {
    std::fs::read_to_string(journal::journal_path(store.dir(), id)).unwrap_or_default()
}

fn plan(version: u64, title: &str) -> PlanState {
    PlanState {
        version,
        steps: vec![PlanStep {
            id: "s1".into(),
            title: title.into(),
            status: StepStatus::InProgress,
            note: String::new(),
        }],
    }
}

#[test]
fn a_turn_journals_each_save_and_folds_them_into_a_complete_file() {
    let home = tempfile::tempdir().expect("tempdir");
    let store = store_in(home.path());
    let mut writer = started(&store);
    let id = writer.id().to_string();
    writer
        .save_delta(delta(vec![append(Message::user("go"))], 2))
        .expect("save");
    let mut call = Message::assistant("");
    call.tool_calls = vec![ToolCall::new("c1", "shell", r#"{"command":"ls"}"#)];
    let mut with_plan = delta(
        vec![
            append(call),
            append(Message::tool_result("c1", "shell", "a b")),
        ],
        4,
    );
    with_plan.plan = Some(plan(1, "look around"));
    writer.save_delta(with_plan).expect("save");
    assert_eq!(journal_text(&store, &id).lines().count(), 2);

    // A reader sees the journal without waiting for the writer.
    let seen = store.load(&id).expect("load while held");
    assert_eq!(seen.messages.len(), 4);
    assert_eq!(seen.turns, 1);
    assert_eq!(seen.revision, 2);
    assert_eq!(seen.plan, Some(plan(1, "look around")));

    let mut live = seen.messages.clone();
    live.push(Message::assistant("done"));
    writer
        .save_delta(delta(vec![append(Message::assistant("done"))], 5))
        .expect("save");
    writer.finish_turn(&mut live, run(10, 2)).expect("finish");
    assert!(
        !journal::journal_path(store.dir(), &id).exists(),
        "folded in"
    );
    let raw: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(store.dir().join(format!("{id}.json"))).expect("read"),
    )
    .expect("the snapshot alone is a complete session");
    assert_eq!(raw["messages"].as_array().map(Vec::len), Some(5));
    assert_eq!(raw["revision"], 3);
    assert_eq!(raw["input_tokens"], 10);
    assert_eq!(raw["plan"]["steps"][0]["title"], "look around");
}

#[test]
fn journal_lines_cost_the_batch_not_the_history() {
    let home = tempfile::tempdir().expect("tempdir");
    let store = store_in(home.path());
    let mut writer = started(&store);
    let id = writer.id().to_string();
    let mut len = 1;
    let mut sizes = Vec::new();
    for i in 0..200 {
        len += 1;
        let before = journal_text(&store, &id).len();
        writer
            .save_delta(delta(
                vec![append(Message::tool_result(
                    "c",
                    "shell",
                    format!("{i:04} {}", "x".repeat(2000)),
                ))],
                len,
            ))
            .expect("save");
        sizes.push(journal_text(&store, &id).len() - before);
    }
    // Only the revision's digits grow (1 → 200).
    let (min, max) = (sizes.iter().min(), sizes.iter().max());
    assert!(
        max.zip(min).is_some_and(|(max, min)| max - min <= 2),
        "every line costs the same however long the history: {min:?}..{max:?}"
    );
}

#[test]
fn secrets_are_redacted_in_the_journal_and_the_plan() {
    let home = tempfile::tempdir().expect("tempdir");
    let store = store_in(home.path());
    let mut writer = started(&store);
    let id = writer.id().to_string();
    let mut d = delta(
        vec![
            append(Message::user(format!("use {SECRET}"))),
            append(Message::tool_result("c", "shell", format!("out {SECRET}"))),
        ],
        3,
    );
    d.plan = Some(plan(1, &format!("deploy with {SECRET}")));
    writer.save_delta(d).expect("save");
    let text = journal_text(&store, &id);
    assert!(!text.contains(SECRET), "{text}");
    assert_eq!(text.matches(crate::redact::REDACTED).count(), 3, "{text}");
    let mut live = vec![
        Message::system("sys"),
        Message::user(format!("use {SECRET}")),
        Message::tool_result("c", "shell", format!("out {SECRET}")),
    ];
    writer.finish_turn(&mut live, run(0, 0)).expect("finish");
    let file = std::fs::read_to_string(store.dir().join(format!("{id}.json"))).expect("read");
    assert!(!file.contains(SECRET), "{file}");
    assert!(
        live[1].content.contains(SECRET),
        "the caller keeps its text"
    );
}

#[test]
fn a_crashed_writer_leaves_a_session_the_next_writer_folds() {
    let home = tempfile::tempdir().expect("tempdir");
    let store = store_in(home.path());
    let mut writer = started(&store);
    let id = writer.id().to_string();
    writer
        .save_delta(delta(vec![append(Message::user("go"))], 2))
        .expect("save");
    writer
        .save_delta(delta(vec![append(Message::assistant("half"))], 3))
        .expect("save");
    // A copy of the directory as a kill -9 leaves it: snapshot, journal, a torn line.
    let crashed = tempfile::tempdir().expect("tempdir");
    let sessions = crashed.path().join("sessions");
    std::fs::create_dir_all(&sessions).expect("mkdir");
    for entry in std::fs::read_dir(store.dir()).expect("readdir").flatten() {
        std::fs::copy(entry.path(), sessions.join(entry.file_name())).expect("copy");
    }
    let mut torn = std::fs::OpenOptions::new()
        .append(true)
        .open(journal::journal_path(&sessions, &id))
        .expect("open");
    std::io::Write::write_all(&mut torn, br#"{"rev":3,"at":"2026"#).expect("tear");
    drop(writer);

    let copy = store_in(crashed.path());
    let resumed = copy.open(&id, &holder()).expect("opens");
    assert_eq!(resumed.session().messages.len(), 3);
    assert!(
        !journal::journal_path(&sessions, &id).exists(),
        "folded at the next open"
    );
    drop(resumed);
    let reloaded = copy.load(&id).expect("loads");
    assert_eq!(
        reloaded.messages.last().map(|m| m.content.as_str()),
        Some("half")
    );
}

#[test]
fn a_journal_older_than_its_snapshot_is_skipped() {
    let home = tempfile::tempdir().expect("tempdir");
    let store = store_in(home.path());
    let mut writer = started(&store);
    let id = writer.id().to_string();
    writer
        .save_delta(delta(vec![append(Message::user("go"))], 2))
        .expect("save");
    let journal = journal_text(&store, &id);
    let mut live = vec![Message::system("sys"), Message::user("go")];
    writer.finish_turn(&mut live, run(0, 0)).expect("finish");
    // A crash between writing the snapshot and removing the journal leaves both.
    std::fs::write(journal::journal_path(store.dir(), &id), journal).expect("restore");
    let loaded = store.load(&id).expect("load");
    assert_eq!(
        loaded.messages.len(),
        2,
        "the line is already in the snapshot"
    );
}

#[test]
fn a_held_session_refuses_other_writers_and_maintenance() {
    let home = tempfile::tempdir().expect("tempdir");
    let store = store_in(home.path());
    let writer = started(&store);
    let id = writer.id().to_string();
    let busy = |r: Result<(), SessionError>| match r {
        Err(SessionError::Busy { holder, .. }) => {
            assert_eq!(
                holder.as_deref(),
                Some(format!("odek test (pid {})", std::process::id()).as_str())
            );
        }
        other => panic!("expected busy, got {other:?}"),
    };
    busy(store.open(&id, &holder()).map(|_| ()));
    busy(store.delete(&id).map(|_| ()));
    busy(store.trim(&id, 2).map(|_| ()));
    let mut copy = store.load(&id).expect("readers never block");
    busy(store.save(&mut copy).map(|_| ()));
    let cleanup = store.cleanup(0).expect("cleanup");
    assert_eq!(cleanup.deleted, 0);
    assert_eq!(cleanup.skipped_busy, vec![id.clone()]);
    drop(writer);
    assert!(store.delete(&id).expect("free now"));
    assert!(
        !crate::session::lock::lock_path(store.dir(), &id).exists(),
        "a deleted session leaves no lock file"
    );
}

#[test]
fn a_session_never_written_leaves_nothing_behind() {
    let home = tempfile::tempdir().expect("tempdir");
    let store = store_in(home.path());
    let session = store.new_session("m", None, "t", vec![Message::system("s")]);
    let writer = store.create(session, &holder()).expect("create");
    assert!(!writer.is_saved());
    drop(writer);
    let left: Vec<_> = std::fs::read_dir(store.dir())
        .expect("readdir")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_delta_that_does_not_fit_is_not_journaled_and_the_turn_end_rewrites_the_session() {
    let home = tempfile::tempdir().expect("tempdir");
    let store = store_in(home.path());
    let mut writer = started(&store);
    let id = writer.id().to_string();
    writer
        .save_delta(delta(vec![Edit::Remove { start: 3, end: 9 }], 0))
        .expect("not an error for the run");
    assert_eq!(journal_text(&store, &id), "");
    let mut live = vec![Message::system("sys"), Message::user("the truth")];
    writer.finish_turn(&mut live, run(0, 0)).expect("finish");
    let loaded = store.load(&id).expect("load");
    assert_eq!(loaded.messages, live);
}

#[test]
fn trusting_tool_result_redaction_still_redacts_everything_else() {
    let home = tempfile::tempdir().expect("tempdir");
    let store = store_in(home.path());
    let mut writer = started(&store);
    writer.trust_tool_result_redaction();
    let id = writer.id().to_string();
    let mut call = Message::assistant(format!("I will use {SECRET}"));
    call.reasoning_content = Some(format!("the key is {SECRET}"));
    call.tool_calls = vec![ToolCall::new(
        "c",
        "shell",
        serde_json::json!({"command": format!("echo {SECRET}")}).to_string(),
    )];
    writer
        .save_delta(delta(
            vec![
                append(Message::user(format!("use {SECRET}"))),
                append(call),
                append(Message::tool_result(
                    "c",
                    "shell",
                    "already redacted by the engine",
                )),
            ],
            4,
        ))
        .expect("save");
    let text = journal_text(&store, &id);
    assert!(!text.contains(SECRET), "{text}");
    assert!(text.contains("already redacted by the engine"));
}

#[test]
fn a_session_over_the_size_cap_is_not_re_serialised_every_batch() {
    let home = tempfile::tempdir().expect("tempdir");
    let store = store_in(home.path()).with_size_limit(64 * 1024);
    let mut writer = started(&store);
    let id = writer.id().to_string();
    let mut len = 1;
    while writer.journal_bytes() <= MIN_FOLD_BYTES + 8 * 1024 {
        len += 1;
        writer
            .save_delta(delta(
                vec![append(Message::tool_result("c", "shell", "x".repeat(4000)))],
                len,
            ))
            .expect("save");
    }
    assert!(
        writer.fold_at >= 2 * MIN_FOLD_BYTES,
        "the failed fold is put off until the journal doubles: {}",
        writer.fold_at
    );
    assert!(
        journal::journal_path(store.dir(), &id).exists(),
        "nothing lost"
    );
    // The turn's end drops the oldest groups to fit, from the file and the caller alike.
    let mut live = writer.session().messages.clone();
    let report = writer.finish_turn(&mut live, run(0, 0)).expect("finish");
    assert!(report.trimmed_messages > 0);
    assert_eq!(store.load(&id).expect("load").messages.len(), live.len());
}

fn run(input_tokens: u64, output_tokens: u64) -> RunRecord {
    RunRecord {
        input_tokens,
        output_tokens,
        ..RunRecord::default()
    }
}

#[test]
fn journal_lines_read_back_as_the_mirror_with_every_secret_redacted() {
    let home = tempfile::tempdir().expect("tempdir");
    let store = store_in(home.path());
    let mut writer = started(&store);
    let id = writer.id().to_string();
    // A long line first (its buffer is reused by the short ones after it), then saves whose
    // texts are checked together: clean, and with one secret among clean neighbours.
    let long = "x".repeat(100 * 1024);
    let wrapped = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=\n".repeat(3);
    let saves = [
        vec![append(Message::user(long))],
        vec![append(Message::assistant("short"))],
        vec![
            append(Message::system(wrapped.clone())),
            append(Message::assistant(format!("{wrapped}{SECRET}"))),
            append(Message::user("clean")),
        ],
        vec![Edit::Replace {
            index: 1,
            message: Message::user(format!("now {SECRET} again")),
        }],
    ];
    let mut len = writer.len();
    for (n, edits) in saves.into_iter().enumerate() {
        len += edits.iter().filter(|e| e.op() == "append").count();
        let mut d = delta(edits, len);
        d.plan = Some(plan(n as u64 + 1, &format!("step {n}")));
        writer.save_delta(d).expect("save");
    }
    let text = journal_text(&store, &id);
    assert!(!text.contains(SECRET), "{text}");
    assert_eq!(text.lines().count(), 4);
    assert!(text.lines().all(|l| l.starts_with("{\"rev\":")));
    let loaded = store.load(&id).expect("loads with the journal");
    assert_eq!(loaded.messages, writer.session().messages);
    assert_eq!(loaded.plan, writer.session().plan);
    assert_eq!(loaded.revision, writer.session().revision);
    assert!(
        loaded.messages[4]
            .content
            .ends_with(crate::redact::REDACTED)
    );
}
