use std::os::unix::fs::MetadataExt;

use super::*;
use crate::llm::{Role, ToolCall};

const SECRET: &str = "correct-horse-battery-staple-42";

fn redactor_with_secret() -> Arc<Redactor> {
    let mut redactor = Redactor::new();
    redactor.add_secret(SECRET);
    Arc::new(redactor)
}

/// A store in a fresh temp home (kept alive by the returned guard).
fn temp_store() -> (tempfile::TempDir, SessionStore) {
    let home = tempfile::tempdir().expect("tempdir");
    let store = SessionStore::new(home.path(), redactor_with_secret());
    (home, store)
}

fn assistant_calling(id: &str, arguments: &str) -> Message {
    let mut m = Message::assistant("");
    m.tool_calls = vec![ToolCall::new(id, "shell", arguments)];
    m
}

fn sample_messages() -> Vec<Message> {
    vec![
        Message::system("You are odek."),
        Message::user("list the files"),
        assistant_calling("c1", r#"{"command":"ls"}"#),
        Message::tool_result("c1", "shell", "a.txt\nb.txt"),
        Message::assistant("There are two files."),
    ]
}

fn saved_session(store: &SessionStore, task: &str) -> Session {
    let mut session = store.new_session("test-model", None, task, sample_messages());
    store.save(&mut session).expect("save");
    session
}

fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("readdir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Writes a session file directly, bypassing `save` (to control `updated_at`).
fn write_raw_session(store: &SessionStore, session: &Session) {
    std::fs::create_dir_all(store.dir()).expect("mkdir");
    let bytes = serde_json::to_vec(session).expect("serialise");
    std::fs::write(store.dir().join(format!("{}.json", session.id)), bytes).expect("write");
}

fn listed_ids(list: &SessionList) -> Vec<String> {
    let mut ids: Vec<String> = list.sessions.iter().map(|s| s.id.clone()).collect();
    ids.sort();
    ids
}

fn raw_index_ids(store: &SessionStore) -> Vec<String> {
    let bytes = std::fs::read(store.dir().join("index.json")).expect("index exists");
    let entries: Vec<SessionSummary> = serde_json::from_slice(&bytes).expect("index parses");
    let mut ids: Vec<String> = entries.into_iter().map(|e| e.id).collect();
    ids.sort();
    ids
}

#[test]
fn a_saved_session_loads_back_identical() {
    let (_home, store) = temp_store();
    let mut session = store.new_session(
        "test-model",
        Some("https://api.example.test/v1"),
        "list the files",
        sample_messages(),
    );
    assert_eq!(session.turns, 1);
    assert!(!store.dir().exists(), "new_session does not write");
    session.input_tokens = 120;
    session.output_tokens = 30;
    let report = store.save(&mut session).expect("save");
    assert_eq!(report.trimmed_messages, 0);
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    let loaded = store.load(&session.id).expect("load");
    assert_eq!(loaded, session);
    assert_eq!(
        loaded.base_url.as_deref(),
        Some("https://api.example.test/v1")
    );
    let raw = std::fs::read(store.dir().join(format!("{}.json", session.id))).expect("raw");
    assert_eq!(report.bytes_written, raw.len() as u64);
    assert!(!raw.contains(&b'\n'), "session files are compact JSON");
}

#[test]
fn save_sets_timestamps_and_recounts_turns() {
    let (_home, store) = temp_store();
    let mut session = store.new_session("m", None, "t", sample_messages());
    session.created_at.clear();
    session.updated_at = "2020-01-01T00:00:00Z".into();
    session.turns = 99;
    session.messages.push(Message::user("again"));
    store.save(&mut session).expect("save");
    assert_eq!(session.turns, 2);
    assert_ne!(session.updated_at, "2020-01-01T00:00:00Z");
    assert_eq!(session.created_at, session.updated_at);
    assert!(crate::util::timestamp::parse_rfc3339(&session.updated_at).is_some());
}

#[test]
fn files_are_0600_and_the_directory_0700() {
    let (_home, store) = temp_store();
    let session = saved_session(&store, "t");
    let mode = |p: &Path| std::fs::metadata(p).expect("meta").mode() & 0o777;
    assert_eq!(mode(store.dir()), 0o700);
    assert_eq!(
        mode(&store.dir().join(format!("{}.json", session.id))),
        0o600
    );
    assert_eq!(mode(&store.dir().join("index.json")), 0o600);
}

#[test]
fn no_temp_file_is_left_behind_after_saves() {
    let (_home, store) = temp_store();
    let mut session = saved_session(&store, "t");
    session.messages.push(Message::user("more"));
    store.save(&mut session).expect("second save");
    let names = file_names(store.dir());
    assert_eq!(
        names,
        [
            ".index.lock".to_string(),
            format!("{}.json", session.id),
            format!("{}.lock", session.id),
            "index.json".to_string(),
            "index.stamp".to_string()
        ]
    );
}

fn session_with_secret_everywhere(store: &SessionStore) -> Session {
    let mut assistant = assistant_calling(
        "c1",
        &serde_json::json!({ "command": format!("deploy --token {SECRET}") }).to_string(),
    );
    assistant.content = format!("Using {SECRET} now");
    assistant.reasoning_content = Some(format!("the token is {SECRET}"));
    store.new_session(
        "m",
        None,
        &format!("deploy with {SECRET}"),
        vec![
            Message::system("sys"),
            Message::user(format!("deploy with {SECRET}")),
            assistant,
            Message::tool_result("c1", "shell", format!("token={SECRET}")),
        ],
    )
}

#[test]
fn registered_secrets_never_reach_the_disk_but_stay_in_memory() {
    let (_home, store) = temp_store();
    let mut session = session_with_secret_everywhere(&store);
    let before = session.clone();
    store.save(&mut session).expect("save");
    for name in file_names(store.dir()) {
        let raw = std::fs::read_to_string(store.dir().join(&name)).expect("read");
        assert!(!raw.contains(SECRET), "{name} holds the secret: {raw}");
    }
    let raw =
        std::fs::read_to_string(store.dir().join(format!("{}.json", session.id))).expect("read");
    assert!(raw.matches("[REDACTED]").count() >= 5, "{raw}");
    assert_eq!(
        session.messages, before.messages,
        "in-memory text is untouched"
    );
    assert_eq!(session.task, before.task);
    let loaded = store.load(&session.id).expect("load");
    let args: serde_json::Value =
        serde_json::from_str(&loaded.messages[2].tool_calls[0].function.arguments)
            .expect("redacted arguments are still JSON");
    assert_eq!(args["command"], "deploy --token [REDACTED]");
}

/// Saves a session whose content holds `secret` in a tool result, tool-call arguments,
/// reasoning and the task, and returns the raw file.
fn raw_file_after_saving_pattern_secret(secret: &str) -> String {
    let home = tempfile::tempdir().expect("tempdir");
    // No add_secret: only the redactor's built-in patterns can catch these.
    let store = SessionStore::new(home.path(), Arc::new(Redactor::new()));
    let mut assistant = assistant_calling(
        "c1",
        &serde_json::json!({ "content": format!("key = {secret}") }).to_string(),
    );
    assistant.reasoning_content = Some(format!("found {secret}"));
    let mut session = store.new_session(
        "m",
        None,
        &format!("use {secret}"),
        vec![
            Message::user(format!("use {secret}")),
            assistant,
            Message::tool_result("c1", "write_file", format!("wrote {secret}")),
        ],
    );
    store.save(&mut session).expect("save");
    std::fs::read_to_string(store.dir().join(format!("{}.json", session.id))).expect("read")
}

// The next three tests register no secret: only the redactor's patterns can pass them.

#[test]
fn openai_style_keys_are_redacted_by_pattern() {
    let secret = "sk-proj0123456789abcdefghijklmnopqrstuvwxyzABCD";
    let raw = raw_file_after_saving_pattern_secret(secret);
    assert!(!raw.contains(secret), "{raw}");
    assert!(
        !raw.contains("0123456789abcdefghijklmnopqrstuvwxyz"),
        "{raw}"
    );
}

#[test]
fn github_tokens_are_redacted_by_pattern() {
    let secret = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
    let raw = raw_file_after_saving_pattern_secret(secret);
    assert!(!raw.contains(secret), "{raw}");
    assert!(
        !raw.contains("0123456789abcdefghijklmnopqrstuvwxyz"),
        "{raw}"
    );
}

#[test]
fn pem_private_keys_are_redacted_by_pattern() {
    let body = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun";
    let secret = format!("-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----");
    let raw = raw_file_after_saving_pattern_secret(&secret);
    assert!(!raw.contains(body), "{raw}");
}

#[test]
fn a_crashed_write_leaves_the_good_file_and_the_listing_intact() {
    let (_home, store) = temp_store();
    let session = saved_session(&store, "t");
    // What a crash mid-write leaves: a torn temp file beside the real one.
    let torn = store
        .dir()
        .join(format!(".{}.json.tmp-0123456789abcdef", session.id));
    std::fs::write(&torn, b"{\"id\":\"torn").expect("write torn temp");
    let index_torn = store.dir().join(".index.json.tmp-fedcba9876543210");
    std::fs::write(&index_torn, b"[{").expect("write torn index temp");
    assert_eq!(store.load(&session.id).expect("load"), session);
    let list = store.list().expect("list");
    assert_eq!(listed_ids(&list), std::slice::from_ref(&session.id));
    assert!(list.problems.is_empty(), "{:?}", list.problems);
    assert_eq!(store.cleanup(365).expect("cleanup").deleted, 0);
    assert!(
        !torn.exists() && !index_torn.exists(),
        "cleanup removes leftovers"
    );
    assert_eq!(store.load(&session.id).expect("load"), session);
}

#[test]
fn a_corrupt_file_is_reported_by_name_and_hides_nothing_else() {
    let (_home, store) = temp_store();
    let good = saved_session(&store, "good one");
    let corrupt_id = "20260101-00000000000000000000000000000000";
    let corrupt_path = store.dir().join(format!("{corrupt_id}.json"));
    std::fs::write(&corrupt_path, b"{\"id\": tru").expect("write");
    let list = store.list().expect("list");
    assert_eq!(listed_ids(&list), std::slice::from_ref(&good.id));
    assert_eq!(list.problems.len(), 1, "{:?}", list.problems);
    assert!(
        list.problems[0].contains(&corrupt_path.display().to_string()),
        "{:?}",
        list.problems
    );
    // Reported again on every listing, until the user deals with it.
    assert_eq!(store.list().expect("list").problems.len(), 1);
    let err = store.load(corrupt_id).expect_err("corrupt").to_string();
    assert!(
        err.starts_with(&format!("session {corrupt_id}: file ")),
        "{err}"
    );
    assert!(err.contains(&corrupt_path.display().to_string()), "{err}");
    assert!(err.contains("is corrupt: "), "{err}");
    assert!(err.contains("line 1 column"), "{err}");
    assert_eq!(store.load(&good.id).expect("others load"), good);
    let mut good = good;
    store.save(&mut good).expect("saving others still works");
}

#[test]
fn a_missing_or_unreadable_index_is_rebuilt() {
    let (_home, store) = temp_store();
    let a = saved_session(&store, "a");
    let b = saved_session(&store, "b");
    let index = store.dir().join("index.json");
    std::fs::remove_file(&index).expect("remove index");
    let list = store.list().expect("list");
    assert_eq!(listed_ids(&list), {
        let mut ids = vec![a.id.clone(), b.id.clone()];
        ids.sort();
        ids
    });
    assert!(list.problems.is_empty());
    assert_eq!(
        raw_index_ids(&store),
        listed_ids(&list),
        "the index is rewritten"
    );
    std::fs::write(&index, b"not json").expect("corrupt index");
    assert_eq!(listed_ids(&store.list().expect("list")), listed_ids(&list));
    assert_eq!(raw_index_ids(&store), listed_ids(&list));
    let summary = list
        .sessions
        .iter()
        .find(|s| s.id == a.id)
        .expect("a listed");
    assert_eq!(summary, &a.summary());
}

#[test]
fn a_stale_index_is_reconciled_with_the_directory() {
    let (_home, store) = temp_store();
    let kept = saved_session(&store, "kept");
    let removed = saved_session(&store, "removed");
    std::fs::remove_file(store.dir().join(format!("{}.json", removed.id))).expect("rm");
    let mut added = store.new_session("other-model", None, "added behind its back", vec![]);
    added.updated_at = "2099-01-01T00:00:00Z".into();
    write_raw_session(&store, &added);
    let list = store.list().expect("list");
    let mut expected = vec![kept.id.clone(), added.id.clone()];
    expected.sort();
    assert_eq!(listed_ids(&list), expected);
    assert_eq!(list.sessions[0].id, added.id, "newest updated first");
    assert_eq!(list.sessions[0].model, "other-model");
    assert_eq!(list.sessions[0].title, "added behind its back");
    assert_eq!(raw_index_ids(&store), expected);
    assert_eq!(
        store.latest().expect("latest").map(|s| s.id),
        Some(added.id)
    );
}

#[test]
fn an_index_entry_for_a_deleted_file_disappears_from_the_listing() {
    let (_home, store) = temp_store();
    let a = saved_session(&store, "a");
    std::fs::remove_file(store.dir().join(format!("{}.json", a.id))).expect("rm");
    let list = store.list().expect("list");
    assert!(list.sessions.is_empty());
    assert!(raw_index_ids(&store).is_empty());
}

#[test]
fn listing_an_empty_home_is_empty() {
    let (_home, store) = temp_store();
    assert_eq!(store.list().expect("list"), SessionList::default());
    assert_eq!(store.latest().expect("latest"), None);
    assert!(!store.dir().exists(), "listing creates nothing");
}

#[test]
fn the_list_is_ordered_by_update_time() {
    let (_home, store) = temp_store();
    let mut older = store.new_session("m", None, "older", vec![]);
    older.updated_at = "2026-01-01T00:00:00Z".into();
    let mut newer = store.new_session("m", None, "newer", vec![]);
    newer.updated_at = "2026-02-01T00:00:00Z".into();
    write_raw_session(&store, &newer);
    write_raw_session(&store, &older);
    let titles: Vec<String> = store
        .list()
        .expect("list")
        .sessions
        .iter()
        .map(|s| s.title.clone())
        .collect();
    assert_eq!(titles, ["newer", "older"]);
    // Saving the older one makes it the latest.
    let mut older = store.load(&older.id).expect("load");
    store.save(&mut older).expect("save");
    assert_eq!(
        store.latest().expect("latest").map(|s| s.title),
        Some("older".into())
    );
}

#[test]
fn traversal_ids_are_rejected_everywhere() {
    let (home, store) = temp_store();
    std::fs::write(home.path().join("passwd.json"), b"{}").expect("bait");
    let long = "a".repeat(129);
    for bad in [
        "../etc/passwd",
        "a/b",
        "..",
        ".",
        "",
        "a\0b",
        "../passwd",
        long.as_str(),
    ] {
        assert!(
            matches!(store.load(bad), Err(SessionError::InvalidId { .. })),
            "load {bad:?}"
        );
        assert!(matches!(
            store.delete(bad),
            Err(SessionError::InvalidId { .. })
        ));
        assert!(matches!(
            store.trim(bad, 5),
            Err(SessionError::InvalidId { .. })
        ));
        let mut session = store.new_session("m", None, "t", vec![]);
        session.id = bad.to_string();
        assert!(matches!(
            store.save(&mut session),
            Err(SessionError::InvalidId { .. })
        ));
    }
    assert!(home.path().join("passwd.json").exists());
    assert!(!store.dir().exists(), "nothing was written");
}

#[test]
fn oversized_files_are_refused_before_reading() {
    let (_home, store) = temp_store();
    std::fs::create_dir_all(store.dir()).expect("mkdir");
    let id = "20260101-ffffffffffffffffffffffffffffffff";
    let path = store.dir().join(format!("{id}.json"));
    // Sparse: 40 MB of zero bytes, which would be "corrupt" if it were ever parsed.
    std::fs::File::create(&path)
        .and_then(|f| f.set_len(40_000_000))
        .expect("sparse file");
    let err = store.load(id).expect_err("refused");
    assert!(
        matches!(
            err,
            SessionError::TooLarge {
                size: 40_000_000,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "session {id}: file {} is 40000000 bytes, over the 33554432-byte limit",
            path.display()
        )
    );
    let list = store.list().expect("list");
    assert!(list.sessions.is_empty());
    assert!(
        list.problems[0].contains("over the 33554432-byte limit"),
        "{:?}",
        list.problems
    );
}

#[test]
fn a_file_holding_another_session_is_refused() {
    let (_home, store) = temp_store();
    let session = saved_session(&store, "t");
    let other_id = "20260101-0123456789abcdef0123456789abcdef";
    std::fs::copy(
        store.dir().join(format!("{}.json", session.id)),
        store.dir().join(format!("{other_id}.json")),
    )
    .expect("copy");
    let err = store.load(other_id).expect_err("mismatch");
    assert!(matches!(err, SessionError::IdMismatch { .. }), "{err}");
    assert!(err.to_string().contains(&session.id), "{err}");
    let list = store.list().expect("list");
    assert_eq!(listed_ids(&list), std::slice::from_ref(&session.id));
    assert!(list.problems[0].contains(other_id), "{:?}", list.problems);
}

#[test]
fn a_missing_session_names_the_directory() {
    let (_home, store) = temp_store();
    let err = store.load("20260101-aa").expect_err("missing").to_string();
    assert_eq!(
        err,
        format!(
            "no session 20260101-aa (looked in {})",
            store.dir().display()
        )
    );
}

#[test]
fn files_written_by_the_go_original_load() {
    let (_home, store) = temp_store();
    std::fs::create_dir_all(store.dir()).expect("mkdir");
    let id = "20260301-00112233445566778899aabbccddeeff";
    let go_file = serde_json::json!({
        "id": id, "auth_token": "x", "created_at": "2026-03-01T10:00:00Z",
        "updated_at": "2026-03-01T10:05:00Z", "model": "deepseek-chat", "turns": 1,
        "task": "hi", "sandbox": false, "redact_boundary": 2,
        "messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "hi", "cache_control": {"type": "ephemeral"}},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": "{}"}}]},
            {"role": "tool", "content": "ok", "tool_call_id": "c1", "name": "shell"}
        ]
    });
    std::fs::write(store.dir().join(format!("{id}.json")), go_file.to_string()).expect("write");
    let session = store.load(id).expect("load");
    assert_eq!(session.messages.len(), 4);
    assert_eq!(session.input_tokens, 0);
    assert_eq!(session.base_url, None);
    // An index in the Go shape (no model field) is accepted as is.
    let go_index = serde_json::json!([{ "id": id, "title": "hi",
        "created_at": "2026-03-01T10:00:00Z", "updated_at": "2026-03-01T10:05:00Z", "turns": 1 }]);
    std::fs::write(store.dir().join("index.json"), go_index.to_string()).expect("index");
    let list = store.list().expect("list");
    assert_eq!(list.sessions[0].title, "hi");
    assert_eq!(list.sessions[0].model, "");
}

