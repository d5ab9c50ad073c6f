//! `fallback_models` through the real binary: a model that answers 429 forever, its retries
//! spent, followed by a fallback on another provider (its own endpoint, key and wire) — the
//! answer, the terminal's line, the `model_fallback` event, the next turn asking the first
//! model again without the fallback's private state; a 400 that does not fall back; the
//! setting checked at load; a sub-agent and a scheduled run falling back.

use serde_json::{Value, json};

use crate::support::anthropic::with_thinking;
use crate::support::*;

const MAIN_KEY: &str = "sk-main-AbCdEfGhIjKlMnOpQrSt0123456789";
const BACKUP_KEY: &str = "sk-backup-ZyXwVuTsRqPoNmLkJiHg9876543210";
/// The fallback's thinking signature: it must never reach the first provider.
const SIGNATURE: &str = "EqQBCkgIARABGAIiQLbackupOnlySignature0123456789/+==";

fn busy() -> Reply {
    Reply::Status(
        429,
        vec![],
        r#"{"error": {"type": "rate_limit_error", "message": "slow down"}}"#.into(),
    )
}

/// Two attempts a request, a millisecond between them; `main` the configured provider,
/// `backup` the fallback's, both given with their keys; `more` merged in.
fn sandbox(main: &str, backup: &str, format: &str, more: Value) -> Sandbox {
    let sb = Sandbox::new();
    let mut config = json!({
        "provider": "main",
        "providers": {
            "main": {"format": format, "base_url": main, "api_key": MAIN_KEY},
            "backup": {"format": format, "base_url": backup, "api_key": "${BACKUP_KEY}"},
        },
        "fallback_models": ["backup:backup-model"],
        "llm": {"max_attempts": 2, "retry_initial_delay_ms": 1},
    });
    if let (Some(to), Value::Object(more)) = (config.as_object_mut(), more) {
        to.extend(more);
    }
    sb.global_config(&config.to_string());
    sb
}

