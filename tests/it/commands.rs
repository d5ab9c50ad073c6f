//! Custom slash commands through the binary: a project command's arguments in `odek run` and
//! the REPL, `allowed-tools` narrowing the tools sent, a command's `model` refused until its
//! bytes are trusted, a skill run as a command, and `odek commands list --json`.

use std::path::Path;

use crate::support::*;
use serde_json::{Value, json};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn odek_commands(sb: &Sandbox, args: &[&str]) -> std::process::Output {
    let mut cmd = sb.odek("http://127.0.0.1:9");
    cmd.arg("commands").args(args);
    cmd.output().expect("odek commands")
}

async fn run(sb: &Sandbox, server: &ScriptedServer, task: &str) -> std::process::Output {
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--ephemeral", task]);
    output(cmd).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_command_expands_its_arguments_in_run_and_in_the_repl() {
    let sb = Sandbox::new();
    write(
        &sb.work.join(".odek/commands/fix.md"),
        "---\ndescription: Fix an issue\nargument-hint: ISSUE FILE\n---\nFix issue #$1 in $2 ($3). Everything: $ARGUMENTS\n",
    );
    let server = ScriptedServer::start(vec![text("fixed in run"), text("fixed in repl")]).await;
    let out = run(&sb, &server, "/fix 42 src/a.rs").await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(stdout(&out).contains("fixed in run"));
    assert_eq!(
        last_user_text(&server.requests()[0]),
        "Fix issue #42 in src/a.rs (). Everything: 42 src/a.rs"
    );

    let cmd = repl_command(&sb, &server);
    tokio::task::spawn_blocking(move || -> Result<(), rexpect::error::Error> {
        let mut p = rexpect::session::spawn_command(cmd, Some(15_000))?;
        p.exp_string("odek 1> ")?;
        p.send_line("/help")?;
        p.exp_string("Custom commands")?;
        p.exp_string("/fix ISSUE FILE")?;
        p.exp_string("Fix an issue")?;
        p.send_line("/fix 7 \"lib/b c.rs\" extra")?;
        p.exp_string("fixed in repl")?;
        p.exp_string("odek 2> ")?;
        p.send_line("/nope")?;
        p.exp_string("no command /nope")?;
        p.send_line("/exit")?;
        p.exp_eof()?;
        Ok(())
    })
    .await
    .expect("join")
    .expect("the REPL ran the command");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "an unknown command reaches no model");
    assert_eq!(
        last_user_text(&reqs[1]),
        "Fix issue #7 in lib/b c.rs (extra). Everything: 7 \"lib/b c.rs\" extra"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_tools_narrow_the_tools_sent_and_never_widen_them() {
    let sb = Sandbox::new();
    write(
        &sb.home.join("commands/look.md"),
        "---\nallowed-tools: Read, Grep, Bash(git status:*)\n---\nLook at $ARGUMENTS\n",
    );
    sb.global_config(&json!({"tools": {"disabled": ["shell"]}}).to_string());
    let server = ScriptedServer::start(vec![text("plain"), text("narrowed")]).await;
    let plain = run(&sb, &server, "look around").await;
    assert_eq!(plain.status.code(), Some(0), "{}", show(&plain));
    let out = run(&sb, &server, "/look the code").await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stderr = stderr(&out);
    assert!(
        stderr.contains("cannot limit a tool to a pattern"),
        "{stderr}"
    );
    let reqs = server.requests();
    let all = tool_names(&reqs[0]);
    let narrowed = tool_names(&reqs[1]);
    assert!(all.len() > 6, "{all:?}");
    let expected: Vec<String> = all
        .iter()
        .filter(|t| ["read_file", "batch_read", "search_files", "plan"].contains(&t.as_str()))
        .cloned()
        .collect();
    assert_eq!(narrowed, expected, "shell stays off: the selection wins");
    assert_eq!(last_user_text(&reqs[1]), "Look at the code");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_command_with_a_model_is_refused_until_trusted() {
    let sb = Sandbox::new();
    let file = sb.work.join(".claude/commands/ops/deploy.md");
    let text_of = |model: &str| format!("---\nmodel: {model}\n---\nDeploy $1\n");
    write(&file, &text_of("big-model"));
    let server = ScriptedServer::start(vec![text("deployed")]).await;

    let refused = run(&sb, &server, "/ops:deploy staging").await;
    assert_ne!(refused.status.code(), Some(0), "{}", show(&refused));
    let said = stderr(&refused);
    assert!(said.contains("sets model and is not trusted"), "{said}");
    assert!(said.contains("odek commands trust ops:deploy"), "{said}");
    assert!(server.requests().is_empty(), "nothing reached the model");

    let trusted = odek_commands(&sb, &["trust", "ops:deploy"]);
    assert_eq!(trusted.status.code(), Some(0), "{}", show(&trusted));
    assert!(
        stdout(&trusted).contains("the model big-model"),
        "{}",
        show(&trusted)
    );
    let out = run(&sb, &server, "/ops:deploy staging").await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let request = &server.requests()[0];
    assert_eq!(request["model"], "big-model");
    assert_eq!(last_user_text(request), "Deploy staging");

    write(&file, &text_of("other-model"));
    let changed = run(&sb, &server, "/ops:deploy staging").await;
    assert_ne!(changed.status.code(), Some(0), "{}", show(&changed));
    assert!(stderr(&changed).contains("changed since you trusted it"));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_runs_as_a_command_with_the_arguments_as_the_task() {
    let sb = Sandbox::new();
    write(
        &sb.home.join("skills/release-notes/SKILL.md"),
        "---\nname: release-notes\ndescription: Write release notes.\n---\nGroup the commits by area.\n",
    );
    let server = ScriptedServer::start(vec![text("notes")]).await;
    let out = run(&sb, &server, "/release-notes for 1.2").await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let sent = last_user_text(&server.requests()[0]);
    assert!(sent.starts_with("Skill release-notes — folder: "), "{sent}");
    assert!(sent.contains("Group the commits by area."), "{sent}");
    assert!(
        sent.ends_with("Use the skill \"release-notes\" for this task: for 1.2"),
        "{sent}"
    );
}

#[test]
fn commands_list_json_names_every_source_and_the_shadowed_files() {
    let sb = Sandbox::new();
    write(&sb.home.join("commands/mine.md"), "Mine\n");
    write(&sb.home.join("commands/review.md"), "my review\n");
    write(&sb.work.join(".odek/commands/review.md"), "Review it\n");
    write(&sb.work.join(".odek/commands/undo.md"), "not undo\n");
    write(
        &sb.work.join(".claude/commands/fe/build.md"),
        "---\nallowed-tools: Bash\n---\nBuild\n",
    );
    write(
        &sb.home.join("skills/triage/SKILL.md"),
        "---\nname: triage\ndescription: Triage issues.\n---\nTriage.\n",
    );
    let out = odek_commands(&sb, &["list", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let list: Value = serde_json::from_str(&stdout(&out)).expect("json");
    let row = |name: &str| -> Value {
        list["commands"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name} in {list:#}"))
    };
    assert_eq!(row("mine")["source"], "user");
    assert_eq!(row("review")["source"], "project");
    assert_eq!(row("triage")["source"], "skill");
    let build = row("fe:build");
    assert_eq!(build["source"], "claude");
    assert_eq!(build["runnable"], false);
    assert!(
        build["status"]
            .as_str()
            .unwrap()
            .contains("odek commands trust fe:build")
    );
    let hidden: Vec<(String, String)> = list["shadowed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().into(),
                s["by"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(hidden.len(), 2, "{hidden:?}");
    assert!(hidden.contains(&("undo".into(), "the built-in /undo".into())));
    assert!(
        hidden
            .iter()
            .any(|(n, by)| n == "review" && by.ends_with("(project)"))
    );
    let text = stdout(&odek_commands(&sb, &["list"]));
    assert!(text.contains("(hidden) /undo in "), "{text}");
    assert!(
        text.contains("/fe:build  [claude] command /fe:build"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_up_in_continue_runs_a_command_too() {
    let sb = Sandbox::new();
    write(&sb.home.join("commands/again.md"), "Again, $ARGUMENTS.\n");
    let server = ScriptedServer::start(vec![text("one"), text("two")]).await;
    let id = first_session(&sb, &server, "start").await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["continue", "--id", &id, "/again with feeling"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(
        last_user_text(&server.requests()[1]),
        "Again, with feeling."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_commands_add_nothing_to_a_plain_runs_first_request() {
    let sb = Sandbox::new();
    let server = ScriptedServer::start(vec![text("one"), text("two")]).await;
    let before = run(&sb, &server, "hello").await;
    assert_eq!(before.status.code(), Some(0), "{}", show(&before));
    write(&sb.home.join("commands/mine.md"), "Mine $1\n");
    write(&sb.home.join("commands/git/commit.md"), "Commit\n");
    write(&sb.work.join(".odek/commands/review.md"), "Review\n");
    write(&sb.work.join(".odek/commands/fe/build.md"), "Build\n");
    write(
        &sb.work.join(".claude/commands/deploy.md"),
        "---\nmodel: big\nallowed-tools: Bash\n---\nDeploy\n",
    );
    let after = run(&sb, &server, "hello").await;
    assert_eq!(after.status.code(), Some(0), "{}", show(&after));
    let reqs = server.requests();
    let size = reqs[1].to_string().len();
    eprintln!(
        "first request: {} bytes without commands, {size} with five",
        reqs[0].to_string().len()
    );
    assert_eq!(reqs[0]["messages"], reqs[1]["messages"]);
    assert_eq!(reqs[0]["tools"], reqs[1]["tools"]);
    assert!(size <= 15_000, "the first request is {size} bytes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_run_refuses_a_command_that_sets_another_model() {
    let sb = Sandbox::new();
    write(
        &sb.home.join("commands/big.md"),
        "---\nmodel: big-model\n---\nThink hard about $ARGUMENTS\n",
    );
    write(&sb.home.join("commands/plain.md"), "Look at $ARGUMENTS\n");
    let server = ScriptedServer::start(vec![text("recorded answer")]).await;
    let recording = sb.dir.path().join("rec.jsonl");
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--ephemeral", "--record"])
        .arg(&recording)
        .arg("/plain it");
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(last_user_text(&server.requests()[0]), "Look at it");
    let replay = |task: &str| {
        let mut cmd = sb.odek("http://127.0.0.1:9/v1");
        cmd.args(["run", "--ephemeral", "--replay"])
            .arg(&recording)
            .arg(task);
        cmd
    };
    let refused = output(replay("/big it")).await;
    assert_ne!(refused.status.code(), Some(0), "{}", show(&refused));
    assert!(
        stderr(&refused)
            .contains("sets the model \"big-model\", which a replayed or recorded run cannot ask"),
        "{}",
        show(&refused)
    );
    let replayed = output(replay("/plain it")).await;
    assert_eq!(replayed.status.code(), Some(0), "{}", show(&replayed));
    assert_eq!(stdout(&replayed), "recorded answer\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_narrowed_turns_children_get_only_its_tools() {
    use crate::support::keyed::{Answer, KeyedServer, first_user};
    let answer: Answer = std::sync::Arc::new(|first: String, request: Value| {
        Box::pin(async move {
            if !first.starts_with("Split: ") {
                return json!({"role": "assistant", "content": "child done"});
            }
            let results = request["messages"]
                .as_array()
                .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count());
            if results > 0 {
                return json!({"role": "assistant", "content": "Delegated."});
            }
            let args = json!({"tasks": [{"goal": "read the README"}]});
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
                "type": "function",
                "function": {"name": "delegate_tasks", "arguments": args.to_string()}}]})
        })
    });
    let server = KeyedServer::start(answer).await;
    let sb = Sandbox::new();
    sb.global_config(
        &json!({"stream": false, "context_window": 100000,
                "dangerous": {"classes": {"system_write": "allow"}}})
        .to_string(),
    );
    write(
        &sb.home.join("commands/split.md"),
        "---\nallowed-tools: Task, Read\n---\nSplit: $ARGUMENTS\n",
    );
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("ODEK_API_KEY", "sk-test-0123456789abcdef0123456789")
        .args(["run", "--ephemeral", "/split the work"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(stdout(&out).contains("Delegated."), "{}", show(&out));
    let requests = server.requests();
    let (parent, children): (Vec<&Value>, Vec<&Value>) = requests
        .iter()
        .partition(|r| first_user(r) == "Split: the work");
    assert_eq!(
        tool_names(parent[0]),
        ["read_file", "batch_read", "delegate_tasks", "plan"]
    );
    let result = tool_results(parent.last().unwrap()).join("\n");
    assert!(!children.is_empty(), "the child asked the model: {result}");
    for child in children {
        let tools = tool_names(child);
        assert!(tools.contains(&"read_file".to_string()), "{tools:?}");
        assert!(
            tools
                .iter()
                .all(|t| ["read_file", "batch_read", "plan"].contains(&t.as_str())),
            "the child got more than the command allows: {tools:?}"
        );
    }
}