#[test]
fn delete_is_idempotent_and_updates_the_index() {
    let (_home, store) = temp_store();
    let a = saved_session(&store, "a");
    let b = saved_session(&store, "b");
    assert!(store.delete(&a.id).expect("delete"));
    assert!(!store.delete(&a.id).expect("delete again"));
    assert_eq!(raw_index_ids(&store), std::slice::from_ref(&b.id));
    assert_eq!(
        listed_ids(&store.list().expect("list")),
        std::slice::from_ref(&b.id)
    );
    assert!(matches!(
        store.load(&a.id),
        Err(SessionError::NotFound { .. })
    ));
    let (_empty_home, empty) = temp_store();
    assert!(
        !empty
            .delete("20260101-00000000000000000000000000000000")
            .expect("no directory")
    );
    // The index (and any other file that is not a session) cannot be deleted as one.
    std::fs::write(store.dir().join("vectors_meta.json"), "{}").expect("write");
    for other in ["index", "vectors_meta", "nothing"] {
        assert!(matches!(
            store.delete(other),
            Err(SessionError::InvalidId { .. })
        ));
    }
    assert!(store.dir().join("index.json").exists());
    assert!(store.dir().join("vectors_meta.json").exists());
}

#[test]
fn trim_keeps_groups_whole_and_recounts_turns() {
    let (_home, store) = temp_store();
    let mut messages = vec![Message::system("s")];
    for n in 0..4 {
        messages.push(Message::user(format!("u{n}")));
        messages.push(assistant_calling(&format!("c{n}"), "{}"));
        messages.push(Message::tool_result(format!("c{n}"), "shell", "out"));
        messages.push(Message::assistant(format!("a{n}")));
    }
    let mut session = store.new_session("m", None, "t", messages);
    store.save(&mut session).expect("save");
    assert_eq!(session.turns, 4);
    // Keeping 6 would start at a tool result (c2's): the tail starts after it instead.
    let outcome = store.trim(&session.id, 6).expect("trim");
    assert_eq!(
        outcome,
        TrimOutcome {
            before: 17,
            after: 6
        }
    );
    let trimmed = store.load(&session.id).expect("load");
    let roles: Vec<Role> = trimmed.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::System,
            Role::Assistant,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant
        ]
    );
    assert_eq!(trimmed.turns, 1);
    assert_eq!(
        store.list().expect("list").sessions[0].turns,
        1,
        "index recounted"
    );
    let again = store.trim(&session.id, 10).expect("nothing to trim");
    assert_eq!(
        again,
        TrimOutcome {
            before: 6,
            after: 6
        }
    );
}

