//! `odek telegram` through the real binary against a fake Bot API (tests/it/support/telegram.rs)
//! and the scripted model server: who may talk to it, a turn with tool calls and its progress
//! message, `/plan_status` (none, small, 50 steps over the bound, hostile MarkdownV2), 429s,
//! a network drop, a restart without double answers, and the approval keyboard.

use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::telegram::{Failure, FakeTelegram, TOKEN, check_markdown_v2, text_of};
use crate::support::*;
use serde_json::{Value, json};

const ALLOWED: i64 = 42;
const CHAT: i64 = 42;
const STRANGER: i64 = 99;

/// A running `odek telegram`.
struct Bot {
    child: Child,
    stderr: Arc<Mutex<String>>,
}

impl Bot {
    fn start(sb: &Sandbox, model: &ScriptedServer) -> Bot {
        Bot::start_with_env(sb, model, &[])
    }

    fn start_with_env(sb: &Sandbox, model: &ScriptedServer, env: &[(&str, &str)]) -> Bot {
        Bot::start_with(sb, model, env, &[])
    }

    fn start_with(
        sb: &Sandbox,
        model: &ScriptedServer,
        env: &[(&str, &str)],
        args: &[&str],
    ) -> Bot {
        let mut cmd = sb.odek(&model.base_url());
        cmd.envs(env.iter().copied()).arg("telegram").args(args);
        let started = spawn_until(cmd, "odek telegram ⚡");
        Bot {
            child: started.child,
            stderr: started.stderr,
        }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().expect("lock").clone()
    }

    /// SIGTERM, then the exit code.
    fn stop(mut self) -> (Option<i32>, String) {
        sigterm(&self.child);
        let status = self.child.wait().expect("wait");
        std::thread::sleep(Duration::from_millis(50));
        (status.code(), self.stderr())
    }
}

impl Drop for Bot {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

fn configure(sb: &Sandbox, tg: &FakeTelegram, extra: Value) {
    let mut config = json!({
        "telegram": {
            "api_base": tg.base(),
            "bot_token": TOKEN,
            "allowed_users": [ALLOWED],
            "poll_timeout": 1,
        },
    });
    if let (Some(c), Some(e)) = (config.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            c.insert(k.clone(), v.clone());
        }
    }
    sb.global_config(&config.to_string());
}

