//! `odek acp` driven by a real ACP client from another ecosystem: the official TypeScript
//! SDK (tests/acp/client.mjs, pinned by tests/acp/package-lock.json, installed by
//! `make acp-deps`), against the scripted model. The SDK checks every message against the
//! protocol's schema and drops what does not fit, so the updates asserted here are the
//! updates an editor sees. The protocol's errors are checked over raw stdio.

use std::io::{BufRead, BufReader, Write};

use serde_json::{Value, json};

use crate::support::*;

/// The official ACP TypeScript SDK client (`tests/acp/client.mjs`) driving `odek acp` through
/// `scenario`; its report. Also used by the custom commands' tests.
pub(crate) async fn client(sb: &Sandbox, server_url: &str, scenario: Value) -> Value {
    client_with(sb, server_url, &[], scenario).await
}

async fn client_with(
    sb: &Sandbox,
    server_url: &str,
    env: &[(&str, &str)],
    scenario: Value,
) -> Value {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp");
    assert!(
        root.join("node_modules/@agentclientprotocol/sdk").exists(),
        "the ACP TypeScript SDK is not installed: run `make acp-deps`"
    );
    let args = [
        root.join("client.mjs").into_os_string(),
        odek_binary().into_os_string(),
        "acp".into(),
    ];
    run_external_client(sb, server_url, "node", &args, env, &scenario).await
}

/// The log's entries of `kind` (`update`, `permission`, `stop`, `error`, …).
fn entries<'a>(report: &'a Value, kind: &str) -> Vec<&'a Value> {
    report["log"]
        .as_array()
        .expect("log")
        .iter()
        .filter_map(|e| e.get(kind))
        .collect()
}

/// The stop reasons of the prompts, in order.
fn stops(report: &Value) -> Vec<&str> {
    entries(report, "stop")
        .into_iter()
        .filter_map(|s| s["stopReason"].as_str())
        .collect()
}

/// The updates of one `sessionUpdate` kind.
fn updates<'a>(report: &'a Value, kind: &str) -> Vec<&'a Value> {
    entries(report, "update")
        .into_iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .collect()
}

