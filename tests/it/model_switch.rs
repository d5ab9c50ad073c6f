//! Switching a session's model (docs/MODELS.md) through the real binary: `continue --model`,
//! a move to another provider's wire, the REPL's `/model` in a pseudo-terminal.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::support::anthropic::with_thinking;
use crate::support::serve::Served;
use crate::support::*;

async fn odek_ok(sb: &Sandbox, base_url: &str, args: &[&str]) -> std::process::Output {
    let mut cmd = sb.odek(base_url);
    cmd.args(args);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    out
}

/// The model each saved run of `session` names.
fn run_models(session: &Value) -> Vec<Value> {
    let runs = session["runs"].as_array().expect("runs");
    runs.iter().map(|r| r["model"].clone()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_model_switches_the_session_and_the_next_continue_keeps_it() {
    let server = ScriptedServer::start(vec![text("one"), text("two"), text("three")]).await;
    let sb = Sandbox::new();
    let url = server.base_url();
    odek_ok(&sb, &url, &["run", "first"]).await;
    let out = odek_ok(&sb, &url, &["continue", "--model", "other", "second"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "odek: note: this session moves from test-model (no provider) to other (no provider)"
        ),
        "{stderr}"
    );
    odek_ok(&sb, &url, &["continue", "third"]).await;
    let reqs = server.requests();
    let models: Vec<&Value> = reqs.iter().map(|r| &r["model"]).collect();
    assert_eq!(models, ["test-model", "other", "other"]);
    // The conversation carried on: the switched turn saw the first one.
    assert!(reqs[1].to_string().contains("\"one\""));
    let session = only_session(&sb);
    assert_eq!(session["model"], "other");
    assert_eq!(
        run_models(&session),
        [json!("test-model"), json!("other"), json!("other")]
    );

    let out = odek_ok(&sb, &url, &["usage", "--json"]).await;
    let usage: Value = serde_json::from_slice(&out.stdout).expect("usage json");
    assert_eq!(usage["by_model"]["other"]["runs"], 2, "{usage}");
    assert_eq!(usage["by_model"]["test-model"]["runs"], 1, "{usage}");
}

const SIGNATURE: &str = "EqQBCkgIARABGAIiQLsk-opaque-signature-0123456789/+==";

/// A session on an Anthropic-format provider entry moves to a Chat Completions entry with
/// `continue --model PROVIDER:MODEL`: its endpoint and key, the thinking the old provider
/// kept dropped (and said so), the conversation kept, the next `continue` on the new wire.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_to_another_provider_drops_only_the_old_providers_state() {
    let claude = ScriptedServer::start_anthropic(vec![with_thinking(
        text("The notes say hello."),
        json!([{"type": "thinking", "thinking": "Easy.", "signature": SIGNATURE}]),
    )])
    .await;
    let chat = ScriptedServer::start(vec![text("On chat now."), text("Still chat.")]).await;
    let sb = Sandbox::new();
    sb.global_config(
        &json!({"providers": {
            "claude": {"format": "anthropic", "base_url": claude.base_url(), "api_key": "claude-key-1"},
            "gw": {"base_url": chat.base_url(), "api_key": "gw-key-2"}
        }})
        .to_string(),
    );
    let claude_url = claude.base_url();
    odek_ok(
        &sb,
        &claude_url,
        &[
            "run",
            "--provider",
            "claude",
            "--model",
            "claude-test",
            "hi",
        ],
    )
    .await;
    assert!(only_session(&sb).to_string().contains(SIGNATURE));

    let out = odek_ok(
        &sb,
        &claude_url,
        &["continue", "--model", "gw:small", "go on"],
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "odek: note: this session moves from claude (claude-test) to gw (small); what the previous provider kept for itself in 1 message(s)"
        ),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("On chat now."));
    let first = chat.requests()[0].clone();
    assert_eq!(first["model"], "small");
    assert!(first.to_string().contains("The notes say hello."));
    assert!(!first.to_string().contains(SIGNATURE));
    assert_eq!(chat.auth_headers()[0].as_deref(), Some("Bearer gw-key-2"));
    let session = only_session(&sb);
    assert_eq!(session["provider"], "gw");
    assert_eq!(session["model"], "small");
    assert_eq!(session["base_url"], chat.base_url());
    assert!(!session.to_string().contains("provider_state"));
    assert_eq!(run_models(&session), [json!("claude-test"), json!("small")]);

    odek_ok(&sb, &claude_url, &["continue", "and still?"]).await;
    assert_eq!(chat.requests()[1]["model"], "small");
    assert_eq!(claude.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_provider_or_a_missing_key_is_refused_and_changes_nothing() {
    let server = ScriptedServer::start(vec![text("one"), text("two")]).await;
    let sb = Sandbox::new();
    let url = server.base_url();
    odek_ok(&sb, &url, &["run", "first"]).await;
    let mut cmd = sb.odek(&url);
    cmd.args(["continue", "--model", "anthropic:claude-x", "second"]);
    let out = output(cmd).await;
    assert_ne!(out.status.code(), Some(0), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("ANTHROPIC_API_KEY"), "{stderr}");
    assert_eq!(only_session(&sb)["model"], "test-model");
    assert_eq!(server.requests().len(), 1);
}

/// `/model other` in the REPL: the next request asks `other`; `/model` and `/info` say so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repl_model_switches_the_next_request() {
    let server = ScriptedServer::start(vec![text("answer one"), text("answer two")]).await;
    let sb = Sandbox::new();
    let cmd = repl_command(&sb, &server);
    in_pty(cmd, move |p| {
        p.exp_string("odek 1> ")?;
        p.send_line("first question")?;
        p.exp_string("answer one")?;
        p.exp_string("odek 2> ")?;
        p.send_line("/model other")?;
        p.exp_string("Model: other")?;
        p.send_line("/model")?;
        p.exp_string("* other")?;
        p.send_line("/info")?;
        p.exp_string("Model:   other")?;
        p.send_line("second question")?;
        p.exp_string("answer two")?;
        p.send_line("/exit")?;
        p.exp_eof()?;
        Ok(())
    })
    .await;
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0]["model"], "test-model");
    assert_eq!(reqs[1]["model"], "other");
    assert_eq!(last_user_text(&reqs[1]), "second question");
    let session = only_session(&sb);
    assert_eq!(session["model"], "other");
    assert_eq!(run_models(&session), [json!("test-model"), json!("other")]);
}