fn to_chat(m: &Value) -> bool {
    m["chat_id"] == json!(CHAT)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuses_to_start_without_a_token_or_an_allowlist() {
    let sb = Sandbox::new();
    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.arg("telegram");
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        show(&out).contains("no Telegram bot token"),
        "{}",
        show(&out)
    );

    sb.global_config(r#"{"telegram": {"bot_token": "123:abc"}}"#);
    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.arg("telegram");
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let text = show(&out);
    assert!(
        text.contains("refusing to start a bot anyone could use"),
        "{text}"
    );
    assert!(!text.contains("123:abc"), "the token is never printed");

    // A project file can neither set the token nor open the bot to others.
    sb.global_config(r#"{}"#);
    sb.project_config(r#"{"telegram": {"bot_token": "123:abc", "allowed_users": [1]}}"#);
    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.arg("telegram");
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        show(&out).contains("no Telegram bot token"),
        "{}",
        show(&out)
    );
}

/// A bot whose model makes a two-step plan, completes one step and answers in Markdown.
async fn planning_bot() -> (ScriptedServer, FakeTelegram, Sandbox, Bot) {
    let model = ScriptedServer::start(vec![
        plan_create(&[
            ("s1", "Read *the* notes_v2.txt"),
            ("s2", "Summarise (briefly) [draft] - ok."),
        ]),
        plan_complete("s1"),
        text("Done. See `notes.txt` for details; 3 items > 2!"),
        text("continued from the terminal"),
    ])
    .await;
    let tg = FakeTelegram::start().await;
    let sb = Sandbox::new();
    configure(&sb, &tg, json!({}));
    let bot = Bot::start(&sb, &model);
    (model, tg, sb, bot)
}

/// Sends the task of [`planning_bot`] and waits for its answer.
async fn summarise(tg: &FakeTelegram) -> Value {
    tg.message(CHAT, ALLOWED, "summarise the notes");
    tg.wait_sent("the answer", |m| {
        to_chat(m) && text_of(m).starts_with("Done")
    })
    .await
}

fn stops_cleanly(tg: &FakeTelegram, bot: Bot) {
    assert!(
        tg.rejected().is_empty(),
        "Telegram refused: {:?}",
        tg.rejected()
    );
    let (code, stderr) = bot.stop();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("odek telegram: stopped"), "{stderr}");
    assert!(!stderr.contains(TOKEN), "the token reached stderr");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stranger_gets_one_polite_refusal_and_no_turn() {
    let (model, tg, _sb, bot) = planning_bot().await;
    tg.message(STRANGER, STRANGER, "hello, run rm -rf /");
    tg.message(STRANGER, STRANGER, "again");
    tg.message(CHAT, ALLOWED, "/plan_status");
    let none = tg.wait_sent("the first /plan_status", to_chat).await;
    assert_eq!(text_of(&none), "No active plan in this session.");
    assert!(none.get("parse_mode").is_none(), "{none}");
    let refusals: Vec<Value> = tg
        .sent()
        .into_iter()
        .filter(|m| m["chat_id"] == json!(STRANGER))
        .collect();
    assert_eq!(refusals.len(), 1, "{refusals:?}");
    assert!(text_of(&refusals[0]).starts_with("Sorry, this bot only works"));
    assert!(model.requests().is_empty(), "a stranger started a turn");
    stops_cleanly(&tg, bot);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_shows_its_tools_in_one_progress_message_and_answers_in_markdown_v2() {
    let (_model, tg, _sb, bot) = planning_bot().await;
    let answer = summarise(&tg).await;
    assert_eq!(answer["parse_mode"], "MarkdownV2");
    assert_eq!(
        text_of(&answer),
        "Done\\. See `notes.txt` for details; 3 items \\> 2\\!"
    );
    let progress = tg
        .sent()
        .into_iter()
        .find(|m| text_of(m).starts_with("📋 plan"))
        .expect("a progress message");
    let last_text = tg
        .edits()
        .into_iter()
        .rfind(|e| e["message_id"] == progress["message_id"])
        .map(|e| text_of(&e).to_string())
        .unwrap_or_else(|| text_of(&progress).to_string());
    assert_eq!(last_text.lines().count(), 2, "{last_text}");
    assert!(
        last_text
            .lines()
            .all(|l| l.starts_with("📋 plan") && l.contains('✓'))
    );
    stops_cleanly(&tg, bot);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_status_sends_the_seeds_markdown_v2_as_telegram_accepts_it() {
    let (_model, tg, _sb, bot) = planning_bot().await;
    summarise(&tg).await;
    tg.message(CHAT, ALLOWED, "/plan_status");
    let status = tg
        .wait_sent("the plan", |m| text_of(m).starts_with("📋 *Plan*"))
        .await;
    assert_eq!(status["parse_mode"], "MarkdownV2");
    assert_eq!(
        text_of(&status),
        "📋 *Plan* — v2 · 1/2 done\n\
         ✅ `s1` Read \\*the\\* notes\\_v2\\.txt\n\
         ⬜ `s2` Summarise \\(briefly\\) \\[draft\\] \\- ok\\."
    );
    stops_cleanly(&tg, bot);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_names_the_chats_session_and_the_terminal_continues_it() {
    let (model, tg, sb, bot) = planning_bot().await;
    summarise(&tg).await;
    tg.message(CHAT, ALLOWED, "/status@odek_bot");
    let st = tg
        .wait_sent("the status", |m| text_of(m).starts_with("Session: "))
        .await;
    let id = text_of(&st)
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("Session: "))
        .expect("id")
        .to_string();
    assert!(text_of(&st).contains("Running: no"), "{st}");
    // The day's tokens; no cost, as the scripted model has no known price.
    let today = text_of(&st)
        .lines()
        .find(|l| l.starts_with("Today: "))
        .expect("the day's line");
    assert!(
        today.ends_with(" tokens") && !today.contains('$'),
        "{today}"
    );
    let saved: Value =
        serde_json::from_str(&read(sb.home.join("sessions").join(format!("{id}.json"))))
            .expect("session json");
    assert_eq!(saved["origin"], "telegram");
    let mut cont = sb.odek(&model.base_url());
    cont.args(["continue", "--id", &id, "and then?"]);
    let out = output(cont).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("continued from the terminal"));
    stops_cleanly(&tg, bot);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_status_of_fifty_steps_stays_under_the_bound_as_valid_markdown() {
    let titles: Vec<String> = (1..=50)
        .map(|i| {
            format!(
                "Step {i}: fix *all* the_things (v{i}.0) [see #12] — {}!",
                "x".repeat(90)
            )
        })
        .collect();
    let steps: Vec<(String, &str)> = titles
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("s{}", i + 1), t.as_str()))
        .collect();
    let step_refs: Vec<(&str, &str)> = steps.iter().map(|(id, t)| (id.as_str(), *t)).collect();
    let model = ScriptedServer::start(vec![plan_create(&step_refs), text("planned")]).await;
    let tg = FakeTelegram::start().await;
    let sb = Sandbox::new();
    configure(
        &sb,
        &tg,
        json!({"planning": {"max_steps": 50, "max_render_chars": 8000}}),
    );
    let bot = Bot::start(&sb, &model);

    tg.message(CHAT, ALLOWED, "plan fifty things");
    tg.wait_sent("the answer", |m| text_of(m) == "planned")
        .await;
    tg.message(CHAT, ALLOWED, "/plan_status");
    let status = tg
        .wait_sent("the plan", |m| text_of(m).starts_with("📋 *Plan*"))
        .await;
    let text = text_of(&status);
    assert!(
        text.encode_utf16().count() <= 3800,
        "{}",
        text.encode_utf16().count()
    );
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "📋 *Plan* — v1 · 0/50 done");
    let shown = lines.len() - 2;
    assert!((5..50).contains(&shown), "{shown} lines shown");
    assert_eq!(
        *lines.last().expect("trailer"),
        format!("_{} more step\\(s\\) omitted_", 50 - shown)
    );
    for (i, line) in lines[1..=shown].iter().enumerate() {
        assert!(
            line.starts_with(&format!(
                "⬜ `s{}` Step {}: fix \\*all\\* the\\_things",
                i + 1,
                i + 1
            )),
            "{line}"
        );
    }
    check_markdown_v2(text).expect("valid MarkdownV2");
    assert!(tg.rejected().is_empty(), "{:?}", tg.rejected());
    let (code, _) = bot.stop();
    assert_eq!(code, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_a_network_drop_and_a_restart_never_answer_twice() {
    let model = ScriptedServer::start(vec![]).await;
    let mut tg = FakeTelegram::start().await;
    let sb = Sandbox::new();
    configure(&sb, &tg, json!({}));
    tg.fail("getUpdates", Failure::TooManyRequests(1), 1);
    let bot = Bot::start(&sb, &model);

    // 429 on the poll: the bot waits retry_after and goes on.
    tg.message(CHAT, ALLOWED, "/help");
    tg.wait_sent("the help", |m| text_of(m).contains("/plan_status"))
        .await;
    assert!(
        bot.stderr().contains("waiting 1s as asked"),
        "{}",
        bot.stderr()
    );

    // 429 on a reply: sent again after retry_after.
    tg.fail("sendMessage", Failure::TooManyRequests(1), 1);
    tg.message(CHAT, ALLOWED, "/cancel");
    tg.wait_sent("the /cancel answer", |m| {
        text_of(m) == "Nothing is running."
    })
    .await;

    // The network drops; a message sent meanwhile is answered once it is back.
    tg.go_offline().await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let last_update = tg.message(CHAT, ALLOWED, "/status");
    tg.come_back().await;
    tg.wait_sent("the status after the drop", |m| {
        text_of(m).starts_with("Session: ")
    })
    .await;
    let log = bot.stderr();
    assert!(
        log.contains("Telegram unreachable") && log.contains("connected again"),
        "{log}"
    );

    // A restart asks with the saved offset: nothing is answered twice.
    let (code, _) = bot.stop();
    assert_eq!(code, Some(0));
    let answered_before = tg.sent().len();
    let polls_before = tg.offsets().len();
    let bot = Bot::start(&sb, &model);
    tg.wait_until("two polls of the new process", |t| {
        t.offsets().len() >= polls_before + 2
    })
    .await;
    assert_eq!(
        tg.sent().len(),
        answered_before,
        "answered again: {:#?}",
        tg.sent()
    );
    // The old process saved the offset past the last update it took (before handling it),
    // whether or not it polled again before it stopped: the new one asks from there.
    let new_polls = tg.offsets()[polls_before..].to_vec();
    assert!(
        new_polls.iter().all(|o| *o == last_update + 1),
        "the new process asked from {new_polls:?}; the last update taken was {last_update}"
    );
    let statuses = tg
        .sent()
        .iter()
        .filter(|m| text_of(m).starts_with("Session: "))
        .count();
    assert_eq!(statuses, 1);
    let (code, _) = bot.stop();
    assert_eq!(code, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dangerous_call_is_approved_with_the_inline_keyboard() {
    // The command writes what it sees of the bot's token: shell commands must not see it.
    // It also names the token as an argument: the approval message must not show it.
    let command = format!(
        "true {TOKEN}; python3 -c \"import os; open('made.txt','w').write(os.environ.get('ODEK_TELEGRAM_TOKEN', 'absent'))\""
    );
    let model = ScriptedServer::start(vec![
        tools(&[("shell", json!({"command": command}))]),
        text("The file is made."),
    ])
    .await;
    let tg = FakeTelegram::start().await;
    let sb = Sandbox::new();
    // The token from the environment this time.
    sb.global_config(
        &json!({"telegram": {"api_base": tg.base(), "allowed_users": [ALLOWED], "poll_timeout": 1}})
            .to_string(),
    );
    let bot = Bot::start_with_env(&sb, &model, &[("ODEK_TELEGRAM_TOKEN", TOKEN)]);

    tg.message(
        CHAT,
        ALLOWED,
        &format!("make the file (my bot token is {TOKEN})"),
    );
    let ask = tg
        .wait_sent("the approval", |m| {
            text_of(m).starts_with("⚠️ Approval needed")
        })
        .await;
    assert!(
        text_of(&ask).contains("shell") && text_of(&ask).contains("made.txt"),
        "{ask}"
    );
    assert!(
        !text_of(&ask).contains(TOKEN),
        "the approval showed the token: {ask}"
    );
    assert!(text_of(&ask).contains("[REDACTED]"), "{ask}");
    let buttons = &ask["reply_markup"]["inline_keyboard"][0];
    assert_eq!(buttons[0]["text"], "✅ Approve");
    assert_eq!(buttons[1]["text"], "⛔ Deny");
    let approve = buttons[0]["callback_data"]
        .as_str()
        .expect("data")
        .to_string();
    let message_id = ask["message_id"].as_i64().expect("id");

    // Someone else's press is refused; the allowed user's goes through.
    tg.press(CHAT, STRANGER, message_id, &approve);
    tg.wait_until("the stranger's press answered", |t| {
        !t.answered().is_empty()
    })
    .await;
    assert_eq!(
        tg.answered()[0]["text"],
        "You may not answer this approval."
    );
    assert!(!sb.work.join("made.txt").exists());
    tg.press(CHAT, ALLOWED, message_id, &approve);
    tg.wait_sent("the answer", |m| text_of(m).starts_with("The file is made"))
        .await;
    assert!(
        sb.work.join("made.txt").exists(),
        "the approved command ran"
    );
    assert_eq!(tg.answered()[1]["text"], "approved");
    let edited = tg
        .edits()
        .into_iter()
        .find(|e| e["message_id"] == json!(message_id))
        .expect("the approval message edited");
    assert!(text_of(&edited).ends_with("→ approved by ada"), "{edited}");
    assert!(edited.get("reply_markup").is_none(), "the buttons are gone");
    let (code, stderr) = bot.stop();
    assert_eq!(code, Some(0));
    assert!(!stderr.contains(TOKEN));
    // The session keeps the message, with the token redacted; so does the audit log of what
    // reached the model (the command's output).
    let sessions = sb.home.join("sessions");
    let audit = sessions.join("audit");
    assert!(audit.is_dir(), "the shell output was audited");
    for dir in [sessions, audit] {
        for entry in std::fs::read_dir(dir).expect("sessions") {
            let path = entry.expect("entry").path();
            if path.is_file() {
                assert!(
                    !read(&path).contains(TOKEN),
                    "the token was saved in {path:?}"
                );
            }
        }
    }
}

#[test]
fn the_fake_checks_markdown_v2_like_telegram() {
    assert!(check_markdown_v2("plain text").is_ok());
    assert!(check_markdown_v2("ends with a dot.").is_err());
    assert!(check_markdown_v2("ends with a dot\\.").is_ok());
    assert!(check_markdown_v2("📋 *Plan* — v1 · 0/1 done\n⬜ `s1` Title").is_ok());
    assert!(check_markdown_v2("*open bold").is_err());
    assert!(check_markdown_v2("`code with . and *` fine").is_ok());
    assert!(check_markdown_v2("`unclosed").is_err());
    assert!(check_markdown_v2("```\nlet x = a.b();\n```").is_ok());
    assert!(check_markdown_v2("_italic_ and \\_not\\_").is_ok());
    assert!(check_markdown_v2("a (b)").is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_and_cancel_work_while_a_turn_runs_and_new_starts_another_session() {
    let hold = Hold::new();
    let model = ScriptedServer::start(vec![
        Reply::Held(hold.clone(), Box::new(text("too late"))),
        text("on it after all"),
        text("a fresh start"),
    ])
    .await;
    let tg = FakeTelegram::start().await;
    let sb = Sandbox::new();
    configure(&sb, &tg, json!({}));
    let bot = Bot::start(&sb, &model);

    tg.message(CHAT, ALLOWED, "a slow task");
    hold.wait_reached().await;
    tg.message(CHAT, ALLOWED, "/status");
    let running = tg
        .wait_sent("the status", |m| text_of(m).contains("Running: yes"))
        .await;
    let first_id = session_of(&running);
    // A message during the turn goes to it; the turn cancelled before its next request,
    // the message becomes the next turn (never lost).
    tg.message(CHAT, ALLOWED, "another task meanwhile");
    tg.wait_sent("the steer's note", |m| {
        text_of(m) == "↳ Given to the running turn: it reads this before its next step."
    })
    .await;
    tg.message(CHAT, ALLOWED, "/cancel");
    tg.wait_sent("Cancelling…", |m| text_of(m) == "Cancelling…")
        .await;
    tg.wait_sent("Cancelled.", |m| text_of(m) == "Cancelled.")
        .await;
    hold.release();
    tg.wait_sent("the next turn's answer", |m| {
        text_of(m) == "on it after all"
    })
    .await;

    // /new: the next message starts another session.
    tg.message(CHAT, ALLOWED, "/new");
    let new = tg
        .wait_sent("the /new answer", |m| text_of(m).starts_with("New session"))
        .await;
    assert!(text_of(&new).contains(&first_id), "{new}");
    tg.message(CHAT, ALLOWED, "start afresh");
    tg.wait_sent("the answer", |m| text_of(m) == "a fresh start")
        .await;
    tg.message(CHAT, ALLOWED, "/status");
    tg.wait_until("the second status", |t| {
        t.sent()
            .iter()
            .filter(|m| text_of(m).starts_with("Session: "))
            .count()
            == 2
    })
    .await;
    let second_id = session_of(
        tg.sent()
            .iter()
            .rfind(|m| text_of(m).starts_with("Session: "))
            .expect("status"),
    );
    assert_ne!(second_id, first_id);
    let (code, _) = bot.stop();
    assert_eq!(code, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_answer_goes_in_pieces_under_the_cap_and_refused_markup_is_resent_plain() {
    let long: String = (1..=90)
        .map(|i| format!("line {i:02}: {} done.", "word ".repeat(18)))
        .collect::<Vec<_>>()
        .join("\n");
    let model = ScriptedServer::start(vec![text(&long)]).await;
    let tg = FakeTelegram::start().await;
    let sb = Sandbox::new();
    configure(&sb, &tg, json!({}));
    let bot = Bot::start(&sb, &model);
    // The first piece's markup is refused (scripted), so it goes again as plain text.
    tg.fail("sendMessage", Failure::CantParseEntities, 1);
    tg.message(CHAT, ALLOWED, "a long answer please");
    tg.wait_sent("the last piece", |m| text_of(m).contains("line 90"))
        .await;
    let pieces: Vec<Value> = tg
        .sent()
        .into_iter()
        .filter(|m| text_of(m).starts_with("line "))
        .collect();
    assert!(pieces.len() >= 3, "{} pieces", pieces.len());
    assert!(
        pieces
            .iter()
            .all(|p| text_of(p).encode_utf16().count() <= 4096)
    );
    assert!(pieces[0].get("parse_mode").is_none(), "the retry is plain");
    assert_eq!(pieces[1]["parse_mode"], "MarkdownV2");
    assert_eq!(tg.rejected().len(), 1, "{:?}", tg.rejected());
    let shown: Vec<String> = pieces
        .iter()
        .map(|p| text_of(p).replace('\\', ""))
        .collect();
    assert_eq!(shown.join("\n"), long, "every line once, in order");
    let (code, _) = bot.stop();
    assert_eq!(code, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_silent_longer_than_its_ttl_starts_a_new_session() {
    let model = ScriptedServer::start(vec![text("first"), text("a fresh start")]).await;
    let tg = FakeTelegram::start().await;
    let sb = Sandbox::new();
    configure(&sb, &tg, json!({}));
    let bot = Bot::start(&sb, &model);
    tg.message(CHAT, ALLOWED, "hello");
    tg.wait_sent("the answer", |m| text_of(m) == "first").await;
    let (code, _) = bot.stop();
    assert_eq!(code, Some(0));
    let state_path = sb.home.join("telegram").join("state.json");
    let mut state: Value = serde_json::from_str(&read(&state_path)).expect("state");
    let first_id = state["chats"][CHAT.to_string()]["session_id"]
        .as_str()
        .expect("id")
        .to_string();
    // Silent since the epoch: longer than session_ttl_hours.
    state["chats"][CHAT.to_string()]["last_active"] = json!(0);
    std::fs::write(&state_path, state.to_string()).expect("write");
    let bot = Bot::start(&sb, &model);
    tg.message(CHAT, ALLOWED, "hello again");
    tg.wait_sent("the answer", |m| text_of(m) == "a fresh start")
        .await;
    let state: Value = serde_json::from_str(&read(&state_path)).expect("state");
    let second_id = state["chats"][CHAT.to_string()]["session_id"]
        .as_str()
        .expect("id");
    assert_ne!(second_id, first_id);
    let (code, _) = bot.stop();
    assert_eq!(code, Some(0));
}

/// The session id of a `/status` answer.
fn session_of(status: &Value) -> String {
    text_of(status)
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("Session: "))
        .expect("a session line")
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_an_approval_cancels_the_turn_saves_it_and_exits_0() {
    let shell = || {
        tools(&[(
            "shell",
            json!({"command": "python3 -c \"open('never.txt','w')\""}),
        )])
    };
    let model = ScriptedServer::start(vec![shell(), shell()]).await;
    let tg = FakeTelegram::start().await;
    let sb = Sandbox::new();
    configure(&sb, &tg, json!({}));
    let events = sb.dir.path().join("events.jsonl");
    let events_arg = events.to_str().expect("utf-8 path").to_string();
    let bot = Bot::start_with(&sb, &model, &[], &["--events-jsonl", &events_arg]);

    // /cancel while the approval waits: the keyboard message says so.
    tg.message(CHAT, ALLOWED, "make a file");
    let first = tg
        .wait_sent("the approval", |m| {
            text_of(m).starts_with("⚠️ Approval needed")
        })
        .await;
    tg.message(CHAT, ALLOWED, "/cancel");
    tg.wait_sent("Cancelled.", |m| text_of(m) == "Cancelled.")
        .await;
    tg.wait_until("the approval marked cancelled", |t| {
        t.edits().iter().any(|e| {
            e["message_id"] == first["message_id"]
                && text_of(e).ends_with("→ cancelled: the turn was stopped")
        })
    })
    .await;

    // SIGTERM while the next one waits.
    tg.message(CHAT, ALLOWED, "make a file, please");
    tg.wait_until("the second approval", |t| {
        t.sent()
            .iter()
            .filter(|m| text_of(m).starts_with("⚠️ Approval needed"))
            .count()
            == 2
    })
    .await;
    let (code, stderr) = bot.stop();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("stopping (1 running turn(s) cancelled and saved)"),
        "{stderr}"
    );
    assert!(!sb.work.join("never.txt").exists());
    let state: Value =
        serde_json::from_str(&read(sb.home.join("telegram").join("state.json"))).expect("state");
    let id = state["chats"][CHAT.to_string()]["session_id"]
        .as_str()
        .expect("the chat's session")
        .to_string();
    let saved = read(sb.home.join("sessions").join(format!("{id}.json")));
    assert!(saved.contains("make a file"), "the task was saved");
    assert!(
        saved.contains("never.txt"),
        "the turn's call was saved: {saved}"
    );
    // The event stream was flushed and closed on the way out: each of the two runs ends
    // with its one terminal event, the second one's written during the shutdown.
    let lines: Vec<Value> = read(&events)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let terminal: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "run_completed" || l["type"] == "run_failed")
        .collect();
    assert_eq!(terminal.len(), 2, "{lines:#?}");
    assert!(
        terminal
            .iter()
            .all(|l| l["data"]["error_class"] == "context_canceled")
    );
    assert_eq!(lines.last(), terminal.last().copied());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_token_stops_the_bot_and_a_session_busy_in_the_terminal_is_refused() {
    let hold = Hold::new();
    let model = ScriptedServer::start(vec![
        text("first answer"),
        Reply::Held(hold.clone(), Box::new(text("the terminal's answer"))),
        text("back in the chat"),
    ])
    .await;
    let tg = FakeTelegram::start().await;
    let sb = Sandbox::new();

    // A token Telegram does not know: the bot stops with the setting to check.
    let wrong = "999999:wrongwrongwrongwrongwrongwrongwrong";
    sb.global_config(
        &json!({"telegram": {"api_base": tg.base(), "bot_token": wrong, "allowed_users": [ALLOWED], "poll_timeout": 1}})
            .to_string(),
    );
    let mut cmd = sb.odek(&model.base_url());
    cmd.arg("telegram");
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let text = show(&out);
    assert!(
        text.contains("Telegram refused the bot token (401"),
        "{text}"
    );
    assert!(!text.contains(wrong), "the token was printed: {text}");

    configure(&sb, &tg, json!({}));
    let bot = Bot::start(&sb, &model);
    tg.message(CHAT, ALLOWED, "hello");
    tg.wait_sent("the first answer", |m| {
        text_of(m).starts_with("first answer")
    })
    .await;
    let state: Value =
        serde_json::from_str(&read(sb.home.join("telegram").join("state.json"))).expect("state");
    let id = state["chats"][CHAT.to_string()]["session_id"]
        .as_str()
        .expect("id")
        .to_string();

    // The terminal continues the chat's session; meanwhile the chat is told why it waits.
    let mut cont = sb.odek(&model.base_url());
    cont.args(["continue", "--id", &id, "from the terminal"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let terminal = cont.spawn().expect("odek continue");
    hold.wait_reached().await;
    tg.message(CHAT, ALLOWED, "and from the chat");
    let busy = tg
        .wait_sent("the busy answer", |m| {
            text_of(m).starts_with("Cannot start the turn")
        })
        .await;
    assert!(
        text_of(&busy).contains(&format!("session {id} is in use")),
        "{busy}"
    );
    hold.release();
    let done = tokio::task::spawn_blocking(move || terminal.wait_with_output())
        .await
        .expect("join")
        .expect("odek continue ends");
    assert_eq!(done.status.code(), Some(0), "{}", show(&done));

    // Free again: the chat's next message is a turn of the same session.
    tg.message(CHAT, ALLOWED, "now?");
    tg.wait_sent("the chat's answer", |m| {
        text_of(m).starts_with("back in the chat")
    })
    .await;
    let saved = read(sb.home.join("sessions").join(format!("{id}.json")));
    assert!(saved.contains("from the terminal") && saved.contains("now?"));
    let (code, _) = bot.stop();
    assert_eq!(code, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clarify_sends_option_buttons_and_a_reply_in_words_answers_too() {
    let model = ScriptedServer::start(vec![
        tools(&[(
            "clarify",
            json!({"question": "Which branch?", "options": ["main", "release"]}),
        )]),
        text("Deploying release."),
        tools(&[("clarify", json!({"question": "Tag name?"}))]),
        text("Tagged."),
    ])
    .await;
    let tg = FakeTelegram::start().await;
    let sb = Sandbox::new();
    configure(&sb, &tg, json!({}));
    let bot = Bot::start(&sb, &model);

    tg.message(CHAT, ALLOWED, "deploy it");
    let asked = tg
        .wait_sent("the question", |m| {
            text_of(m).starts_with("❓ Which branch?")
        })
        .await;
    assert!(text_of(&asked).contains("1. main\n2. release"), "{asked}");
    let rows = asked["reply_markup"]["inline_keyboard"]
        .as_array()
        .expect("rows");
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1][0]["text"], "release");
    let release = rows[1][0]["callback_data"]
        .as_str()
        .expect("data")
        .to_string();
    let message_id = asked["message_id"].as_i64().expect("id");
    tg.press(CHAT, STRANGER, message_id, &release);
    tg.wait_until("the stranger's press answered", |t| {
        !t.answered().is_empty()
    })
    .await;
    assert_eq!(
        tg.answered()[0]["text"],
        "You may not answer this question."
    );
    tg.press(CHAT, ALLOWED, message_id, &release);
    tg.wait_sent("the answer", |m| {
        text_of(m).starts_with("Deploying release")
    })
    .await;
    assert_eq!(tg.answered()[1]["text"], "answered: release");
    tg.wait_until("the question's message edited", |t| {
        t.edits()
            .iter()
            .any(|e| text_of(e).ends_with("→ answered by ada"))
    })
    .await;
    assert_eq!(
        tool_results(&model.requests()[1]),
        ["the user answered: release"]
    );

    // A question without options is answered by the next message, which starts no turn.
    tg.message(CHAT, ALLOWED, "tag it");
    tg.wait_sent("the second question", |m| {
        text_of(m).starts_with("❓ Tag name?")
    })
    .await;
    tg.message(CHAT, ALLOWED, "v1.2.0");
    tg.wait_sent("the end", |m| text_of(m).starts_with("Tagged"))
        .await;
    let last = model.requests().last().cloned().expect("request");
    assert_eq!(
        tool_results(&last).last().map(String::as_str),
        Some("the user answered: v1.2.0")
    );
    assert_eq!(
        model.requests().len(),
        4,
        "the reply started no turn of its own"
    );
    let (code, _) = bot.stop();
    assert_eq!(code, Some(0));
}

/// An admin adds a job from the chat (delivering to it); `/schedules` lists it; someone else
/// may not change schedules; the bot runs the home's jobs itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedules_from_the_chat_for_admins_and_their_answers_in_the_chat() {
    const MEMBER: i64 = 43;
    let model = ScriptedServer::start(vec![]).await;
    let tg = FakeTelegram::start().await;
    let sb = Sandbox::new();
    configure(
        &sb,
        &tg,
        json!({"telegram": {"api_base": tg.base(), "bot_token": TOKEN, "allowed_users": [ALLOWED, MEMBER],
            "admin_users": [ALLOWED], "poll_timeout": 1}}),
    );
    let bot = Bot::start(&sb, &model);
    tg.message(CHAT, MEMBER, "/schedule add @daily sneak a job in");
    tg.wait_sent("the refusal", |m| {
        to_chat(m) && text_of(m).starts_with("Only the bot's admins")
    })
    .await;
    tg.message(CHAT, ALLOWED, "/schedule add 0 25 * * * bad hour");
    tg.wait_sent("the cron error", |m| {
        to_chat(m) && text_of(m).contains("field 2 (hour) \"25\"")
    })
    .await;
    tg.message(
        CHAT,
        ALLOWED,
        "/schedule add 0 8 * * MON-FRI summarise the open issues",
    );
    tg.wait_sent("the confirmation", |m| {
        to_chat(m)
            && text_of(m)
                .starts_with("Added summarise-the-open-issues (0 8 * * MON-FRI): next run ")
    })
    .await;
    tg.message(CHAT, MEMBER, "/schedules");
    tg.wait_sent("the list", |m| {
        to_chat(m) && text_of(m).contains("• summarise-the-open-issues — 0 8 * * MON-FRI")
    })
    .await;
    let jobs: Value =
        serde_json::from_str(&std::fs::read_to_string(sb.home.join("schedules.json")).unwrap())
            .unwrap();
    assert_eq!(jobs[0]["deliver"], format!("telegram:{CHAT}"));
    tg.message(CHAT, ALLOWED, "/schedule rm summarise-the-open-issues");
    tg.wait_sent("the removal", |m| {
        to_chat(m) && text_of(m) == "Removed summarise-the-open-issues."
    })
    .await;
    assert!(
        bot.stderr()
            .contains("odek telegram: running the scheduled jobs of"),
        "{}",
        bot.stderr()
    );
    stops_cleanly(&tg, bot);
}

/// `odek run --deliver telegram:CHAT`: a 429 is waited out and the answer arrives; with
/// Telegram unreachable the delivery is tried 4 times, then reported, and the run fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_waits_out_a_429_and_reports_an_outage_after_its_retries() {
    let model = ScriptedServer::start(vec![
        text("**Weekly** report: 3 issues closed."),
        text("again"),
    ])
    .await;
    let mut tg = FakeTelegram::start().await;
    let sb = Sandbox::new();
    configure(&sb, &tg, json!({"schedules": {"delivery_retry_ms": 20}}));
    tg.fail("sendMessage", Failure::TooManyRequests(1), 1);
    let mut cmd = sb.odek(&model.base_url());
    cmd.args([
        "run",
        "--deliver",
        &format!("telegram:{CHAT}"),
        "weekly report",
    ]);
    let started = std::time::Instant::now();
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let sent = tg.sent();
    assert!(
        sent.iter()
            .any(|m| to_chat(m) && text_of(m).contains("report: 3 issues closed")),
        "{sent:?}"
    );
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Telegram's retry_after (1 s) was waited out, not the 20 ms retry delay"
    );
    tg.go_offline().await;
    let mut cmd = sb.odek(&model.base_url());
    cmd.args(["run", "--deliver", &format!("telegram:{CHAT}"), "again"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("odek: the answer could not be delivered: Telegram unreachable")
            && stderr.contains("(after 4 tries)"),
        "{stderr}"
    );
    assert!(!stderr.contains(TOKEN), "the token never reaches stderr");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_resume_and_the_markdown_plan_notes_from_the_chat() {
    let model = ScriptedServer::start(vec![
        text("first answer"),
        text("second answer"),
        text("back in the first"),
        text("working on the plan"),
    ])
    .await;
    let tg = FakeTelegram::start().await;
    let sb = Sandbox::new();
    configure(&sb, &tg, json!({}));
    let bot = Bot::start(&sb, &model);
    let said = |text: &'static str| move |m: &Value| text_of(m).starts_with(text);

    tg.message(CHAT, ALLOWED, "first task");
    tg.wait_sent("the first answer", said("first answer")).await;
    tg.message(CHAT, ALLOWED, "/new");
    tg.wait_sent("/new", said("New session")).await;
    tg.message(CHAT, ALLOWED, "start the second");
    tg.wait_sent("the second answer", said("second answer"))
        .await;

    tg.message(CHAT, ALLOWED, "/sessions");
    let listing = tg
        .wait_sent("/sessions", said("Sessions of this chat"))
        .await;
    let lines: Vec<&str> = text_of(&listing).lines().collect();
    assert!(lines[1].starts_with("1. start the second — "), "{listing}");
    assert!(lines[1].ends_with("1 turn(s)  ← current"), "{listing}");
    assert!(lines[2].starts_with("2. first task — "), "{listing}");
    assert_eq!(lines[3], "/resume N continues one; /new starts another.");

    tg.message(CHAT, ALLOWED, "/resume 9");
    tg.wait_sent("a bad number", said("Give a session's number, 1 to 2"))
        .await;
    tg.message(CHAT, ALLOWED, "/resume 2");
    tg.wait_sent("/resume", said("Resumed \"first task\" (1 turn(s))"))
        .await;
    tg.message(CHAT, ALLOWED, "more on the first");
    tg.wait_sent("the resumed answer", said("back in the first"))
        .await;
    let resumed = messages(&model.requests()[2]);
    assert!(
        resumed.iter().any(|m| m["content"] == "first task"),
        "the resumed turn continues the first session: {resumed:?}"
    );
    assert!(!resumed.iter().any(|m| m["content"] == "start the second"));

    // The markdown plan notes: save, list, view, work on one, delete.
    tg.message(CHAT, ALLOWED, "/plan");
    tg.wait_sent("/plan without text", said("Usage: /plan <text>"))
        .await;
    tg.message(
        CHAT,
        ALLOWED,
        "/plan Ship the release: tag it, write the notes",
    );
    tg.wait_sent("/plan", said("Saved plan note ")).await;
    let dir = sb.home.join(format!("plans/chat{CHAT}"));
    let files: Vec<_> = std::fs::read_dir(&dir).expect("plans folder").collect();
    assert_eq!(files.len(), 1);
    tg.message(CHAT, ALLOWED, "/plans");
    let plans = tg.wait_sent("/plans", said("Plan notes:")).await;
    assert!(
        text_of(&plans).contains("\n1. Ship the release: tag it, write the notes  ("),
        "{plans}"
    );
    tg.message(CHAT, ALLOWED, "/plan_view 1");
    tg.wait_sent("/plan_view", |m| {
        text_of(m) == "Ship the release: tag it, write the notes"
    })
    .await;
    tg.message(CHAT, ALLOWED, "/plan_resume 1");
    tg.wait_sent("the plan's turn", said("working on the plan"))
        .await;
    let last_user = last_user_text(&model.requests()[3]);
    assert!(
        last_user.starts_with("Work on this plan (my note "),
        "{last_user}"
    );
    assert!(last_user.ends_with("\n\nShip the release: tag it, write the notes"));
    tg.message(CHAT, ALLOWED, "/plan_delete 1");
    tg.wait_sent("/plan_delete", said("Deleted plan note "))
        .await;
    tg.message(CHAT, ALLOWED, "/plans");
    tg.wait_sent("no notes", said("No plan notes yet")).await;
    assert_eq!(std::fs::read_dir(&dir).expect("plans folder").count(), 0);

    tg.message(CHAT, ALLOWED, "/stop");
    tg.wait_sent("/stop with nothing running", |m| {
        text_of(m) == "Nothing is running."
    })
    .await;
    stops_cleanly(&tg, bot);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_over_its_daily_token_budget_is_refused_politely_without_a_model_call() {
    // Each scripted answer reports 100 tokens in and 20 out.
    let model = ScriptedServer::start(vec![text("one"), text("two"), text("three")]).await;
    let tg = FakeTelegram::start().await;
    let sb = Sandbox::new();
    configure(
        &sb,
        &tg,
        json!({"telegram": {
        "api_base": tg.base(), "bot_token": TOKEN, "allowed_users": [ALLOWED],
        "poll_timeout": 1, "daily_token_budget": 150}}),
    );
    let bot = Bot::start(&sb, &model);
    tg.message(CHAT, ALLOWED, "first");
    tg.wait_sent("one", |m| text_of(m) == "one").await;
    tg.message(CHAT, ALLOWED, "second (120 of 150 used)");
    tg.wait_sent("two", |m| text_of(m) == "two").await;
    tg.message(CHAT, ALLOWED, "third (240 used)");
    let refusal = tg
        .wait_sent("the refusal", |m| {
            text_of(m).starts_with("This chat has used")
        })
        .await;
    assert_eq!(
        text_of(&refusal),
        "This chat has used 240 of its 150 tokens for today, so I'll rest until midnight UTC. Your message was not sent to the model; send it again tomorrow."
    );
    assert_eq!(model.requests().len(), 2);
    let state: Value =
        serde_json::from_str(&read(sb.home.join("telegram/state.json"))).expect("state");
    assert_eq!(state["usage"][CHAT.to_string()]["tokens"], 240);
    stops_cleanly(&tg, bot);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn documents_and_photos_are_saved_in_the_working_directory_and_named_in_the_turn() {
    let model = ScriptedServer::start(vec![
        tools(&[("read_file", json!({"path": "q3.csv"}))]),
        text("Revenue grew"),
        text("A photo of a cat"),
    ])
    .await;
    let tg = FakeTelegram::start().await;
    let sb = Sandbox::new();
    configure(&sb, &tg, json!({}));
    std::fs::write(sb.work.join("q3.csv"), "mine, not replaced\n").expect("existing");
    let bot = Bot::start(&sb, &model);

    tg.document(
        CHAT,
        ALLOWED,
        "q3.csv",
        b"quarter,revenue\nq3,120\n",
        Some("what changed?"),
    );
    tg.wait_sent("the answer", |m| text_of(m) == "Revenue grew")
        .await;
    assert_eq!(read(sb.work.join("q3.csv")), "mine, not replaced\n");
    assert_eq!(read(sb.work.join("q3-2.csv")), "quarter,revenue\nq3,120\n");
    let user = last_user_text(&model.requests()[0]);
    assert_eq!(
        user,
        "what changed?\n\n[Telegram: the user sent the file \"q3.csv\" (23 bytes); it is saved as ./q3-2.csv in the working directory.]"
    );

    tg.photo(CHAT, STRANGER, b"\xff\xd8 not for strangers", None);
    tg.wait_sent("the stranger's refusal", |m| {
        text_of(m).starts_with("Sorry, this bot only works")
    })
    .await;
    tg.photo(CHAT, ALLOWED, b"\xff\xd8\xff\xe0 jpeg bytes", None);
    tg.wait_sent("the photo's answer", |m| text_of(m) == "A photo of a cat")
        .await;
    assert_eq!(
        std::fs::read(sb.work.join("photo-1280x853.jpg")).expect("the larger size saved"),
        b"\xff\xd8\xff\xe0 jpeg bytes"
    );
    // Two downloads: the document and the photo's largest size (not its thumbnail, not the
    // stranger's photo).
    let downloads: Vec<String> = tg
        .calls()
        .into_iter()
        .filter(|c| c.starts_with("file:"))
        .collect();
    assert_eq!(downloads.len(), 2, "{downloads:?}");
    assert_eq!(
        model.requests().len(),
        3,
        "the stranger's photo started nothing"
    );
    stops_cleanly(&tg, bot);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_the_agent_names_go_back_as_uploads_redacted_and_only_from_the_working_directory() {
    const KEY: &str = "sk-proj-TgSendBack0123456789abcdefghijKLMN";
    let model = ScriptedServer::start(vec![
        tools(&[(
            "write_file",
            json!({"path": "out/report.md", "content": format!("# Report\nkey: {KEY}\n")}),
        )]),
        text("Here is the report.\nMEDIA:document:out/report.md\nMEDIA:photo:chart.png\nMEDIA:document:../outside.txt\nMEDIA:document:missing.txt"),
    ])
    .await;
    let tg = FakeTelegram::start().await;
    let sb = Sandbox::new();
    configure(
        &sb,
        &tg,
        json!({"dangerous": {"classes": {"system_write": "allow"}}}),
    );
    std::fs::write(sb.work.join("chart.png"), b"\x89PNG\r\n\x1a\n chart").expect("chart");
    std::fs::write(
        sb.work.parent().expect("parent").join("outside.txt"),
        "not yours",
    )
    .expect("outside");
    let bot = Bot::start_with_env(&sb, &model, &[("ODEK_API_KEY", KEY)]);
    // The first upload is told to wait: it is sent again.
    tg.fail("sendDocument", Failure::TooManyRequests(1), 1);
    tg.message(
        CHAT,
        ALLOWED,
        "write the report and send it to me with the chart",
    );
    tg.wait_sent("the refusals", |m| text_of(m).contains("Could not send"))
        .await;
    let texts: Vec<String> = tg
        .sent()
        .iter()
        .filter(|m| to_chat(m))
        .map(|m| text_of(m).to_string())
        .collect();
    assert!(
        texts.iter().any(|t| t == "Here is the report\\."),
        "the answer (MarkdownV2) without its MEDIA lines: {texts:?}"
    );
    assert!(texts.iter().all(|t| !t.contains("MEDIA:")), "{texts:?}");
    let refusals = texts.last().expect("refusals");
    assert_eq!(
        refusals.lines().count(),
        2,
        "one line per file not sent: {refusals}"
    );
    assert!(
        refusals.contains(
            "Could not send ../outside.txt: only files inside the working directory are sent"
        ),
        "{refusals}"
    );
    assert!(
        refusals.contains("Could not send missing.txt: cannot read it"),
        "{refusals}"
    );

    let files = tg.files_sent();
    assert_eq!(files.len(), 2, "{files:?}");
    let uploads = tg.calls().iter().filter(|c| *c == "sendDocument").count();
    assert_eq!(uploads, 2, "the 429'd upload is tried again");
    assert_eq!(
        (
            files[0].method.as_str(),
            files[0].chat,
            files[0].name.as_str()
        ),
        ("sendDocument", CHAT, "report.md")
    );
    let report = String::from_utf8(files[0].bytes.clone()).expect("text");
    assert!(report.starts_with("# Report\nkey: "), "{report}");
    assert!(!report.contains(KEY), "the key went out: {report}");
    assert!(
        read(sb.work.join("out/report.md")).contains(KEY),
        "the file on disk is the model's, unchanged"
    );
    assert_eq!(
        (files[1].method.as_str(), files[1].name.as_str()),
        ("sendPhoto", "chart.png")
    );
    assert_eq!(files[1].bytes, b"\x89PNG\r\n\x1a\n chart");

    // The model was told how, in the session's system prompt.
    let system = messages(&model.requests()[0])[0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(system.contains("`MEDIA:document:<path>`"), "{system}");
    stops_cleanly(&tg, bot);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_photo_goes_to_a_model_that_takes_images_as_an_image_part() {
    use base64::Engine as _;
    let model = ScriptedServer::start(vec![text("A cat on a mat.")]).await;
    let tg = FakeTelegram::start().await;
    let sb = Sandbox::new();
    configure(&sb, &tg, json!({"images": true}));
    let bot = Bot::start(&sb, &model);
    let jpeg: &[u8] = b"\xff\xd8\xff\xe0\0\x10JFIF\0 a cat";
    tg.photo(CHAT, ALLOWED, jpeg, Some("what is it?"));
    tg.wait_sent("the answer", |m| text_of(m) == "A cat on a mat\\.")
        .await;
    let user = last_user(&model.requests()[0]);
    let url = format!(
        "data:image/jpeg;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(jpeg)
    );
    assert_eq!(
        user["content"],
        json!([
            {"type": "text", "text": format!("what is it?\n\n[Telegram: the user sent a photo ({} bytes), attached to this message; it is also saved as ./photo-1280x853.jpg in the working directory.]", jpeg.len())},
            {"type": "image_url", "image_url": {"url": url}},
        ])
    );
    assert_eq!(
        std::fs::read(sb.work.join("photo-1280x853.jpg")).expect("saved too"),
        jpeg
    );
    stops_cleanly(&tg, bot);
}

/// A scheduled job's turn inside `odek telegram` runs in the bot's supervisor: `/status`
/// counts it while it runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_counts_a_scheduled_run_of_the_bot() {
    let hold = Hold::new();
    let model = ScriptedServer::start(vec![Reply::Held(
        hold.clone(),
        Box::new(text("Caught up.")),
    )])
    .await;
    let tg = FakeTelegram::start().await;
    let sb = Sandbox::new();
    configure(&sb, &tg, json!({}));
    sb.add_missed_hourly_job(&model.base_url(), "hourly", "catch up", 2);

    let bot = Bot::start(&sb, &model);
    hold.wait_reached().await;
    tg.message(CHAT, ALLOWED, "/status");
    let status = tg
        .wait_sent("the status", |m| text_of(m).starts_with("Session: "))
        .await;
    assert!(
        text_of(&status).contains("Running: no\nScheduled runs: 1 running"),
        "{status}"
    );
    hold.release();
    let (code, stderr) = bot.stop();
    assert_eq!(code, Some(0), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_puts_back_what_the_last_turn_changed_and_stops_on_a_file_changed_since() {
    let model = ScriptedServer::start(vec![
        tools(&[(
            "patch",
            json!({"path": "a.txt", "old_string": "one", "new_string": "two"}),
        )]),
        text("Patched."),
        tools(&[("write_file", json!({"path": "a.txt", "content": "three\n"}))]),
        text("Rewritten."),
    ])
    .await;
    let tg = FakeTelegram::start().await;
    let sb = Sandbox::new();
    let a = sb.work.join("a.txt");
    std::fs::write(&a, "one\n").expect("a");
    configure(&sb, &tg, json!({}));
    let bot = Bot::start(&sb, &model);
    tg.message(CHAT, ALLOWED, "/undo");
    tg.wait_sent("nothing to undo", |m| {
        to_chat(m) && text_of(m) == "Nothing to undo: this chat has no session yet."
    })
    .await;
    tg.message(CHAT, ALLOWED, "patch a");
    tg.wait_sent("the first answer", |m| {
        to_chat(m) && text_of(m) == "Patched\\."
    })
    .await;
    tg.message(CHAT, ALLOWED, "rewrite a");
    tg.wait_sent("the second answer", |m| {
        to_chat(m) && text_of(m) == "Rewritten\\."
    })
    .await;

    // A file changed since stops the undo until `/undo force`.
    std::fs::write(&a, "mine\n").expect("edit");
    tg.message(CHAT, ALLOWED, "/undo");
    let refused = tg
        .wait_sent("the refusal", |m| {
            to_chat(m) && text_of(m).starts_with("Nothing was undone")
        })
        .await;
    assert_eq!(
        text_of(&refused),
        "Nothing was undone: 1 file(s) changed since odek wrote them:\na.txt\nSend /undo force to overwrite them."
    );
    assert_eq!(std::fs::read_to_string(&a).expect("a"), "mine\n");
    tg.message(CHAT, ALLOWED, "/undo force");
    let done = tg
        .wait_sent("the undo", |m| {
            to_chat(m) && text_of(m).starts_with("Undone")
        })
        .await;
    assert_eq!(
        text_of(&done),
        "Undone: 1 file(s) as they were before turn 2:\nrestore a.txt"
    );
    assert_eq!(std::fs::read_to_string(&a).expect("a"), "two\n");
    stops_cleanly(&tg, bot);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_lists_the_running_turns_background_jobs_with_their_last_lines() {
    let hold = Hold::new();
    let model = ScriptedServer::start(vec![
        tools(&[(
            "shell",
            json!({"command": "echo 'watching src/'; sleep 61.7", "background": true}),
        )]),
        // Time for the job's first line to arrive before /jobs is asked.
        tools(&[("shell", json!({"command": "sleep 0.3"}))]),
        Reply::Held(hold.clone(), Box::new(text("stopped watching"))),
    ])
    .await;
    let tg = FakeTelegram::start().await;
    let sb = Sandbox::new();
    configure(&sb, &tg, json!({}));
    let bot = Bot::start(&sb, &model);
    tg.message(CHAT, ALLOWED, "/jobs");
    tg.wait_sent("no jobs", |m| text_of(m).starts_with("No background jobs."))
        .await;
    tg.message(CHAT, ALLOWED, "watch the sources");
    hold.wait_reached().await;
    tg.message(CHAT, ALLOWED, "/jobs");
    let listed = tg
        .wait_sent("the jobs", |m| text_of(m).starts_with("⏳ job 1 · running"))
        .await;
    let listed = text_of(&listed);
    assert!(
        listed.contains("sleep 61.7") && listed.ends_with("\nwatching src/"),
        "{listed}"
    );
    hold.release();
    tg.wait_sent("the answer", |m| text_of(m) == "stopped watching")
        .await;
    // The turn has ended: its job with it.
    processes_gone("sleep 61.7").await;
    let (code, _) = bot.stop();
    assert_eq!(code, Some(0));
}

/// A message sent while a turn runs reaches that turn's next model request, marked as sent
/// during the turn (docs/STEERING.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_during_a_turn_steers_it() {
    let hold = Hold::new();
    let model = ScriptedServer::start(vec![
        Reply::Held(
            hold.clone(),
            Box::new(tools(&[("glob", json!({"pattern": "*.md"}))])),
        ),
        text("staging it is"),
    ])
    .await;
    let tg = FakeTelegram::start().await;
    let sb = Sandbox::new();
    configure(&sb, &tg, json!({}));
    let bot = Bot::start(&sb, &model);
    tg.message(CHAT, ALLOWED, "migrate the db");
    hold.wait_reached().await;
    tg.message(CHAT, ALLOWED, "use staging");
    tg.wait_sent("the steer's note", |m| {
        text_of(m).starts_with("↳ Given to the running turn")
    })
    .await;
    hold.release();
    tg.wait_sent("the answer", |m| text_of(m) == "staging it is")
        .await;
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let last_user = messages(&requests[1])
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str().map(str::to_string));
    assert_eq!(
        last_user.as_deref(),
        Some("[Sent by the user while you were working on this turn]\nuse staging")
    );
    let (code, _) = bot.stop();
    assert_eq!(code, Some(0));
}

/// `/model` lists the session's model and the `models` setting, numbered; `/model 2`
/// switches the session and the next message asks that model; a model that cannot be asked
/// is refused and changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_lists_and_switches_the_chats_session() {
    let model = ScriptedServer::start(vec![text("first answer"), text("second answer")]).await;
    let tg = FakeTelegram::start().await;
    let sb = Sandbox::new();
    configure(&sb, &tg, json!({"models": ["other-model"]}));
    let _bot = Bot::start(&sb, &model);
    let said = |text: &'static str| move |m: &Value| text_of(m).starts_with(text);

    tg.message(CHAT, ALLOWED, "first task");
    tg.wait_sent("the first answer", said("first answer")).await;
    tg.message(CHAT, ALLOWED, "/model");
    let listing = tg.wait_sent("/model", said("Models")).await;
    let lines: Vec<&str> = text_of(&listing).lines().collect();
    assert_eq!(lines[1], "1. test-model  ← current", "{listing}");
    assert_eq!(lines[2], "2. other-model", "{listing}");
    tg.message(CHAT, ALLOWED, "/model anthropic:claude-x");
    tg.wait_sent(
        "a refusal",
        said("Cannot switch: no API key provided for https://api.anthropic.com/v1"),
    )
    .await;
    tg.message(CHAT, ALLOWED, "/model 2");
    tg.wait_sent(
        "the switch",
        said("Model: other-model (this session moves from test-model"),
    )
    .await;
    tg.message(CHAT, ALLOWED, "/status");
    let status = tg.wait_sent("/status", said("Session:")).await;
    assert!(
        text_of(&status).contains("Model: other-model"),
        "/status names the session's model: {status}"
    );
    tg.message(CHAT, ALLOWED, "go on");
    tg.wait_sent("the second answer", said("second answer"))
        .await;
    let requests = model.requests();
    assert_eq!(requests[0]["model"], "test-model");
    assert_eq!(requests[1]["model"], "other-model");
    assert!(requests[1].to_string().contains("first answer"));
    assert_eq!(only_session(&sb)["model"], "other-model");
}

/// `/compact keep the numbers` in a chat with three turns: one summary request with the
/// focus, the answer's line in the chat, the next turn's request with the summary in place
/// of the first answer (docs/COMPACTION.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_summarises_the_chats_session_and_the_next_turn_sees_the_summary() {
    let model = ScriptedServer::start(vec![
        text("reply one"),
        text("reply two"),
        text("reply three"),
        text("Summary: three numbered questions."),
        text("reply four"),
    ])
    .await;
    let tg = FakeTelegram::start().await;
    let sb = Sandbox::new();
    configure(&sb, &tg, json!({}));
    let bot = Bot::start(&sb, &model);
    let said = |text: &'static str| move |m: &Value| to_chat(m) && text_of(m).starts_with(text);
    for (ask, reply) in [
        ("one", "reply one"),
        ("two", "reply two"),
        ("three", "reply three"),
    ] {
        tg.message(CHAT, ALLOWED, ask);
        tg.wait_sent(reply, said(reply)).await;
    }
    tg.message(CHAT, ALLOWED, "/compact keep the numbers");
    tg.wait_sent("the compaction", said("conversation summarised"))
        .await;
    tg.message(CHAT, ALLOWED, "four");
    tg.wait_sent("the fourth answer", said("reply four")).await;
    let requests = model.requests();
    assert_eq!(requests.len(), 5);
    let asked = requests[3].to_string();
    assert!(
        asked.contains("You are compacting the conversation"),
        "{asked}"
    );
    assert!(asked.contains("keep: keep the numbers"), "{asked}");
    let next = requests[4].to_string();
    assert!(
        next.contains("Summary: three numbered questions."),
        "{next}"
    );
    assert!(
        !next.contains("reply one") && next.contains("reply two"),
        "{next}"
    );
    stops_cleanly(&tg, bot);
}

/// A model that answers 429 until its retries are spent, then its fallback: the chat's
/// progress message says so (docs/FALLBACK.md: shown on every surface).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fallback_shows_in_the_progress_message() {
    let busy = || Reply::Status(429, vec![], r#"{"error": {"message": "slow down"}}"#.into());
    let model = ScriptedServer::start(vec![busy(), busy()]).await;
    let backup = ScriptedServer::start(vec![text("from the backup")]).await;
    let tg = FakeTelegram::start().await;
    let sb = Sandbox::new();
    configure(
        &sb,
        &tg,
        json!({
            "provider": "main",
            "providers": {
                "main": {"format": "chat", "base_url": model.base_url(), "api_key": "sk-main-0123456789"},
                "backup": {"format": "chat", "base_url": backup.base_url(), "api_key": "sk-backup-0123456789"},
            },
            "fallback_models": ["backup:backup-model"],
            "llm": {"max_attempts": 2, "retry_initial_delay_ms": 1},
        }),
    );
    let bot = Bot::start(&sb, &model);
    tg.message(CHAT, ALLOWED, "hello");
    let said = |text: &'static str| move |m: &Value| to_chat(m) && text_of(m).contains(text);
    tg.wait_sent("the answer", said("from the backup")).await;
    let notice = tg
        .sent()
        .into_iter()
        .chain(tg.edits())
        .map(|m| text_of(&m).to_string())
        .find(|t| t.contains("falling back to backup:backup-model"));
    assert!(
        notice.is_some_and(|t| t.starts_with("⚠️ 429 Too Many Requests — retries spent on")),
        "{:?}",
        tg.sent()
    );
    assert_eq!(backup.requests()[0]["model"], "backup-model");
    stops_cleanly(&tg, bot);
}
