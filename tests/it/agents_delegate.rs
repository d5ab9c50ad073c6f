//! Named agents at work through the real binary: `delegate_tasks` running a task as a named
//! agent (its model, only its tools within the parent's, its prompt), a Claude Code agent
//! file used unchanged, a project's agent refused until trusted, an agent on another
//! provider (that provider's key, handed over by the parent), `odek run --agent NAME`, and
//! the first request's size with three agents defined.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::support::keyed::{Answer, KeyedServer, first_user};
use crate::support::*;

const KEY: &str = "sk-parent-AbCdEfGhIjKlMnOpQrSt0123456789";
const OTHER_KEY: &str = "sk-other-ZyXwVuTsRqPoNmLkJiHg9876543210";
const TASK: &str = "delegate the review";
const GOAL: &str = "review: the parser";

/// The user's own agent (trusted without a record).
const REVIEWER: &str = "---\n\
name: reviewer\n\
description: Reviews a change for bugs and says where they are.\n\
tools: [read_file, search_files, shell]\n\
model: review-model\n\
max_iter: 3\n\
---\n\
You are the reviewer. Report bugs only, each with its file and line.\n";

/// A file as Claude Code's `/agents` writes it: its tool names, its model alias, its colour.
const CLAUDE_AGENT: &str = "---\n\
name: code-reviewer\n\
description: Expert code review specialist. Use proactively after writing code.\n\
tools: Read, Grep\n\
model: sonnet\n\
color: blue\n\
---\n\
\n\
You are a senior code reviewer ensuring high standards of code quality.\n";

fn write(path: PathBuf, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(&path, text).expect("write");
}

fn tool_call(name: &str, args: Value) -> Value {
    json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": format!("call_{name}"), "type": "function", "function": {"name": name, "arguments": args.to_string()}}]})
}

/// The parent delegates one task as `agent`, then answers; the child answers its goal.
fn script(agent: &'static str) -> Answer {
    Arc::new(move |first: String, request: Value| {
        Box::pin(async move {
            if first != TASK {
                return json!({"role": "assistant", "content": "no bugs found"});
            }
            if tool_results(&request).is_empty() {
                tool_call(
                    "delegate_tasks",
                    json!({"tasks": [{"goal": GOAL, "agent": agent}]}),
                )
            } else {
                json!({"role": "assistant", "content": "reviewed"})
            }
        })
    })
}

fn sandbox(global: Value) -> Sandbox {
    let sb = Sandbox::new();
    let mut config = json!({"stream": false, "context_window": 100000,
        "dangerous": {"classes": {"system_write": "allow"}}});
    if let (Some(to), Value::Object(more)) = (config.as_object_mut(), global) {
        to.extend(more);
    }
    sb.global_config(&config.to_string());
    sb
}

/// `odek run TASK` against `server` (extra arguments before the task); it must succeed.
async fn delegate(sb: &Sandbox, server: &KeyedServer, extra: &[&str]) -> std::process::Output {
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("ODEK_API_KEY", KEY)
        .arg("run")
        .args(extra)
        .arg(TASK);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    out
}

/// The child's requests (those whose first user message is not the parent's task).
fn child_requests(requests: &[Value]) -> Vec<Value> {
    requests
        .iter()
        .filter(|r| first_user(r) != TASK)
        .cloned()
        .collect()
}

/// The parent's delegate result (the last tool result of its last request).
fn delegate_result(requests: &[Value]) -> String {
    let last = requests
        .iter()
        .rfind(|r| first_user(r) == TASK)
        .expect("the parent's last request");
    tool_results(last).last().cloned().unwrap_or_default()
}

fn system_text(request: &Value) -> String {
    messages(request)
        .first()
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string()
}