/// The text of the chunks of `kind`, joined.
fn chunks(report: &Value, kind: &str) -> String {
    updates(report, kind)
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_sees_the_plan_the_calls_a_diff_and_is_asked_before_code_runs() {
    let python = |code: &str| json!({"command": format!("python3 -c \"{code}\"")});
    let server = ScriptedServer::start(vec![
        plan_create(&[("s1", "Read the notes"), ("s2", "Fix the typo")]),
        tools(&[("read_file", json!({"path": "notes.md"}))]),
        tools(&[(
            "patch",
            json!({"path": "notes.md", "old_string": "teh", "new_string": "the"}),
        )]),
        tools(&[(
            "plan",
            json!({"verb": "update", "updates": [
                {"id": "s1", "status": "done"}, {"id": "s2", "status": "in_progress"}]}),
        )]),
        tools(&[("shell", python("print(40+2)"))]),
        tools(&[("shell", python("print(6*7)"))]),
        tools(&[("shell", python("print(7*6)"))]),
        pieces(&["All ", "done: the typo is fixed."]),
    ])
    .await;
    let sb = Sandbox::new();
    std::fs::write(sb.work.join("notes.md"), "fix teh typo\n").expect("notes");
    let work = sb.work.to_string_lossy().to_string();
    let report = client(
        &sb,
        &server.base_url(),
        json!({
            "permissions": ["reject_once", "allow_always"],
            "steps": [{"new": work}, {"prompt": "fix the typo in notes.md"}],
        }),
    )
    .await;
    assert_eq!(report["initialize"]["protocolVersion"], 1, "{report}");
    assert_eq!(
        report["initialize"]["agentCapabilities"]["loadSession"], true,
        "{report}"
    );
    assert_eq!(report["initialize"]["agentInfo"]["name"], "odek");
    assert_eq!(stops(&report), ["end_turn"], "{report}");
    assert_eq!(report["exit"], 0, "{report}");

    // The plan, as the model kept it: created, then its first step done, the next begun.
    let plans: Vec<Value> = updates(&report, "plan")
        .into_iter()
        .map(|u| u["entries"].clone())
        .collect();
    let entry = |content: &str, status: &str| json!({"content": content, "priority": "medium", "status": status});
    assert_eq!(plans.len(), 2, "{plans:?}");
    assert_eq!(
        plans[0],
        json!([
            entry("Read the notes", "pending"),
            entry("Fix the typo", "pending")
        ])
    );
    assert_eq!(
        plans[1],
        json!([
            entry("Read the notes", "completed"),
            entry("Fix the typo", "in_progress")
        ])
    );

    // Each call: its kind, its title as the terminal shows it, the file it touches.
    let calls = updates(&report, "tool_call");
    let read_call = calls
        .iter()
        .find(|c| c["rawInput"]["path"] == "notes.md" && c["kind"] == "read")
        .expect("a read call");
    assert_eq!(read_call["title"], "📖 read_file notes.md");
    assert_eq!(read_call["status"], "in_progress");
    let notes = sb.work.join("notes.md").to_string_lossy().to_string();
    assert_eq!(read_call["locations"], json!([{"path": notes}]));
    let patch = calls.iter().find(|c| c["kind"] == "edit").expect("an edit");
    assert_eq!(patch["locations"], json!([{"path": notes}]));
    let finished = updates(&report, "tool_call_update");
    let diff = finished
        .iter()
        .find(|u| u["toolCallId"] == patch["toolCallId"])
        .expect("the edit's end");
    assert_eq!(diff["status"], "completed");
    assert_eq!(
        diff["content"],
        json!([{"type": "diff", "path": notes, "oldText": "fix teh typo\n", "newText": "fix the typo\n"}])
    );
    assert!(calls.iter().any(|c| c["kind"] == "think"), "{calls:?}");

    // Code asks: rejected once (the model reads the refusal), then allowed for the session
    // (the third call is not asked about).
    let asked = entries(&report, "permission");
    assert_eq!(asked.len(), 2, "{asked:?}");
    let kinds: Vec<&str> = asked[0]["options"]
        .as_array()
        .expect("options")
        .iter()
        .filter_map(|o| o["kind"].as_str())
        .collect();
    assert_eq!(
        kinds,
        ["allow_once", "allow_always", "reject_once", "reject_always"]
    );
    assert_eq!(asked[0]["toolCall"]["kind"], "execute");
    assert!(
        asked[0]["toolCall"]["title"]
            .as_str()
            .is_some_and(|t| t.starts_with("💻 shell python3")),
        "{asked:?}"
    );
    // A command's update shows its output, as the terminal would.
    let ran_call = calls
        .iter()
        .find(|c| c["rawInput"]["command"] == "python3 -c \"print(6*7)\"")
        .expect("the allowed call");
    let output = finished
        .iter()
        .find(|u| u["toolCallId"] == ran_call["toolCallId"])
        .expect("its end");
    assert_eq!(output["status"], "completed");
    // Each question is about the call the editor then sees: the same id.
    assert_eq!(asked[1]["toolCall"]["toolCallId"], ran_call["toolCallId"]);
    let rejected = calls
        .iter()
        .find(|c| c["rawInput"]["command"] == "python3 -c \"print(40+2)\"")
        .expect("the rejected call");
    assert_eq!(asked[0]["toolCall"]["toolCallId"], rejected["toolCallId"]);
    assert!(
        output["content"][0]["content"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("42") && !t.contains("untrusted")),
        "{output}"
    );
    let requests = server.requests();
    let refused = tool_results(&requests[5]);
    assert!(
        refused.last().is_some_and(|r| r.contains("denied")),
        "{refused:?}"
    );
    let ran: Vec<String> = tool_results(&requests[6]);
    assert!(ran.iter().any(|r| r.contains("42")), "{ran:?}");
    assert_eq!(
        chunks(&report, "agent_message_chunk"),
        "All done: the typo is fixed."
    );
    assert_eq!(read_file_text(&sb, "notes.md"), "fix the typo\n");

    // The session is odek's: saved with origin acp, and loaded again in a new connection.
    let session_id = entries(&report, "new")[0]["sessionId"]
        .as_str()
        .expect("session id")
        .to_string();
    let saved: Value = serde_json::from_str(&read(
        sb.home.join("sessions").join(format!("{session_id}.json")),
    ))
    .expect("the session file");
    assert_eq!(saved["origin"], "acp");
    assert_eq!(saved["task"], "fix the typo in notes.md");
    let loaded = client(
        &sb,
        &server.base_url(),
        json!({"steps": [{"load": session_id, "cwd": work}]}),
    )
    .await;
    assert_eq!(
        entries(&loaded, "loaded")[0]["modes"]["currentModeId"],
        "accept_edits",
        "{loaded}"
    );
    assert_eq!(
        chunks(&loaded, "user_message_chunk"),
        "fix the typo in notes.md"
    );
    assert_eq!(
        chunks(&loaded, "agent_message_chunk"),
        "All done: the typo is fixed."
    );
    let replayed = updates(&loaded, "tool_call");
    assert_eq!(replayed.len(), 7, "{replayed:?}");
    assert!(
        replayed
            .iter()
            .any(|c| c["title"] == "📖 read_file notes.md")
    );
    assert!(
        replayed.iter().any(|c| c["status"] == "failed"),
        "{replayed:?}"
    );
    let plan = updates(&loaded, "plan");
    assert_eq!(plan.last().map(|p| &p["entries"]), Some(&plans[1]));
}

fn read_file_text(sb: &Sandbox, name: &str) -> String {
    std::fs::read_to_string(sb.work.join(name)).expect("file")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_cancelled_while_it_asks_ends_cancelled_and_a_rejected_class_is_not_asked_again() {
    let python = |code: &str| json!({"command": format!("python3 -c \"{code}\"")});
    let server = ScriptedServer::start(vec![
        tools(&[("shell", python("print(1)"))]),
        tools(&[("shell", python("print(2)"))]),
        tools(&[("shell", python("print(3)"))]),
        text("Fine, no code."),
    ])
    .await;
    let sb = Sandbox::new();
    let work = sb.work.to_string_lossy().to_string();
    let report = client(
        &sb,
        &server.base_url(),
        json!({
            "permissions": ["cancel", "reject_always"],
            "steps": [
                {"new": work},
                {"prompt": "run some code"},
                {"prompt": "run some code again"},
            ],
        }),
    )
    .await;
    assert_eq!(stops(&report), ["cancelled", "end_turn"], "{report}");
    // Rejected for the session: the next call of the class is refused without a question.
    assert_eq!(entries(&report, "permission").len(), 2, "{report}");
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let last = tool_results(requests.last().expect("requests"));
    assert!(
        last.last().is_some_and(|r| r.contains("denied")),
        "{last:?}"
    );
    // Each refused call is shown failed, with why.
    let failed: Vec<&str> = updates(&report, "tool_call_update")
        .into_iter()
        .filter(|u| u["status"] == "failed")
        .filter_map(|u| u["content"][0]["content"]["text"].as_str())
        .collect();
    assert_eq!(failed.len(), 3, "{report}");
    assert!(failed[0].contains("interrupted"), "{failed:?}");
    assert!(failed[1].contains("denied by user"), "{failed:?}");
    assert!(failed[2].contains("denied by user"), "{failed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_cancelled_mid_stream_ends_cancelled_and_the_next_prompt_keeps_the_conversation() {
    // The first answer streams its opening words, then stalls: the editor cancels as soon as
    // the first chunk shows.
    let long = format!("{}the end.", "Thinking it over, word by word. ".repeat(12));
    let stalled = Fault::Stall {
        after: 40,
        silence: std::time::Duration::from_secs(30),
    };
    let server = FaultServer::start(vec![
        (json!({"role": "assistant", "content": long}), stalled),
        (
            json!({"role": "assistant", "content": "Back again."}),
            Fault::None,
        ),
    ])
    .await;
    let sb = Sandbox::new();
    let work = sb.work.to_string_lossy().to_string();
    let report = client(
        &sb,
        &server.base_url(),
        json!({"steps": [
            {"new": work},
            {"prompt": "think aloud", "cancelOn": "agent_message_chunk"},
            {"prompt": "are you there?"},
        ]}),
    )
    .await;
    assert_eq!(stops(&report), ["cancelled", "end_turn"], "{report}");
    let said = chunks(&report, "agent_message_chunk");
    assert!(said.starts_with("Thinking it over"), "{said}");
    assert!(said.ends_with("Back again."), "{said}");
    // What the cancelled turn was asked is still part of the conversation.
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let users: Vec<String> = messages(&requests[1])
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str().map(unwrap_untrusted))
        .collect();
    assert!(users.iter().any(|u| u.contains("think aloud")), "{users:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_cut_at_the_output_limit_ends_max_tokens() {
    let server = ScriptedServer::start(vec![Reply::CutOff(
        json!({"role": "assistant", "content": "The list goes on: one, two, thr"}),
    )])
    .await;
    let sb = Sandbox::new();
    let work = sb.work.to_string_lossy().to_string();
    let report = client(
        &sb,
        &server.base_url(),
        json!({"steps": [{"new": work}, {"prompt": "count"}]}),
    )
    .await;
    assert_eq!(stops(&report), ["max_tokens"], "{report}");
    assert_eq!(
        chunks(&report, "agent_message_chunk"),
        "The list goes on: one, two, thr"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_commands_are_announced_and_undo_puts_back_the_last_turns_files_without_the_model() {
    let server = ScriptedServer::start(vec![
        tools(&[(
            "write_file",
            json!({"path": "notes.md", "content": "rewritten\n"}),
        )]),
        text("Rewrote the notes."),
    ])
    .await;
    let sb = Sandbox::new();
    std::fs::write(sb.work.join("notes.md"), "original\n").expect("notes");
    let work = sb.work.to_string_lossy().to_string();
    let report = client(
        &sb,
        &server.base_url(),
        json!({"steps": [
            {"new": work},
            {"prompt": "rewrite notes.md"},
            {"prompt": "/rewind"},
            {"prompt": "/undo"},
            {"prompt": "/info"},
            {"prompt": "/kill"},
        ]}),
    )
    .await;
    let announced = updates(&report, "available_commands_update");
    assert_eq!(announced.len(), 1, "{report}");
    let names: Vec<&str> = announced[0]["availableCommands"]
        .as_array()
        .expect("commands")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["undo", "rewind", "info", "jobs", "kill", "compact"]);
    assert_eq!(
        announced[0]["availableCommands"][4]["input"]["hint"],
        "the job's id (see /jobs)"
    );
    assert_eq!(entries(&report, "stop").len(), 5, "{report}");
    // The commands are odek's: the model was asked only for the first prompt.
    assert_eq!(server.requests().len(), 2);
    assert_eq!(read_file_text(&sb, "notes.md"), "original\n");
    let said: Vec<String> = updates(&report, "agent_message_chunk")
        .iter()
        .filter_map(|u| u["content"]["text"].as_str().map(str::to_string))
        .collect();
    let after = |start: &str| {
        said.iter()
            .find(|t| t.starts_with(start))
            .unwrap_or_else(|| panic!("no answer starting {start:?} in {said:?}"))
            .clone()
    };
    let list = after("Checkpoints");
    assert!(list.contains("write_file  notes.md"), "{list}");
    let undone = after("restore");
    assert!(undone.contains("notes.md"), "{undone}");
    assert!(undone.contains("Rewound 1 file(s)"), "{undone}");
    let id = entries(&report, "new")[0]["sessionId"]
        .as_str()
        .expect("id");
    assert!(after("Session:").contains(id), "{said:?}");
    assert_eq!(after("Usage: /kill"), "Usage: /kill ID (see /jobs)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_the_editor_declares_fs_the_file_tools_read_its_buffers_and_write_through_it() {
    let server = ScriptedServer::start(vec![
        tools(&[("read_file", json!({"path": "notes.md"}))]),
        tools(&[(
            "patch",
            json!({"path": "notes.md", "old_string": "teh", "new_string": "the"}),
        )]),
        tools(&[(
            "write_file",
            json!({"path": "new.md", "content": "a new file\n"}),
        )]),
        text("Edited in your editor."),
    ])
    .await;
    let sb = Sandbox::new();
    std::fs::write(sb.work.join("notes.md"), "saved on disk\n").expect("notes");
    let work = sb.work.to_string_lossy().to_string();
    let notes = sb.work.join("notes.md").to_string_lossy().to_string();
    let new = sb.work.join("new.md").to_string_lossy().to_string();
    let report = client(
        &sb,
        &server.base_url(),
        json!({
            "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}},
            "files": {notes.clone(): "unsaved: fix teh typo\n"},
            "steps": [{"new": work}, {"prompt": "fix the typo in notes.md"}],
        }),
    )
    .await;
    assert_eq!(stops(&report), ["end_turn"], "{report}");
    // The model read the editor's unsaved buffer, not the disk.
    let requests = server.requests();
    let read = tool_results(&requests[1]);
    assert!(read[0].contains("unsaved: fix teh typo"), "{read:?}");
    // The edits went to the editor: its buffers changed, the disk did not.
    assert_eq!(report["files"][&notes], "unsaved: fix the typo\n");
    assert_eq!(report["files"][&new], "a new file\n");
    assert_eq!(read_file_text(&sb, "notes.md"), "saved on disk\n");
    assert!(!sb.work.join("new.md").exists());
    let writes: Vec<&Value> = entries(&report, "writeTextFile");
    assert_eq!(writes.len(), 2, "{report}");
    assert_eq!(writes[0]["path"], notes.as_str());
    assert!(writes[0]["sessionId"].is_string());
    // Each edit's diff is the editor's text before and after.
    let diffs: Vec<&Value> = updates(&report, "tool_call_update")
        .into_iter()
        .filter_map(|u| u["content"].as_array())
        .flatten()
        .filter(|c| c["type"] == "diff")
        .collect();
    assert_eq!(
        diffs,
        [
            &json!({"type": "diff", "path": notes, "oldText": "unsaved: fix teh typo\n", "newText": "unsaved: fix the typo\n"}),
            &json!({"type": "diff", "path": new, "oldText": null, "newText": "a new file\n"}),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modes_switch_the_policy_read_only_refuses_edits_and_ask_asks_before_them() {
    let write = |text: &str| tools(&[("write_file", json!({"path": "out.md", "content": text}))]);
    let server = ScriptedServer::start(vec![
        write("one\n"),
        text("Could not write."),
        write("two\n"),
        text("Wrote it."),
        write("three\n"),
        text("Wrote it again."),
    ])
    .await;
    let sb = Sandbox::new();
    let work = sb.work.to_string_lossy().to_string();
    let set = |mode: &str| json!({"request": "session/set_mode", "params": {"sessionId": "$session", "modeId": mode}});
    let report = client(
        &sb,
        &server.base_url(),
        json!({
            "permissions": ["allow_once"],
            "steps": [
                {"new": work},
                set("read_only"),
                {"prompt": "write out.md"},
                set("ask"),
                {"prompt": "write out.md"},
                set("accept_edits"),
                {"prompt": "write out.md"},
                set("yolo"),
            ],
        }),
    )
    .await;
    let modes = &entries(&report, "new")[0]["modes"];
    assert_eq!(modes["currentModeId"], "accept_edits", "{report}");
    let ids: Vec<&str> = modes["availableModes"]
        .as_array()
        .expect("modes")
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    // `read_only`, `plan`'s name before, is still taken from editors.
    assert_eq!(ids, ["plan", "ask", "accept_edits"]);
    // Read-only: refused without a question. Ask: asked once. Accept edits: not asked.
    let requests = server.requests();
    let refused = tool_results(&requests[1]);
    assert!(refused[0].contains("denied"), "{refused:?}");
    // `read_only` is `plan`: the model is told to plan, and only in that prompt.
    let told = |r: &Value| r.to_string().contains("[Plan mode: the user wants a plan");
    assert!(told(&requests[0]) && told(&requests[1]));
    assert!(!told(&requests[2]));
    assert_eq!(entries(&report, "permission").len(), 1, "{report}");
    assert_eq!(
        entries(&report, "permission")[0]["toolCall"]["kind"],
        "edit"
    );
    assert_eq!(read_file_text(&sb, "out.md"), "three\n");
    let errors = entries(&report, "error");
    assert_eq!(errors.len(), 1, "{report}");
    assert_eq!(errors[0]["code"], -32602);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clients_mcp_servers_join_the_session_and_their_tools_ask_like_any_mcp_tool() {
    let everything = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(everything.exists(), "run `make mcp-deps`");
    let server = ScriptedServer::start(vec![
        tools(&[(
            "editor__echo",
            json!({"message": "from the editor's server"}),
        )]),
        text("It echoed."),
    ])
    .await;
    let sb = Sandbox::new();
    let work = sb.work.to_string_lossy().to_string();
    // Under a name of its own: other tests run the same server at once.
    let linked = sb.dir.path().join("acp-everything.js");
    std::os::unix::fs::symlink(&everything, &linked).expect("link");
    let mcp = json!([{"name": "editor", "command": "node",
                      "args": [linked.to_string_lossy()], "env": []}]);
    let report = client(
        &sb,
        &server.base_url(),
        json!({
            "permissions": ["allow_once"],
            "steps": [
                {"new": work, "mcpServers": mcp},
                {"prompt": "echo something"},
                {"new": work, "mcpServers": [{"type": "sse", "name": "old", "url": "http://127.0.0.1:9/sse", "headers": []}]},
            ],
        }),
    )
    .await;
    assert_eq!(
        report["initialize"]["agentCapabilities"]["mcpCapabilities"],
        json!({"http": true, "sse": false})
    );
    assert_eq!(stops(&report), ["end_turn"], "{report}");
    let requests = server.requests();
    assert!(tool_names(&requests[0]).contains(&"editor__echo".to_string()));
    let echoed = tool_results(&requests[1]);
    assert!(echoed[0].contains("from the editor's server"), "{echoed:?}");
    let asked = entries(&report, "permission");
    assert_eq!(asked.len(), 1, "gated as code_execution: {report}");
    let errors = entries(&report, "error");
    assert_eq!(errors.len(), 1, "{report}");
    assert!(
        errors[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("not sse")),
        "{errors:?}"
    );
    // The session's server stops with the connection.
    processes_gone(&linked.to_string_lossy()).await;
}

/// A line-level client: JSON-RPC lines in, lines out.
struct RawAcp {
    child: std::process::Child,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl RawAcp {
    fn start(sb: &Sandbox, url: &str, env: &[(&str, &str)]) -> RawAcp {
        let mut cmd = sb.odek(url);
        cmd.arg("acp")
            .envs(env.iter().copied())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        let mut child = cmd.spawn().expect("odek acp");
        let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        RawAcp { child, lines }
    }

    /// Sends `line`, reads the one answer.
    fn ask(&mut self, line: &str) -> Value {
        let stdin = self.child.stdin.as_mut().expect("stdin");
        writeln!(stdin, "{line}").expect("write");
        stdin.flush().expect("flush");
        let answer = self.lines.next().expect("an answer").expect("a line");
        serde_json::from_str(&answer).expect("json")
    }

    fn close(mut self) -> std::process::ExitStatus {
        drop(self.child.stdin.take());
        self.child.wait().expect("exit")
    }
}

#[test]
fn bad_lines_unknown_methods_and_requests_before_initialize_get_errors_and_odek_stays_up() {
    let sb = Sandbox::new();
    let mut acp = RawAcp::start(&sb, "http://127.0.0.1:9/v1", &[]);
    let work = sb.work.to_string_lossy().to_string();
    let new = json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                     "params": {"cwd": work, "mcpServers": []}})
    .to_string();
    let early = acp.ask(&new);
    assert_eq!(early["id"], 2);
    assert_eq!(early["error"]["code"], -32600, "{early}");
    assert!(
        early["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("initialize first"))
    );
    let bad = acp.ask("{\"jsonrpc\": \"2.0\", \"id\": 3, \"method\"");
    assert_eq!(bad["error"]["code"], -32700, "{bad}");
    assert_eq!(bad["id"], Value::Null);
    let not_rpc = acp.ask(r#"{"id": 4, "method": "initialize"}"#);
    assert_eq!(not_rpc["error"]["code"], -32600, "{not_rpc}");
    let init = acp.ask(
        &json!({"jsonrpc": "2.0", "id": 5, "method": "initialize",
                "params": {"protocolVersion": 7}})
        .to_string(),
    );
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
    let unknown = acp.ask(r#"{"jsonrpc": "2.0", "id": 6, "method": "odek/nothing"}"#);
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    let relative = acp.ask(
        r#"{"jsonrpc": "2.0", "id": 7, "method": "session/new", "params": {"cwd": "work", "mcpServers": []}}"#,
    );
    assert_eq!(relative["error"]["code"], -32602, "{relative}");
    let missing = acp.ask(
        r#"{"jsonrpc": "2.0", "id": 8, "method": "session/prompt", "params": {"sessionId": "nope", "prompt": []}}"#,
    );
    assert_eq!(missing["error"]["code"], -32002, "{missing}");
    let created = acp.ask(&new.replace("\"id\":2", "\"id\":9"));
    assert_eq!(created["id"], 9);
    assert!(created["result"]["sessionId"].is_string(), "{created}");
    assert!(acp.close().success());
}

/// The KiB of `field` in `/proc/PID/status`.
#[cfg(target_os = "linux")]
fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .expect("status")
        .lines()
        .find_map(|l| {
            l.strip_prefix(field)?
                .trim()
                .strip_suffix("kB")?
                .trim()
                .parse()
                .ok()
        })
        .expect("the field")
}

#[cfg(target_os = "linux")]
#[test]
fn an_idle_connection_gives_the_code_pages_back_and_answers_as_before() {
    let sb = Sandbox::new();
    let mut acp = RawAcp::start(&sb, "http://127.0.0.1:9/v1", &[]);
    let work = sb.work.to_string_lossy().to_string();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}});
    assert_eq!(acp.ask(&init.to_string())["result"]["protocolVersion"], 1);
    let new = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/new",
               "params": {"cwd": work, "mcpServers": []}})
        .to_string()
    };
    assert!(acp.ask(&new(2))["result"]["sessionId"].is_string());
    let announced = acp.lines.next().expect("a line").expect("a line");
    assert!(
        announced.contains("available_commands_update"),
        "{announced}"
    );
    let pid = acp.child.id();
    let busy = status_kib(pid, "RssFile:");
    // Two seconds after the last answer the binary's code pages go back to the page cache.
    let mut idle = busy;
    for _ in 0..100 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        idle = status_kib(pid, "RssFile:");
        if idle < busy / 2 {
            break;
        }
    }
    assert!(idle < busy / 2, "RssFile {busy} KiB busy, {idle} KiB idle");
    // The code comes back as it is needed.
    assert!(acp.ask(&new(3))["result"]["sessionId"].is_string());
    assert!(acp.close().success());
}

#[test]
fn without_a_key_initialize_offers_the_way_to_authenticate_and_sessions_say_where_it_goes() {
    let sb = Sandbox::new();
    let mut acp = RawAcp::start(&sb, "https://api.example.com/v1", &[]);
    let init = acp.ask(
        r#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}"#,
    );
    let methods = &init["result"]["authMethods"];
    assert_eq!(methods[0]["id"], "odek-api-key", "{init}");
    assert!(
        methods[0]["description"]
            .as_str()
            .is_some_and(|d| d.contains("ODEK_API_KEY")),
        "{init}"
    );
    let work = sb.work.to_string_lossy().to_string();
    let new = acp.ask(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                "params": {"cwd": work, "mcpServers": []}})
        .to_string(),
    );
    assert_eq!(new["error"]["code"], -32000, "{new}");
    let auth = acp.ask(
        r#"{"jsonrpc": "2.0", "id": 3, "method": "authenticate", "params": {"methodId": "odek-api-key"}}"#,
    );
    assert_eq!(auth["error"]["code"], -32000, "{auth}");
    assert!(acp.close().success());
}

/// Issue 60, M1: the editor is asked about the whole command: its arguments in `rawInput`,
/// the command whole (its other line shown) in the text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_is_asked_about_the_whole_command_with_its_arguments() {
    let command = "cargo test --quiet\npython3 -c \"open('hidden','w')\"";
    let server = ScriptedServer::start(vec![
        tools(&[("shell", json!({"command": command}))]),
        text("Refused."),
    ])
    .await;
    let sb = Sandbox::new();
    let work = sb.work.to_string_lossy().to_string();
    let report = client(
        &sb,
        &server.base_url(),
        json!({
            "permissions": ["reject_once"],
            "steps": [{"new": work}, {"prompt": "run the tests"}],
        }),
    )
    .await;
    let asked = entries(&report, "permission");
    assert_eq!(asked.len(), 1, "{report}");
    let call = &asked[0]["toolCall"];
    assert_eq!(call["rawInput"]["arguments"]["command"], command, "{call}");
    assert!(
        call["rawInput"]["resource"]
            .as_str()
            .is_some_and(|r| r.contains("--quiet\u{240a}python3 -c")),
        "{call}"
    );
    assert!(
        call["content"][0]["content"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("python3 -c open('hidden','w')")),
        "each part with its reason: {call}"
    );
    assert!(!sb.work.join("hidden").exists());
}