#[test]
fn trim_refuses_to_keep_fewer_than_two() {
    let (_home, store) = temp_store();
    let session = saved_session(&store, "t");
    let err = store.trim(&session.id, 1).expect_err("refused").to_string();
    assert!(
        err.ends_with("n must be at least 2 (system + at least 1 message), got 1"),
        "{err}"
    );
    assert!(err.contains(&session.id), "{err}");
}

#[test]
fn cleanup_deletes_sessions_by_age() {
    let (_home, store) = temp_store();
    let now = crate::util::timestamp::now_unix_seconds();
    let mut ages = Vec::new();
    for days in [1i64, 10, 40, 400] {
        let mut session = store.new_session("m", None, &format!("{days} days old"), vec![]);
        session.updated_at = crate::util::timestamp::rfc3339_millis(
            jiff::Timestamp::from_second(now - days * SECONDS_PER_DAY - 60).expect("time"),
        );
        write_raw_session(&store, &session);
        ages.push((days, session.id));
    }
    let fresh = saved_session(&store, "fresh");
    assert_eq!(store.cleanup(30).expect("cleanup").deleted, 2);
    let mut expected = vec![ages[0].1.clone(), ages[1].1.clone(), fresh.id.clone()];
    expected.sort();
    assert_eq!(listed_ids(&store.list().expect("list")), expected);
    assert_eq!(raw_index_ids(&store), expected);
    assert_eq!(store.cleanup(5).expect("cleanup").deleted, 1);
    assert_eq!(store.cleanup(0).expect("cleanup all").deleted, 2);
    assert!(store.list().expect("list").sessions.is_empty());
    let (_empty_home, empty) = temp_store();
    assert_eq!(empty.cleanup(0).expect("no directory").deleted, 0);
}

