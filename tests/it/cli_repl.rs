//! `odek repl` driven through a pseudo-terminal.

use std::time::Duration;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_turns_ctrl_c_during_a_slow_turn_then_a_working_turn_and_exit() {
    let server = ScriptedServer::start(vec![
        text("answer one"),
        text("answer two"),
        Reply::Delayed(Duration::from_secs(20), Box::new(text("too slow"))),
        text("answer three"),
    ])
    .await;
    let sb = Sandbox::new();
    let cmd = repl_command(&sb, &server);
    let requests = std::sync::Arc::new(server);
    let watch = requests.clone();
    let transcript =
        tokio::task::spawn_blocking(move || -> Result<String, rexpect::error::Error> {
            let mut p = rexpect::session::spawn_command(cmd, Some(15_000))?;
            p.exp_string("Type /help for commands, /exit to quit.")?;
            p.exp_string("odek 1> ")?;
            p.send_line("first question")?;
            p.exp_string("answer one")?;
            p.exp_string("odek 2> ")?;
            p.send_line("/info")?;
            p.exp_string("Turns:   1")?;
            // The kernels odek is tested on offer Landlock (ABI 7): shell commands are sandboxed.
            p.exp_string("Sandbox: yes")?;
            p.send_line("second question")?;
            p.exp_string("answer two")?;
            p.exp_string("odek 3> ")?;
            p.send_line("a slow one")?;
            // Wait until the slow request reached the server, then interrupt the turn.
            for _ in 0..200 {
                if watch.requests().len() >= 3 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(25));
            }
            std::thread::sleep(Duration::from_millis(200));
            p.send_control('c')?;
            p.exp_string("turn interrupted")?;
            p.exp_string("odek 4> ")?;
            p.send_line("third question")?;
            p.exp_string("answer three")?;
            p.send_line("/plan")?;
            p.exp_string("No active plan.")?;
            p.send_line("/exit")?;
            let (_, rest) = p.exp_regex("Continue later with: odek repl --id [0-9a-f-]+")?;
            p.exp_eof()?;
            Ok(rest)
        })
        .await
        .expect("join")
        .expect("the REPL conversation went as expected");
    assert!(transcript.contains("odek repl --id"));

    let reqs = requests.requests();
    assert_eq!(reqs.len(), 4);
    let last = messages(&reqs[3]);
    let users: Vec<&str> = last
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(
        users,
        vec![
            "first question",
            "second question",
            "a slow one",
            "third question"
        ]
    );

    use std::os::unix::fs::PermissionsExt;
    let history = sb.home.join("repl_history");
    let mode = std::fs::metadata(&history)
        .expect("history created")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    assert!(read(&history).contains("third question"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_d_exits_and_repl_id_resumes() {
    let server = ScriptedServer::start(vec![text("hello back"), text("resumed answer")]).await;
    let sb = Sandbox::new();
    let cmd = repl_command(&sb, &server);
    let id = tokio::task::spawn_blocking(move || -> Result<String, rexpect::error::Error> {
        let mut p = rexpect::session::spawn_command(cmd, Some(15_000))?;
        p.exp_string("odek 1> ")?;
        p.send_control('c')?;
        p.exp_string("(To leave, press Ctrl-D or type /exit)")?;
        p.send_line("hello")?;
        p.exp_string("hello back")?;
        p.exp_string("odek 2> ")?;
        p.send_control('d')?;
        let (_, id) = p.exp_regex("[0-9]{8}-[0-9a-f]{32}")?;
        p.exp_eof()?;
        Ok(id)
    })
    .await
    .expect("join")
    .expect("conversation");

    let cmd = {
        let mut c = sb.odek(&server.base_url());
        c.env("TERM", "xterm").args(["repl", "--id", &id]);
        c
    };
    tokio::task::spawn_blocking(move || -> Result<(), rexpect::error::Error> {
        let mut p = rexpect::session::spawn_command(cmd, Some(15_000))?;
        p.exp_string("odek 2> ")?;
        p.send_line("again")?;
        p.exp_string("resumed answer")?;
        p.send_line("/quit")?;
        p.exp_eof()?;
        Ok(())
    })
    .await
    .expect("join")
    .expect("resumed conversation");
    let sent = messages(&server.requests()[1]);
    assert!(
        sent.iter().any(|m| m["content"] == "hello"),
        "the resumed turn sees the first one"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clarify_asks_on_the_terminal_and_the_answer_reaches_the_model() {
    let server = ScriptedServer::start(vec![
        tools(&[(
            "clarify",
            serde_json::json!({"question": "Which database?", "options": ["SQLite", "Postgres"]}),
        )]),
        text("Postgres it is."),
        tools(&[("clarify", serde_json::json!({"question": "Anything else?"}))]),
        text("Noted."),
        tools(&[("clarify", serde_json::json!({"question": "Still there?"}))]),
        text("never asked for"),
    ])
    .await;
    let sb = Sandbox::new();
    let cmd = repl_command(&sb, &server);
    in_pty(cmd, move |p| {
        p.exp_string("odek 1> ")?;
        p.send_line("set up storage")?;
        p.exp_string("Which database?")?;
        p.exp_string("1. SQLite")?;
        p.exp_string("2. Postgres")?;
        p.exp_string("answer (1-2 or your own words): ")?;
        // An empty line asks again; a number picks the option.
        p.send_line("")?;
        p.exp_string("answer (1-2 or your own words): ")?;
        p.send_line("2")?;
        p.exp_string("Postgres it is.")?;
        p.exp_string("odek 2> ")?;
        p.send_line("/info")?;
        p.exp_string("Tools:   read_file, write_file, search_files, patch, glob, batch_read, batch_patch, shell, background, delegate_tasks, web_fetch, clarify, memory, session_search, plan")?;
        p.send_line("more")?;
        p.exp_string("Anything else?")?;
        p.exp_string("answer: ")?;
        p.send_line("use WAL mode")?;
        p.exp_string("Noted.")?;
        // Ctrl-C while the question waits stops the turn, as at an approval.
        p.send_line("and then?")?;
        p.exp_string("Still there?")?;
        p.exp_string("answer: ")?;
        p.send_control('c')?;
        p.exp_string("turn interrupted")?;
        p.exp_string("odek 4> ")?;
        p.send_line("/exit")?;
        p.exp_eof()?;
        Ok(())
    })
    .await;
    let requests = server.requests();
    let first: Vec<String> = tool_results(&requests[1])
        .iter()
        .map(|r| unwrap_untrusted(r))
        .collect();
    assert_eq!(first, ["the user answered: Postgres"]);
    let second = tool_results(&requests[3]);
    assert_eq!(
        second.last().map(String::as_str),
        Some("the user answered: use WAL mode")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_path_attaches_a_file_completed_with_tab_and_memory_and_skills_are_listed() {
    let server = ScriptedServer::start(vec![text("**Two** notes.")]).await;
    let sb = Sandbox::new();
    std::fs::write(sb.work.join("notes.md"), "buy milk\ncall Ana\n").expect("notes");
    std::fs::write(sb.work.join("blob.bin"), [0x00, 0xff, 0xfe, 0x00]).expect("binary");
    std::fs::write(sb.work.join("photo.bin"), [0xff, 0xd8, 0xff, 0x00]).expect("jpeg");
    let skill = sb.home.join("skills/release-notes");
    std::fs::create_dir_all(&skill).expect("skill folder");
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: release-notes\ndescription: Writes release notes from the git log.\n---\nSteps.\n",
    )
    .expect("skill");
    let mut add = sb.odek(&server.base_url());
    add.args(["memory", "add", "Prefers", "short", "answers"]);
    assert!(output(add).await.status.success());

    let cmd = {
        let mut c = sb.odek(&server.base_url());
        c.env("TERM", "xterm").env("LANG", "C.UTF-8").arg("repl");
        c
    };
    let screen = tokio::task::spawn_blocking(move || -> Result<String, rexpect::error::Error> {
        let mut p = rexpect::session::spawn_command(cmd, Some(15_000))?;
        p.exp_string("odek 1> ")?;
        p.send("/me")?;
        p.send_control('i')?;
        p.send_line("")?;
        p.exp_string("Prefers short answers")?;
        p.send_line("/skills")?;
        p.exp_string("release-notes  [home] offered")?;
        // A file that cannot be attached stops the line: nothing is sent.
        p.send_line("look at @blob.bin")?;
        p.exp_string("@blob.bin: not a UTF-8 text file")?;
        p.exp_string("not sent")?;
        p.exp_string("odek 1> ")?;
        // An image (by its bytes) to a model that takes none: not sent either.
        p.send_line("look at @photo.bin")?;
        p.exp_string("photo.bin is an image, and the model test-model does not take images")?;
        p.exp_string("not sent")?;
        p.exp_string("odek 1> ")?;
        p.send("summarise @no")?;
        p.send_control('i')?;
        p.exp_string("tes.md")?;
        p.send_line(" please")?;
        p.exp_string("attached notes.md (18 bytes)")?;
        // (the prompt stays open during the turn: the turn's summary line ends its output)
        let before = p.exp_string(" iteration")?;
        p.exp_string("odek 2> ")?;
        p.send_line("/exit")?;
        p.exp_eof()?;
        Ok(before)
    })
    .await
    .expect("join")
    .expect("the REPL conversation went as expected");
    // The answer was rendered: bold, without its asterisks.
    assert!(screen.contains("\x1b[1mTwo\x1b[0m notes."), "{screen:?}");

    let reqs = server.requests();
    assert_eq!(reqs.len(), 1, "the refused line never reached the model");
    let sent = messages(&reqs[0]);
    let user = sent
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .expect("the user message")
        .to_string();
    assert!(
        user.starts_with("summarise @notes.md please\n\n--- notes.md ---\n"),
        "{user}"
    );
    let wrapped = odek::untrusted::wrappers(&user);
    assert_eq!(wrapped.len(), 1, "{user}");
    assert_eq!(wrapped[0].source, "resource:notes.md");
    assert_eq!(wrapped[0].body, "buy milk\ncall Ana");
}

/// A job outlives the turn that started it: `/jobs` shows it with its last lines between
/// turns, `/kill` stops one, and leaving the REPL stops the rest (SessionEnd reason
/// `prompt_input_exit`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_lists_the_background_jobs_kill_stops_one_and_exit_stops_the_rest() {
    let server = ScriptedServer::start(vec![
        tools(&[(
            "shell",
            serde_json::json!({"command": "echo 'ready on :8080'; sleep 67.1", "background": true}),
        )]),
        tools(&[(
            "shell",
            serde_json::json!({"command": "echo tick; sleep 67.2", "background": true}),
        )]),
        tools(&[("shell", serde_json::json!({"command": "sleep 0.3"}))]),
        text("Both started."),
    ])
    .await;
    let sb = Sandbox::new();
    let log = sb.tmp().join("end.log");
    sb.global_config(
        &serde_json::json!({"hooks": {"SessionEnd": [{"hooks": [{"type": "command",
            "command": format!("python3 -c 'import json,sys; open(\"{}\",\"w\").write(json.load(sys.stdin)[\"reason\"])'", log.display())}]}]}})
        .to_string(),
    );
    let cmd = repl_command(&sb, &server);
    tokio::task::spawn_blocking(move || -> Result<(), rexpect::error::Error> {
        let mut p = rexpect::session::spawn_command(cmd, Some(15_000))?;
        p.exp_string("odek 1> ")?;
        p.send_line("start the server and the ticker")?;
        p.exp_string("Both started.")?;
        p.exp_string("odek 2> ")?;
        p.send_line("/jobs")?;
        // (rexpect reads bytes: `·` is matched as `.+`)
        p.exp_regex("job 1 .+ running for \\d+ s .+ echo 'ready on :8080'; sleep 67.1")?;
        p.exp_string("ready on :8080")?;
        p.exp_regex("job 2 .+ running for \\d+ s .+ echo tick; sleep 67.2")?;
        p.send_line("/kill 2")?;
        p.exp_string("Stopped job 2.")?;
        p.send_line("/kill 9")?;
        p.exp_string("There is no job 9 (see /jobs).")?;
        p.send_line("/jobs")?;
        p.exp_regex("job 2 .+ stopped after \\d+ s .+ echo tick")?;
        p.send_line("/exit")?;
        p.exp_eof()?;
        Ok(())
    })
    .await
    .expect("join")
    .expect("conversation");
    assert!(
        processes_with("sleep 67.").is_empty(),
        "{:?}",
        processes_with("sleep 67.")
    );
    assert_eq!(read(&log), "prompt_input_exit");
}