/// Issue 60, M3: in read_only, a tool of an MCP server's `auto_approve` is refused like any
/// other call that is not `safe` — not run, not asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_refuses_an_auto_approved_mcp_tool() {
    let everything = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(everything.exists(), "run `make mcp-deps`");
    let server = ScriptedServer::start(vec![
        tools(&[("every__echo", json!({"message": "ran in read-only"}))]),
        text("Refused."),
    ])
    .await;
    let sb = Sandbox::new();
    // Under a name of its own: other tests run the same server at once.
    let linked = sb.dir.path().join("acp-readonly-everything.js");
    std::os::unix::fs::symlink(&everything, &linked).expect("link");
    sb.global_config(
        &json!({"mcp_servers": {"every": {"command": "node",
            "args": [linked.to_string_lossy(), "stdio"], "auto_approve": ["echo"]}}})
        .to_string(),
    );
    let work = sb.work.to_string_lossy().to_string();
    let report = client(
        &sb,
        &server.base_url(),
        json!({
            "permissions": ["allow_once"],
            "steps": [
                {"new": work},
                {"request": "session/set_mode", "params": {"sessionId": "$session", "modeId": "read_only"}},
                {"prompt": "echo something"},
            ],
        }),
    )
    .await;
    assert_eq!(stops(&report), ["end_turn"], "{report}");
    let requests = server.requests();
    assert!(tool_names(&requests[0]).contains(&"every__echo".to_string()));
    let refused = tool_results(&requests[1]);
    assert!(refused[0].contains("denied"), "{refused:?}");
    assert!(
        !refused[0].contains("Echo: ran in read-only"),
        "{refused:?}"
    );
    assert!(entries(&report, "permission").is_empty(), "{report}");
    processes_gone(&linked.to_string_lossy()).await;
}