#[test]
fn concurrent_saves_of_different_sessions_keep_every_index_entry() {
    let home = tempfile::tempdir().expect("tempdir");
    let threads: Vec<_> = (0..6)
        .map(|_| {
            let home = home.path().to_path_buf();
            std::thread::spawn(move || {
                // One store per thread, like separate processes: separate lock descriptors.
                let store = SessionStore::new(&home, redactor_with_secret());
                let mut ids = Vec::new();
                for _ in 0..8 {
                    let mut session = store.new_session("m", None, "t", sample_messages());
                    store.save(&mut session).expect("save");
                    session.messages.push(Message::user("again"));
                    store.save(&mut session).expect("save again");
                    ids.push(session.id);
                }
                ids
            })
        })
        .collect();
    let mut expected: Vec<String> = threads
        .into_iter()
        .flat_map(|t| t.join().expect("thread"))
        .collect();
    expected.sort();
    let store = SessionStore::new(home.path(), redactor_with_secret());
    assert_eq!(expected.len(), 48);
    assert_eq!(raw_index_ids(&store), expected, "no entry was lost");
    assert!(
        store
            .list()
            .expect("list")
            .sessions
            .iter()
            .all(|s| s.turns == 2)
    );
}

fn bulky_transcript(groups: usize, result_bytes: usize) -> Vec<Message> {
    let mut messages = vec![Message::system("keep me")];
    for n in 0..groups {
        messages.push(Message::user(format!("u{n}")));
        messages.push(assistant_calling(&format!("c{n}"), "{}"));
        messages.push(Message::tool_result(
            format!("c{n}"),
            "shell",
            "x".repeat(result_bytes),
        ));
    }
    messages
}