fn odek(sb: &Sandbox, server: &ScriptedServer) -> std::process::Command {
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("BACKUP_KEY", BACKUP_KEY);
    cmd
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_forever_falls_back_for_the_turn_and_the_next_turn_asks_the_first_model_again() {
    let thinking =
        json!([{"type": "thinking", "thinking": "Backup thinks.", "signature": SIGNATURE}]);
    let main =
        ScriptedServer::start_anthropic(vec![busy(), busy(), text("The first is back.")]).await;
    let backup = ScriptedServer::start_anthropic(vec![with_thinking(
        tools_with_text("Reading.", &[("read_file", json!({"path": "notes.txt"}))]),
        thinking,
    )])
    .await;
    backup.push(vec![text("From the backup.")]);
    // The fallback costs a thousand times the first model: the turn is priced at its own.
    let price =
        |usd: f64| json!({"input": usd, "cached_input": usd, "cache_write": usd, "output": usd});
    let pricing = json!({"pricing": {"test-model": price(1.0), "backup-model": price(1000.0)}});
    let sb = sandbox(&main.base_url(), &backup.base_url(), "anthropic", pricing);
    std::fs::write(sb.work.join("notes.txt"), "hello").expect("notes");
    let events = sb.dir.path().join("events.jsonl");
    let mut first = odek(&sb, &main);
    first
        .args(["run", "--events-jsonl"])
        .arg(&events)
        .args(["--thinking", "low", "read my notes"]);
    let out = output(first).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(stdout(&out).contains("From the backup."), "{}", show(&out));
    assert!(
        stderr(&out).contains(
            "odek: 429 Too Many Requests — retries spent on test-model, falling back to backup:backup-model"
        ),
        "{}",
        show(&out)
    );
    assert_eq!(main.requests().len(), 2, "two attempts, then the fallback");
    let asked = backup.requests();
    assert_eq!(asked.len(), 2, "the rest of the turn stays on the fallback");
    assert!(asked.iter().all(|r| r["model"] == "backup-model"));
    assert!(
        backup
            .auth_headers()
            .iter()
            .all(|k| k.as_deref() == Some(BACKUP_KEY)),
        "the fallback's own key: {:?}",
        backup.auth_headers()
    );
    assert!(
        asked[1].to_string().contains(SIGNATURE),
        "its own thinking goes back to it"
    );
    let fell = events_of(&read(&events), "model_fallback");
    assert_eq!(fell.len(), 1, "{}", read(&events));
    assert_eq!(
        fell[0]["data"],
        json!({"from": "test-model", "to": "backup:backup-model", "reason": "429 Too Many Requests"})
    );
    let session = only_session(&sb);
    assert_eq!(
        session["runs"][0]["model"], "backup-model",
        "the turn records the model that answered"
    );
    let run = &session["runs"][0];
    let tokens =
        run["input_tokens"].as_u64().expect("in") + run["output_tokens"].as_u64().expect("out");
    assert!(tokens > 0, "{run}");
    assert_eq!(
        run["cost_microusd"].as_u64(),
        Some(tokens * 1000),
        "priced at the fallback's price: {run}"
    );
    assert_eq!(
        session["model"], "test-model",
        "the session stays on its model"
    );
    let saved = session.to_string();
    assert!(saved.contains(r#""origin":"backup""#), "{saved}");
    assert!(!saved.contains(BACKUP_KEY) && !saved.contains(MAIN_KEY));

    let mut next = odek(&sb, &main);
    next.args(["continue", "and now?"]);
    let out = output(next).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        stdout(&out).contains("The first is back."),
        "{}",
        show(&out)
    );
    let reqs = main.requests();
    assert_eq!(reqs.len(), 3, "the next turn asks the first model again");
    assert_eq!(reqs[2]["model"], "test-model");
    assert!(
        !reqs[2].to_string().contains(SIGNATURE),
        "the fallback's thinking never reaches another provider, same wire or not"
    );
    assert!(reqs[2].to_string().contains("From the backup."));
    assert_eq!(backup.requests().len(), 2);
    assert_eq!(only_session(&sb)["runs"][1]["model"], "test-model");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_400_does_not_fall_back_and_a_bad_entry_is_refused_at_load() {
    let main = ScriptedServer::start(vec![Reply::Status(400, vec![], "bad request".into())]).await;
    let backup = ScriptedServer::start(vec![text("never")]).await;
    let sb = sandbox(&main.base_url(), &backup.base_url(), "chat", json!({}));
    let events = sb.dir.path().join("events.jsonl");
    let mut cmd = odek(&sb, &main);
    cmd.args(["run", "--events-jsonl"]).arg(&events).arg("hi");
    let out = output(cmd).await;
    assert_ne!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        backup.requests().is_empty(),
        "a refusal is not retried elsewhere"
    );
    assert!(!stderr(&out).contains("falling back"), "{}", show(&out));
    assert!(events_of(&read(&events), "model_fallback").is_empty());

    let sb = sandbox(
        &main.base_url(),
        &backup.base_url(),
        "chat",
        json!({"fallback_models": ["nowhere:some-model"]}),
    );
    let mut cmd = odek(&sb, &main);
    cmd.args(["run", "hi"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        stderr(&out).contains("fallback_models")
            && stderr(&out)
                .contains("\"nowhere:some-model\": expected PROVIDER:MODEL with a known provider"),
        "{}",
        show(&out)
    );
    assert_eq!(main.requests().len(), 1, "refused before any request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_agent_falls_back_with_the_key_its_parent_hands_over() {
    let goal = "count the files";
    let main = ScriptedServer::start(vec![
        tools(&[("delegate_tasks", json!({"tasks": [{"goal": goal}]}))]),
        busy(),
        busy(),
        text("The child counted."),
    ])
    .await;
    let backup = ScriptedServer::start(vec![text("There are 3 files.")]).await;
    let sb = sandbox(
        &main.base_url(),
        &backup.base_url(),
        "chat",
        json!({"stream": false, "dangerous": {"classes": {"system_write": "allow"}}}),
    );
    let mut cmd = odek(&sb, &main);
    cmd.args(["run", "delegate the count"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let asked = backup.requests();
    assert_eq!(asked.len(), 1, "the child fell back: {}", show(&out));
    assert!(asked[0].to_string().contains(goal));
    assert!(
        !tool_names(&asked[0]).contains(&"delegate_tasks".to_string()),
        "the child asked (it offers no delegate_tasks), not the parent: {}",
        show(&out)
    );
    assert_eq!(
        backup.auth_headers()[0].as_deref(),
        Some(format!("Bearer {BACKUP_KEY}").as_str()),
        "handed over on the descriptor: the child's environment holds no key"
    );
    let reqs = main.requests();
    assert_eq!(reqs.len(), 4, "{}", show(&out));
    assert!(
        tool_results(&reqs[3])[0].contains("There are 3 files."),
        "{:?}",
        tool_results(&reqs[3])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduled_run_falls_back() {
    let main = ScriptedServer::start(vec![busy(), busy()]).await;
    let backup = ScriptedServer::start(vec![text("Three issues are open.")]).await;
    let sb = sandbox(&main.base_url(), &backup.base_url(), "chat", json!({}));
    let mut add = odek(&sb, &main);
    add.args([
        "schedule",
        "add",
        "--cron",
        "@daily",
        "--name",
        "issues",
        "count the issues",
    ]);
    let out = output(add).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let mut run = odek(&sb, &main);
    run.args(["schedule", "run", "--stdout", "issues"]);
    let out = output(run).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(stdout(&out), "Three issues are open.\n");
    assert_eq!(main.requests().len(), 2);
    assert_eq!(backup.requests()[0]["model"], "backup-model");
}