/// `POST /api/sessions/{id}/model`: the open session's next prompt asks the model picked, on
/// its own provider's endpoint and key when it names one; a model that cannot be asked is a
/// 400 that changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_switches_a_sessions_model_and_its_next_prompt_asks_it() {
    let server = ScriptedServer::start(vec![text("one"), text("two")]).await;
    let gw = ScriptedServer::start(vec![text("three")]).await;
    let sb = Sandbox::new();
    sb.global_config(
        &json!({"providers": {"gw": {"base_url": gw.base_url(), "api_key": "gw-key-3"}}})
            .to_string(),
    );
    let served = Served::start(&sb, &server.base_url(), &[]);
    let started = served.prompt_completed(json!({"content": "first"})).await;
    let id = started["session_id"]
        .as_str()
        .expect("session id")
        .to_string();
    let path = format!("/api/sessions/{id}/model");

    let switched = served.post(&path, json!({"model": "other"})).await;
    assert_eq!(switched.status, 200, "{}", switched.text);
    assert_eq!(switched.json["model"], "other");
    assert!(
        switched.json["note"]
            .as_str()
            .is_some_and(|n| n.starts_with("this session moves from test-model")),
        "{}",
        switched.text
    );
    assert_eq!(only_session(&sb)["model"], "other", "saved at once");
    served
        .prompt_completed(json!({"content": "second", "session_id": id}))
        .await;
    assert_eq!(server.requests()[1]["model"], "other");

    let refused = served
        .post(&path, json!({"model": "anthropic:claude-x"}))
        .await;
    assert_eq!(refused.status, 400, "{}", refused.text);
    assert!(refused.text.contains("no API key"), "{}", refused.text);
    assert_eq!(only_session(&sb)["model"], "other");

    let moved = served.post(&path, json!({"model": "gw:small"})).await;
    assert_eq!(moved.status, 200, "{}", moved.text);
    assert_eq!(moved.json["model"], "gw:small");
    served
        .prompt_completed(json!({"content": "third", "session_id": id}))
        .await;
    let sent = gw.requests()[0].clone();
    assert_eq!(sent["model"], "small");
    assert!(
        sent.to_string().contains("\"two\""),
        "the conversation goes on"
    );
    assert_eq!(gw.auth_headers()[0].as_deref(), Some("Bearer gw-key-3"));
    assert_eq!(server.requests().len(), 2);
    let session = only_session(&sb);
    assert_eq!(session["provider"], "gw");
    assert_eq!(
        run_models(&session),
        [json!("test-model"), json!("other"), json!("small")]
    );
}