#[test]
fn oversized_sessions_drop_their_oldest_groups_on_write() {
    let (_home, store) = temp_store();
    let store = store.with_size_limit(4_000);
    let mut session = store.new_session("m", None, "t", bulky_transcript(10, 900));
    let report = store.save(&mut session).expect("save");
    assert!(report.trimmed_messages > 0);
    assert_eq!(report.trimmed_messages % 3, 0, "whole groups only");
    assert!(
        report.warnings[0].contains("oldest messages dropped"),
        "{:?}",
        report.warnings
    );
    assert!(report.bytes_written <= 4_000);
    assert_eq!(
        session.messages.len(),
        31 - report.trimmed_messages,
        "memory matches disk"
    );
    assert_eq!(session.messages[0].content, "keep me");
    assert_eq!(session.messages[1].role, Role::User);
    assert_eq!(session.messages.last().map(|m| m.content.len()), Some(900));
    let loaded = store.load(&session.id).expect("loads under the cap");
    assert_eq!(loaded, session);
    assert_eq!(loaded.turns, count_turns(&loaded.messages));
}

#[test]
fn a_session_that_cannot_fit_is_not_written() {
    let (_home, store) = temp_store();
    let store = store.with_size_limit(2_000);
    let mut session = saved_session(&store, "t");
    let good = session.clone();
    session.messages[0] = Message::system("s".repeat(5_000));
    let err = store.save(&mut session).expect_err("too large");
    assert!(matches!(err, SessionError::TooLargeToSave { .. }), "{err}");
    assert!(err.to_string().contains(&session.id));
    assert_eq!(
        store.load(&good.id).expect("old file intact").messages,
        good.messages
    );
}

