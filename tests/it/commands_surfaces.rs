//! Custom slash commands on the surfaces besides the terminal, through the binary: ACP lists
//! them in `available_commands_update` and runs a prompt `/name args` (driven by the
//! official ACP TypeScript SDK), Telegram reaches them by names mapped to `[a-z0-9_]` (the
//! fake Bot API), `odek serve` lists them at `GET /api/commands` and runs a prompt
//! `/name args` posted to `POST /api/prompt`; on each an unknown name and an untrusted
//! command are told with what to do. The web UI's hint list is in web_ui.rs.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::serve::Served;
use crate::support::telegram::{FakeTelegram, TOKEN, text_of};
use crate::support::*;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("a folder")).expect("folder");
    std::fs::write(path, text).expect("write");
}

/// A project command (`/frontend:build TARGET`, text only), a user command that narrows its
/// turn (`/review FILE`: its model and `Read` only; the user's own, so trusted) and a project
/// command that sets a model and is not trusted (`/deploy`).
fn commands(sb: &Sandbox) {
    write(
        &sb.work.join(".odek/commands/frontend/build.md"),
        "---\ndescription: Build the frontend\nargument-hint: TARGET\n---\nBuild the frontend for $1 please.\n",
    );
    write(
        &sb.home.join("commands/review.md"),
        "---\ndescription: Review a file\nargument-hint: FILE\nmodel: review-model\nallowed-tools: Read\n---\nReview $ARGUMENTS carefully.\n",
    );
    write(
        &sb.work.join(".odek/commands/deploy.md"),
        "---\ndescription: Deploy it\nmodel: big-model\n---\nDeploy $1\n",
    );
}

/// The tools `Read` keeps (with the plan, which a narrowed turn keeps).
fn only_reads(tools: &[String]) -> bool {
    tools.contains(&"read_file".to_string())
        && tools
            .iter()
            .all(|t| ["read_file", "batch_read", "plan"].contains(&t.as_str()))
}

// ---------------------------------------------------------------------------------------
// ACP

async fn acp_client(sb: &Sandbox, server_url: &str, scenario: Value) -> Value {
    crate::acp::client(sb, server_url, scenario).await
}

/// The session updates of one kind.
fn acp_updates<'a>(report: &'a Value, kind: &str) -> Vec<&'a Value> {
    report["log"]
        .as_array()
        .expect("log")
        .iter()
        .filter_map(|e| e.get("update"))
        .filter(|u| u["sessionUpdate"] == kind)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_lists_project_and_user_commands_and_a_prompt_runs_one_narrowed() {
    let sb = Sandbox::new();
    commands(&sb);
    let server =
        ScriptedServer::start(vec![text("Built."), text("Reviewed."), text("A path.")]).await;
    let work = sb.work.to_string_lossy().to_string();
    let report = acp_client(
        &sb,
        &server.base_url(),
        json!({"steps": [
            {"new": work},
            {"prompt": "/frontend:build web"},
            {"prompt": "/review src/a.rs"},
            {"prompt": "/nosuch x"},
            {"prompt": "/deploy now"},
            {"prompt": "/usr/bin is where it lives"},
        ]}),
    )
    .await;
    assert_eq!(report["exit"], 0, "{report}");

    // The built-ins first, then the custom commands by name, each with its input hint.
    let announced = acp_updates(&report, "available_commands_update");
    assert_eq!(announced.len(), 1, "{report}");
    let listed = announced[0]["availableCommands"].as_array().expect("list");
    let names: Vec<&str> = listed.iter().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "undo",
            "rewind",
            "info",
            "jobs",
            "kill",
            "compact",
            "deploy",
            "frontend:build",
            "review"
        ]
    );
    let build = &listed[7];
    assert_eq!(build["description"], "Build the frontend");
    assert_eq!(build["input"]["hint"], "TARGET");
    assert_eq!(listed[8]["description"], "Review a file");
    assert_eq!(listed[8]["input"]["hint"], "FILE");

    // Every prompt ends its turn; only three reach the model.
    let stops: Vec<&Value> = report["log"]
        .as_array()
        .expect("log")
        .iter()
        .filter_map(|e| e.get("stop"))
        .collect();
    assert_eq!(stops.len(), 5, "{report}");
    assert!(
        stops.iter().all(|s| s["stopReason"] == "end_turn"),
        "{report}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{report}");

    // The project command's prompt, as the model got it, on the configured model and tools.
    assert_eq!(
        last_user_text(&requests[0]),
        "Build the frontend for web please."
    );
    assert_eq!(requests[0]["model"], "test-model");
    let all = tool_names(&requests[0]);
    assert!(all.len() > 4, "{all:?}");
    // The user command's turn: its model, Read's tools only.
    assert_eq!(last_user_text(&requests[1]), "Review src/a.rs carefully.");
    assert_eq!(requests[1]["model"], "review-model");
    let narrowed = tool_names(&requests[1]);
    assert!(only_reads(&narrowed), "{narrowed:?}");
    // A path is no command: the prompt as typed.
    assert_eq!(last_user_text(&requests[2]), "/usr/bin is where it lives");

    // The unknown and the untrusted command are told in the conversation, with their hint.
    let said: String = acp_updates(&report, "agent_message_chunk")
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert!(said.contains("no command /nosuch"), "{said}");
    assert!(said.contains("hint: odek commands list"), "{said}");
    assert!(said.contains("sets model and is not trusted"), "{said}");
    assert!(said.contains("odek commands trust deploy"), "{said}");
}

