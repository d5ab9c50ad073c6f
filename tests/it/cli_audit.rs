//! `odek audit`: what untrusted content reached the model, from where, in which turn.

use serde_json::{Value, json};

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_shows_attachments_and_tool_outputs_by_turn_and_goes_with_the_session() {
    let server = ScriptedServer::start(vec![
        tools(&[("read_file", json!({"path": "notes.md"}))]),
        text("read it"),
        tools(&[("search_files", json!({"pattern": "TODO"}))]),
        text("found it"),
    ])
    .await;
    let sb = Sandbox::new();
    std::fs::write(sb.work.join("notes.md"), "TODO: ship it\n").expect("notes");
    std::fs::write(sb.work.join("brief.txt"), "the brief\n").expect("brief");

    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--ctx", "brief.txt", "read the notes"]);
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", show(&out));
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["continue", "find the TODOs"]);
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", show(&out));

    let audit = |args: &[&str]| {
        let mut cmd = sb.odek(&server.base_url());
        cmd.arg("audit").args(args);
        cmd
    };
    let out = output(audit(&[])).await;
    assert!(out.status.success(), "{}", show(&out));
    let view = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(view.contains("\"read the notes\""), "{view}");
    let turn1 = view.find("\nTurn 1\n").expect("turn 1");
    let turn2 = view.find("\nTurn 2\n").expect("turn 2");
    let at = |needle: &str| {
        view.find(needle)
            .unwrap_or_else(|| panic!("{needle}: {view}"))
    };
    assert!(
        turn1 < at("call 0   ") && at("ctx:brief.txt") < turn2,
        "{view}"
    );
    assert!(at("read_file:") < turn2, "{view}");
    assert!(at("search_files") > turn2, "{view}");
    assert!(
        !view.contains("TODO: ship it"),
        "no text without --content: {view}"
    );

    let out = output(audit(&["--content", "--turn", "1"])).await;
    let view = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(view.contains("│ 1|TODO: ship it"), "{view}");
    assert!(view.contains("│ the brief"), "{view}");
    assert!(!view.contains("Turn 2"), "{view}");

    let out = output(audit(&["--json"])).await;
    let records: Vec<Value> = serde_json::from_slice(&out.stdout).expect("json");
    let seen: Vec<(u64, u64, String)> = records
        .iter()
        .filter(|r| r["source"] != "plan")
        .map(|r| {
            let source = r["source"].as_str().unwrap_or("");
            let short = source.split(':').next().unwrap_or(source).to_string();
            (
                r["turn"].as_u64().unwrap_or(0),
                r["iteration"].as_u64().unwrap_or(9),
                short,
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            (1, 0, "ctx".to_string()),
            (1, 1, "read_file".to_string()),
            (2, 1, "search_files".to_string())
        ],
        "{records:#?}"
    );

    let out = output(audit(&["--list"])).await;
    let list = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(list.contains("read the notes"), "{list}");
    let id = list
        .lines()
        .nth(1)
        .and_then(|l| l.split_whitespace().next())
        .expect("a listed session")
        .to_string();
    let log = sb.home.join("sessions/audit").join(format!("{id}.jsonl"));
    assert!(log.exists());

    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["session", "delete", &id]);
    assert!(output(cmd).await.status.success());
    assert!(!log.exists(), "the audit log is deleted with its session");
    let out = output(audit(&[&id])).await;
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no audit log for it"),
        "{}",
        show(&out)
    );
    let out = output(audit(&["--list"])).await;
    assert!(String::from_utf8_lossy(&out.stdout).contains("No audit logs yet"));
}