#[test]
fn the_real_size_cap_trims_a_session_over_32_mib() {
    let (_home, store) = temp_store();
    let mut session = store.new_session("m", None, "t", bulky_transcript(4, 9 * 1024 * 1024));
    let report = store.save(&mut session).expect("save");
    assert_eq!(report.trimmed_messages, 3, "one 9 MiB group is enough");
    assert!(report.bytes_written <= MAX_SESSION_BYTES);
    assert_eq!(store.load(&session.id).expect("load").messages.len(), 10);
}

/// Sets a directory's modification time (the stamp logic only trusts settled directories).
fn set_dir_mtime(dir: &std::path::Path, age: std::time::Duration) {
    let f = std::fs::File::open(dir).expect("open dir");
    f.set_modified(std::time::SystemTime::now() - age)
        .expect("set mtime");
}

#[test]
fn list_trusts_a_settled_stamp_and_notices_any_change() {
    let (_dir, store) = temp_store();
    let mut ids = Vec::new();
    for i in 0..3 {
        let mut s = store.new_session("m", None, &format!("task {i}"), vec![Message::user("hi")]);
        store.save(&mut s).expect("save");
        ids.push(s.id.clone());
    }
    let page = store.list_recent(2).expect("list");
    assert_eq!(page.total, 3);
    assert_eq!(page.sessions.len(), 2);
    // Settle the directory and record it: from now on `list_recent` reads only the index head.
    set_dir_mtime(store.dir(), std::time::Duration::from_secs(60));
    super::index::write_stamp(store.dir()).expect("stamp");
    assert!(super::index::stamp_is_current(store.dir()));
    let fast = store.list_recent(2).expect("list");
    assert_eq!(fast.sessions, page.sessions);
    assert_eq!(fast.total, 3);
    // A file that appears (changing the directory) is noticed: the stamp no longer matches.
    let copy = std::fs::read(store.dir().join(format!("{}.json", ids[0]))).expect("read");
    let text = String::from_utf8(copy)
        .expect("utf8")
        .replace(&ids[0], "20990101-0000000000000000000000000000beef");
    std::fs::write(
        store
            .dir()
            .join("20990101-0000000000000000000000000000beef.json"),
        text,
    )
    .expect("write");
    assert!(!super::index::stamp_is_current(store.dir()));
    assert_eq!(store.list_recent(10).expect("list").total, 4);
}