/// ACP through the official TypeScript SDK: `session/new` answers with the models (and the
/// `model` config option); `session/set_model` and `session/set_config_option` switch the
/// session for its next prompts; a model that cannot be asked is an error; `session/load`
/// in another process goes on with the switched model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_set_model_switches_the_sessions_next_prompts() {
    let server =
        ScriptedServer::start(vec![text("one"), text("two"), text("three"), text("four")]).await;
    let sb = Sandbox::new();
    sb.global_config(r#"{"models": ["other"]}"#);
    let work = sb.work.to_string_lossy().to_string();
    let set = |method: &str, params: Value| json!({"request": method, "params": params});
    let report = crate::acp::client(
        &sb,
        &server.base_url(),
        json!({"steps": [
            {"new": work},
            {"prompt": "first"},
            set("session/set_model", json!({"sessionId": "$session", "modelId": "other"})),
            {"prompt": "second"},
            set("session/set_config_option",
                json!({"sessionId": "$session", "configId": "model", "value": "third-model"})),
            {"prompt": "third"},
            set("session/set_model", json!({"sessionId": "$session", "modelId": "anthropic:claude-x"})),
        ]}),
    )
    .await;
    let log = report["log"].as_array().expect("log");
    let new = &log[0]["new"];
    assert_eq!(new["models"]["currentModelId"], "test-model", "{report}");
    let ids: Vec<&Value> = new["models"]["availableModels"]
        .as_array()
        .expect("models")
        .iter()
        .map(|m| &m["modelId"])
        .collect();
    assert_eq!(ids, ["test-model", "other"]);
    let option = &new["configOptions"][0];
    assert_eq!(
        (&option["id"], &option["category"], &option["currentValue"]),
        (&json!("model"), &json!("model"), &json!("test-model"))
    );
    let answers: Vec<&Value> = log.iter().filter_map(|e| e.get("answer")).collect();
    assert_eq!(answers[0], &json!({}), "{report}");
    assert_eq!(
        answers[1]["configOptions"][0]["currentValue"],
        "third-model"
    );
    let errors: Vec<&Value> = log.iter().filter_map(|e| e.get("error")).collect();
    assert_eq!(errors.len(), 1, "{report}");
    assert!(
        errors[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("no API key")),
        "{report}"
    );
    let models: Vec<Value> = server
        .requests()
        .iter()
        .map(|r| r["model"].clone())
        .collect();
    assert_eq!(models, ["test-model", "other", "third-model"]);
    let id = only_session(&sb)["id"].as_str().expect("id").to_string();
    assert_eq!(only_session(&sb)["model"], "third-model");

    let report = crate::acp::client(
        &sb,
        &server.base_url(),
        json!({"steps": [{"load": id, "cwd": work}, {"prompt": "fourth"}]}),
    )
    .await;
    let log = report["log"].as_array().expect("log");
    let loaded = log.iter().find_map(|e| e.get("loaded")).expect("loaded");
    assert_eq!(
        loaded["models"]["currentModelId"], "third-model",
        "{report}"
    );
    assert_eq!(server.requests()[3]["model"], "third-model");
}

/// A session switched with `continue --model` hands its model to the sub-agents its turn
/// delegates to.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sub_agents_of_a_switched_session_ask_its_model() {
    use crate::support::keyed::{Answer, KeyedServer};
    let answer: Answer = Arc::new(|first: String, request: Value| {
        Box::pin(async move {
            let messages = request["messages"].as_array().cloned().unwrap_or_default();
            let results = messages.iter().filter(|m| m["role"] == "tool").count();
            let last_user = messages.iter().rev().find(|m| m["role"] == "user");
            let asked = last_user.and_then(|m| m["content"].as_str()).unwrap_or("");
            let reply = |text: &str| json!({"role": "assistant", "content": text});
            match (first == "first", asked == "first", results) {
                (false, _, _) => reply("child done"),
                (true, true, _) => reply("one"),
                (true, false, 0) => json!({"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_d", "type": "function", "function": {"name": "delegate_tasks",
                     "arguments": json!({"tasks": [{"goal": "count the files"}]}).to_string()}}]}),
                (true, false, _) => reply("delegated"),
            }
        })
    });
    let server = KeyedServer::start(answer).await;
    let sb = Sandbox::new();
    sb.global_config(r#"{"stream": false, "dangerous": {"classes": {"system_write": "allow"}}}"#);
    let url = server.base_url();
    odek_ok(&sb, &url, &["run", "first"]).await;
    let out = odek_ok(&sb, &url, &["continue", "--model", "other", "delegate it"]).await;
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("delegated"),
        "{}",
        show(&out)
    );
    let requests = server.requests();
    let first_user = crate::support::keyed::first_user;
    let children: Vec<&Value> = requests
        .iter()
        .filter(|r| first_user(r) != "first")
        .collect();
    assert!(
        !children.is_empty(),
        "a child asked the model: {requests:?}"
    );
    assert!(
        children.iter().all(|r| r["model"] == "other"),
        "{children:?}"
    );
    assert_eq!(requests.last().expect("parent")["model"], "other");
}