// ---------------------------------------------------------------------------------------
// Telegram

const CHAT: i64 = 42;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telegram_reaches_commands_by_mapped_names_and_names_the_ones_it_cannot() {
    let sb = Sandbox::new();
    commands(&sb);
    // Three names Telegram cannot take as they are: two that map to the same name, one
    // that maps to the bot's own command, one too long.
    write(&sb.work.join(".odek/commands/a-b.md"), "First\n");
    write(&sb.work.join(".odek/commands/a_b.md"), "Second\n");
    write(&sb.work.join(".odek/commands/plan/status.md"), "Status\n");
    let long = "x".repeat(40);
    write(&sb.work.join(format!(".odek/commands/{long}.md")), "Long\n");
    let tg = FakeTelegram::start().await;
    let model = ScriptedServer::start(vec![text("built"), text("reviewed")]).await;
    sb.global_config(
        &json!({"telegram": {
            "api_base": tg.base(),
            "bot_token": TOKEN,
            "allowed_users": [CHAT],
            "poll_timeout": 1,
        }})
        .to_string(),
    );
    let mut cmd = sb.odek(&model.base_url());
    cmd.arg("telegram");
    let bot = spawn_until(cmd, "odek telegram ⚡");
    let mut child = bot.child;
    // The bot reads the commands as it starts polling, after its first line.
    let mut warnings = String::new();
    for _ in 0..1000 {
        warnings = bot.stderr.lock().expect("lock").clone();
        if warnings.contains("would all be") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(
        warnings.contains("/a-b, /a_b would all be /a_b"),
        "{warnings}"
    );
    assert!(
        warnings.contains("/plan:status would be /plan_status, the bot's own command"),
        "{warnings}"
    );
    assert!(
        warnings.contains(&format!("/{long} has no Telegram name")),
        "{warnings}"
    );

    // /help lists the commands the chat reaches, by their Telegram names.
    tg.message(CHAT, CHAT, "/help");
    let help = tg
        .wait_sent("the help", |m| text_of(m).contains("Custom commands"))
        .await;
    let help = text_of(&help);
    assert!(
        help.contains("/frontend_build (/frontend:build) — Build the frontend"),
        "{help}"
    );
    assert!(help.contains("/review — Review a file"), "{help}");
    assert!(!help.contains("/a_b"), "{help}");

    // The mapped name runs the command: its prompt reaches the model.
    tg.message(CHAT, CHAT, "/frontend_build@odek_bot web");
    tg.wait_sent("the answer", |m| text_of(m) == "built").await;
    assert_eq!(
        last_user_text(&model.requests()[0]),
        "Build the frontend for web please."
    );
    // A user command narrows its turn in the chat too.
    tg.message(CHAT, CHAT, "/Review src/a.rs");
    tg.wait_sent("the review", |m| text_of(m) == "reviewed")
        .await;
    let review = &model.requests()[1];
    assert_eq!(review["model"], "review-model");
    assert!(only_reads(&tool_names(review)), "{review}");

    // An unknown name and an untrusted command: said so, with what to do; no turn.
    tg.message(CHAT, CHAT, "/nosuch");
    tg.wait_sent("the unknown", |m| {
        text_of(m) == "Unknown command /nosuch. /help lists the commands."
    })
    .await;
    tg.message(CHAT, CHAT, "/a_b");
    tg.wait_sent("the collision", |m| {
        text_of(m) == "Unknown command /a_b. /help lists the commands."
    })
    .await;
    tg.message(CHAT, CHAT, "/deploy now");
    let refused = tg
        .wait_sent("the refusal", |m| text_of(m).starts_with("command /deploy"))
        .await;
    let refused = text_of(&refused);
    assert!(
        refused.contains("sets model and is not trusted"),
        "{refused}"
    );
    assert!(refused.contains("odek commands trust deploy"), "{refused}");
    assert!(refused.contains("hint: "), "{refused}");
    // The bot's own /plan_status still answers as before.
    tg.message(CHAT, CHAT, "/plan_status");
    tg.wait_sent("the plan", |m| {
        text_of(m).contains("plan") && !text_of(m).contains("Unknown")
    })
    .await;
    assert_eq!(model.requests().len(), 2);
    sigterm(&child);
    let _ = tokio::task::spawn_blocking(move || child.wait())
        .await
        .expect("join");
}

// ---------------------------------------------------------------------------------------
// odek serve

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_lists_the_commands_and_a_posted_prompt_runs_one() {
    let sb = Sandbox::new();
    commands(&sb);
    let server = ScriptedServer::start(vec![text("built"), text("reviewed")]).await;
    let served = Served::start(&sb, &server.base_url(), &[]);

    let bare =
        crate::support::serve::send(served.bare(reqwest::Method::GET, "/api/commands")).await;
    assert_eq!(
        bare.status, 401,
        "the list is behind the token: {}",
        bare.text
    );
    let listed = served.get("/api/commands").await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    let commands = listed.json["commands"].as_array().expect("commands");
    let names: Vec<&str> = commands.iter().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(names, ["deploy", "frontend:build", "review"]);
    assert_eq!(commands[1]["argument_hint"], "TARGET");
    assert_eq!(commands[1]["source"], "project");
    assert_eq!(commands[2]["source"], "user");
    assert_eq!(commands[0]["runnable"], false);

    // A prompt that names a command runs it: the answer says which; the session is named
    // by what was typed.
    let started = served
        .prompt_completed(json!({"content": "/frontend:build web"}))
        .await;
    assert_eq!(started["command"], "frontend:build", "{started}");
    let requests = server.requests();
    assert_eq!(
        last_user_text(&requests[0]),
        "Build the frontend for web please."
    );
    let session = started["session_id"].as_str().expect("session");
    let detail = served.get(&format!("/api/sessions/{session}")).await;
    assert_eq!(
        detail.json["title"], "/frontend:build web",
        "{}",
        detail.text
    );

    // The next turn of that session runs the user command, narrowed.
    served
        .prompt_completed(json!({"content": "/review src/a.rs", "session_id": session}))
        .await;
    let review = &server.requests()[1];
    assert_eq!(review["model"], "review-model");
    assert_eq!(last_user_text(review), "Review src/a.rs carefully.");
    assert!(only_reads(&tool_names(review)), "{review}");

    // Unknown: 404; untrusted: 409; both with the hint, and no session left behind.
    let unknown = served
        .post("/api/prompt", json!({"content": "/nosuch x"}))
        .await;
    assert_eq!(unknown.status, 404, "{}", unknown.text);
    let error = unknown.json["error"].as_str().expect("error");
    assert!(error.starts_with("no command /nosuch; hint: "), "{error}");
    let untrusted = served
        .post("/api/prompt", json!({"content": "/deploy now"}))
        .await;
    assert_eq!(untrusted.status, 409, "{}", untrusted.text);
    let error = untrusted.json["error"].as_str().expect("error");
    assert!(error.contains("odek commands trust deploy"), "{error}");
    let sessions = served.get("/api/sessions").await;
    assert_eq!(sessions.json["count"], 1, "{}", sessions.text);
    assert_eq!(server.requests().len(), 2);
}