fn delegate_def(request: &Value) -> Value {
    request["tools"]
        .as_array()
        .and_then(|tools| {
            tools
                .iter()
                .find(|t| t["function"]["name"] == "delegate_tasks")
        })
        .map(|t| t["function"].clone())
        .expect("delegate_tasks is offered")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_agents_child_asks_with_its_model_its_prompt_and_only_its_tools() {
    let server = KeyedServer::start(script("reviewer")).await;
    let sb = sandbox(json!({}));
    write(sb.home.join("agents/reviewer.md"), REVIEWER);
    delegate(&sb, &server, &["--no-tool", "shell"]).await;
    let requests = server.requests();
    // The parent's tool lists the agent by name and description, and takes `agent`.
    let def = delegate_def(&requests[0]);
    let description = def["description"].as_str().unwrap_or("");
    assert!(
        description.ends_with("\n- reviewer: Reviews a change for bugs and says where they are."),
        "{description}"
    );
    assert_eq!(
        def["parameters"]["properties"]["tasks"]["items"]["properties"]["agent"]["type"],
        "string"
    );
    let children = child_requests(&requests);
    assert_eq!(children.len(), 1, "{children:?}");
    let child = &children[0];
    assert_eq!(child["model"], "review-model");
    // Its tools within the parent's: `shell` is not the parent's (--no-tool shell).
    assert_eq!(tool_names(child), ["read_file", "search_files"]);
    let system = system_text(child);
    assert!(
        system.starts_with("You are the reviewer. Report bugs only"),
        "{system}"
    );
    assert!(
        system.contains("Safety:"),
        "the safety rules stay: {system}"
    );
    assert!(!system.contains("You are odek"), "{system}");
    // No plan tool among its tools: it is not told to plan.
    assert!(!system.contains("with the plan tool"), "{system}");
    // The parent's own requests keep odek's identity and the parent's model.
    assert!(system_text(&requests[0]).contains("You are odek"));
    assert_eq!(requests[0]["model"], "test-model");
    let result = delegate_result(&requests);
    assert!(result.contains("sub-agent 1/1 (reviewer): ok"), "{result}");
    assert!(result.contains("no bugs found"), "{result}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claude_code_agent_file_is_used_unchanged_once_trusted() {
    let server = KeyedServer::start(script("code-reviewer")).await;
    let sb = sandbox(json!({}));
    write(
        sb.work.join(".claude/agents/code-reviewer.md"),
        CLAUDE_AGENT,
    );
    let mut trust = sb.odek(&server.base_url());
    trust.args(["agents", "trust", "code-reviewer"]);
    let trusted = output(trust).await;
    assert_eq!(trusted.status.code(), Some(0), "{}", show(&trusted));
    delegate(&sb, &server, &[]).await;
    let children = child_requests(&server.requests());
    assert_eq!(children.len(), 1);
    let child = &children[0];
    // Read → read_file and batch_read, Grep → search_files; `sonnet` names a Claude model
    // only on the anthropic provider, so the parent's model goes.
    assert_eq!(
        tool_names(child),
        ["read_file", "search_files", "batch_read"]
    );
    assert_eq!(child["model"], "test-model");
    assert!(
        system_text(child).starts_with("You are a senior code reviewer"),
        "{}",
        system_text(child)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_projects_agent_is_refused_until_trusted_then_used() {
    let server = KeyedServer::start(script("fixer")).await;
    let sb = sandbox(json!({}));
    write(
        sb.work.join(".odek/agents/fixer.md"),
        "---\nname: fixer\ndescription: Fixes bugs.\ntools: [read_file, patch]\nmodel: fix-model\n---\nYou fix bugs.\n",
    );
    delegate(&sb, &server, &[]).await;
    let requests = server.requests();
    // Not listed, and refused with what to run; no child started.
    let description = delegate_def(&requests[0])["description"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(!description.contains("fixer"), "{description}");
    assert!(child_requests(&requests).is_empty());
    let refused = delegate_result(&requests);
    assert!(
        refused.contains("delegate_tasks: task 1: agent \"fixer\"")
            && refused.contains("is not trusted")
            && refused.contains("odek agents trust fixer"),
        "{refused}"
    );

    let mut trust = sb.odek(&server.base_url());
    trust.args(["agents", "trust", "fixer"]);
    let trusted = output(trust).await;
    assert_eq!(trusted.status.code(), Some(0), "{}", show(&trusted));
    delegate(&sb, &server, &[]).await;
    let requests = server.requests();
    let children = child_requests(&requests);
    assert_eq!(children.len(), 1, "{children:?}");
    assert_eq!(children[0]["model"], "fix-model");
    assert_eq!(tool_names(&children[0]), ["read_file", "patch"]);
    assert!(system_text(&children[0]).starts_with("You fix bugs."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_on_another_provider_gets_that_providers_key_never_the_parents() {
    let parent = KeyedServer::start(script("scout")).await;
    let other = KeyedServer::start(script("scout")).await;
    let sb = sandbox(json!({"providers": {"elsewhere": {
        "base_url": other.base_url(), "api_key": "${OTHER_KEY}", "format": "chat"}}}));
    write(
        sb.home.join("agents/scout.md"),
        "---\nname: scout\ndescription: Looks around.\nprovider: elsewhere\nmodel: scout-model\n---\nYou scout.\n",
    );
    let mut cmd = sb.odek(&parent.base_url());
    cmd.env("ODEK_API_KEY", KEY)
        .env("OTHER_KEY", OTHER_KEY)
        .args(["run", TASK]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    // The child asked the other provider, with its model and its key.
    assert!(child_requests(&parent.requests()).is_empty());
    let asked = other.requests();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["model"], "scout-model");
    let heads = other.heads().join("\n").to_ascii_lowercase();
    assert!(
        heads.contains(&format!(
            "authorization: bearer {}",
            OTHER_KEY.to_ascii_lowercase()
        )),
        "{heads}"
    );
    assert!(
        !heads.contains(&KEY.to_ascii_lowercase()),
        "the parent's key went elsewhere"
    );
    let parent_heads = parent.heads().join("\n");
    assert!(!parent_heads.contains(OTHER_KEY));
    assert!(delegate_result(&parent.requests()).contains("no bugs found"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odek_run_as_an_agent_sends_its_model_tools_and_prompt_from_the_first_request() {
    let server = ScriptedServer::start(vec![text("done")]).await;
    let sb = sandbox(json!({}));
    write(sb.home.join("agents/reviewer.md"), REVIEWER);
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--agent", "reviewer", "look at the parser"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let first = &server.requests()[0];
    assert_eq!(first["model"], "review-model");
    assert_eq!(tool_names(first), ["read_file", "search_files", "shell"]);
    let system = system_text(first);
    assert!(system.starts_with("You are the reviewer."), "{system}");
    assert!(system.contains("Safety:"), "{system}");

    // `odek config --agent` shows the layer's values with their source.
    let mut config = sb.odek(&server.base_url());
    config.args(["config", "--json", "--agent", "reviewer"]);
    let shown = output(config).await;
    assert_eq!(shown.status.code(), Some(0), "{}", show(&shown));
    let json: Value = serde_json::from_slice(&shown.stdout).expect("json");
    for key in [
        "system",
        "model",
        "tools.enabled",
        "max_iterations",
        "planning.enabled",
    ] {
        assert_eq!(json[key]["source"], "agent reviewer", "{key}: {json}");
    }
    assert_eq!(json["max_iterations"]["value"], 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odek_run_refuses_an_unknown_or_untrusted_agent_before_any_request() {
    let server = ScriptedServer::start(vec![text("never")]).await;
    let sb = sandbox(json!({}));
    write(sb.home.join("agents/reviewer.md"), REVIEWER);
    write(
        sb.work.join(".odek/agents/fixer.md"),
        "---\nname: fixer\ndescription: Fixes bugs.\n---\nYou fix bugs.\n",
    );
    for (name, says) in [
        ("nobody", "no agent named \"nobody\" (known: reviewer)"),
        ("fixer", "odek agents trust fixer"),
    ] {
        let mut cmd = sb.odek(&server.base_url());
        cmd.args(["run", "--agent", name, "x"]);
        let out = output(cmd).await;
        assert_ne!(out.status.code(), Some(0), "{}", show(&out));
        assert!(stderr(&out).contains(says), "{}", show(&out));
    }
    assert!(server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_agents_keep_a_plain_runs_first_request_small_and_none_add_nothing() {
    let mut sizes = Vec::new();
    let mut defs = Vec::new();
    for with_agents in [false, true] {
        let sb = sandbox(json!({"web_search": {"base_url": "http://127.0.0.1:9"}}));
        if with_agents {
            write(sb.home.join("agents/reviewer.md"), REVIEWER);
            write(
                sb.work.join(".claude/agents/code-reviewer.md"),
                CLAUDE_AGENT,
            );
            write(
                sb.home.join("agents/tester.md"),
                "---\nname: tester\ndescription: |\n  Writes and runs the tests of a change; use after every edit.\n  Example: after a fix, ask it to add a regression test.\ntools: Read, Grep, Bash, Edit\n---\nYou test.\n",
            );
            let mut trust = sb.odek("http://127.0.0.1:9/v1");
            trust.args(["agents", "trust", "code-reviewer"]);
            assert!(output(trust).await.status.success());
        }
        let server = ScriptedServer::start(vec![text("done")]).await;
        let mut cmd = sb.odek(&server.base_url());
        cmd.args(["run", "hello"]);
        let out = output(cmd).await;
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let first = server.requests()[0].clone();
        sizes.push(first.to_string().len());
        defs.push(delegate_def(&first));
    }
    eprintln!(
        "first request: {} bytes without agents, {} bytes with three",
        sizes[0], sizes[1]
    );
    assert!(
        sizes[1] <= 15_000,
        "the first request is {} bytes",
        sizes[1]
    );
    // Without agents the tool is byte for byte the plain one.
    assert_eq!(
        defs[0]["description"],
        "Run 1-8 independent tasks in parallel sub-agents with fresh contexts; returns each result in order. Sub-agents see no history or plan: put the plan step's id, title and constraints in context. untrusted (default): read and edit in the working directory only."
    );
    assert!(defs[0]["parameters"]["properties"]["tasks"]["items"]["properties"]["agent"].is_null());
    let listed = defs[1]["description"].as_str().unwrap_or("");
    let names: Vec<&str> = listed
        .lines()
        .filter_map(|l| l.strip_prefix("- "))
        .filter_map(|l| l.split(':').next())
        .collect();
    assert_eq!(names, ["code-reviewer", "reviewer", "tester"], "{listed}");
    assert!(
        listed.contains("- tester: Writes and runs the tests of a change; use after every edit.…"),
        "{listed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odek_repl_as_an_agent_asks_as_it_and_a_resumed_session_refuses_agent() {
    let server = ScriptedServer::start(vec![text("repl answer")]).await;
    let sb = sandbox(json!({}));
    write(sb.home.join("agents/reviewer.md"), REVIEWER);
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("TERM", "xterm")
        .args(["repl", "--agent", "reviewer"]);
    let id = tokio::task::spawn_blocking(move || -> Result<String, rexpect::error::Error> {
        let mut p = rexpect::session::spawn_command(cmd, Some(15_000))?;
        p.exp_string("odek 1> ")?;
        p.send_line("look at the parser")?;
        p.exp_string("repl answer")?;
        p.exp_string("odek 2> ")?;
        p.send_control('d')?;
        let (_, id) = p.exp_regex("[0-9]{8}-[0-9a-f]{32}")?;
        p.exp_eof()?;
        Ok(id)
    })
    .await
    .expect("join")
    .expect("conversation");
    let first = &server.requests()[0];
    assert_eq!(first["model"], "review-model");
    assert_eq!(tool_names(first), ["read_file", "search_files", "shell"]);
    assert!(system_text(first).starts_with("You are the reviewer."));

    let mut resume = sb.odek(&server.base_url());
    resume.args(["repl", "--id", &id, "--agent", "reviewer"]);
    let out = output(resume).await;
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(stderr(&out).contains("--agent"), "{}", show(&out));
    assert_eq!(server.requests().len(), 1);
}