#[test]
fn a_fresh_stamp_is_not_trusted() {
    let (_dir, store) = temp_store();
    let mut s = store.new_session("m", None, "t", vec![Message::user("hi")]);
    store.save(&mut s).expect("save");
    assert!(store.dir().join("index.stamp").exists());
    assert!(
        !super::index::stamp_is_current(store.dir()),
        "written just now: not settled"
    );
}

#[test]
fn run_records_add_the_tokens_that_came_before_them() {
    let (_home, store) = temp_store();
    let mut continued = store.new_session("m", None, "old, continued", sample_messages());
    continued.created_at = "2026-01-02T03:04:05.000Z".into();
    continued.input_tokens = 700;
    continued.output_tokens = 70;
    continued.runs = vec![RunRecord {
        at: "2026-11-30T00:00:00.000Z".into(),
        input_tokens: 100,
        output_tokens: 10,
        iterations: 2,
        ..RunRecord::default()
    }];
    store.save(&mut continued).expect("save");
    let mut recorded = store.new_session("m", None, "recorded", sample_messages());
    recorded.input_tokens = 50;
    recorded.runs = vec![RunRecord {
        input_tokens: 50,
        iterations: 1,
        ..RunRecord::default()
    }];
    store.save(&mut recorded).expect("save");

    let found = store.run_records(None).expect("records");
    assert!(found.problems.is_empty());
    let of = |id: &str| {
        found
            .sessions
            .iter()
            .find(|(s, _)| s == id)
            .map(|(_, r)| r.clone())
            .expect("session")
    };
    let runs = of(&continued.id);
    assert_eq!(runs.len(), 2, "the earlier tokens and the recorded run");
    assert_eq!(
        runs[0].at, "2026-01-02T03:04:05.000Z",
        "dated by the creation"
    );
    assert_eq!((runs[0].input_tokens, runs[0].output_tokens), (600, 60));
    assert_eq!(runs[0].iterations, 0, "not a run");
    assert_eq!(of(&recorded.id).len(), 1, "nothing before its record");
}

#[test]
fn a_listed_index_is_reused_until_the_file_is_replaced() {
    let (_dir, store) = temp_store();
    let mut s = store.new_session("m", None, "first title", vec![Message::user("hi")]);
    store.save(&mut s).expect("save");
    let settle = |store: &SessionStore| {
        set_dir_mtime(store.dir(), std::time::Duration::from_secs(60));
        super::index::write_stamp(store.dir()).expect("stamp");
        set_dir_mtime(store.dir(), std::time::Duration::from_secs(60));
        super::index::write_stamp(store.dir()).expect("stamp");
        assert!(super::index::stamp_is_current(store.dir()));
    };
    settle(&store);
    let first = store.list().expect("list");
    assert_eq!(first.sessions[0].title, "first title");
    assert_eq!(store.list().expect("list again"), first);
    // The index is rewritten (renamed over) and the directory settled again: the stamp
    // alone would trust it, the fingerprint makes the store parse the new file.
    store.rename(&s.id, "second title").expect("rename");
    settle(&store);
    assert_eq!(
        store.list().expect("list").sessions[0].title,
        "second title"
    );
}
