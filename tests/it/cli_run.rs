//! `odek run` end to end: the real binary against a scripted OpenAI-protocol server.

use crate::support::*;
use serde_json::json;

fn request_count(server: &ScriptedServer) -> usize {
    server.requests().len()
}

async fn five_iteration_task(stream: bool) {
    let server = ScriptedServer::start(vec![
        tools_with_text(
            "I'll write the notes first.",
            &[(
                "write_file",
                json!({"path": "notes.txt", "content": "alpha\nbeta\ngamma\n"}),
            )],
        ),
        tools(&[("shell", json!({"command": "cat notes.txt"}))]),
        tools(&[("shell", json!({"command": "wc -l notes.txt"}))]),
        tools(&[("shell", json!({"command": "grep -c a notes.txt"}))]),
        text("notes.txt has 3 lines."),
    ])
    .await;
    let sb = Sandbox::new();
    let mut cmd = sb.odek(&server.base_url());
    cmd.args([
        "run",
        if stream { "--stream" } else { "--no-stream" },
        "count",
        "the",
        "lines",
    ]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "notes.txt has 3 lines.\n",
        "{}",
        show(&out)
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 5);
    for r in &reqs {
        assert_eq!(r["stream"], json!(stream));
        assert_eq!(r["model"], "test-model");
        let names: Vec<&str> = r["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(
            names,
            vec![
                "read_file",
                "write_file",
                "search_files",
                "patch",
                "glob",
                "batch_read",
                "batch_patch",
                "shell",
                "background",
                "delegate_tasks",
                "web_fetch",
                "clarify",
                "memory",
                "session_search",
                "plan"
            ]
        );
    }
    let first = messages(&reqs[0]);
    assert_eq!(first[0]["role"], "system");
    assert_eq!(first.last().expect("task")["content"], "count the lines");
    let results: Vec<String> = tool_results(&reqs[4])
        .iter()
        .map(|r| unwrap_untrusted(r))
        .collect();
    assert_eq!(results.len(), 4);
    assert!(
        results[0].starts_with("wrote 17 bytes to notes.txt"),
        "{results:?}"
    );
    assert_eq!(results[1], "alpha\nbeta\ngamma\n[exit code: 0]");
    assert_eq!(results[2], "3 notes.txt\n[exit code: 0]");
    assert_eq!(results[3], "3\n[exit code: 0]");
    assert_eq!(read(sb.work.join("notes.txt")), "alpha\nbeta\ngamma\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("✓ shell wc -l notes.txt"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_iteration_shell_task_streamed() {
    five_iteration_task(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_iteration_shell_task_buffered() {
    five_iteration_task(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_batch_runs_concurrently_and_answers_in_call_order() {
    // Each call waits until all four have started: run one at a time, they would time out.
    let barrier = |i: u32| {
        (
            "shell",
            json!({
                "command": format!("touch started.{i}; n=0; while [ $(ls started.* | wc -l) -lt 4 ]; do n=$((n+1)); [ $n -gt 200 ] && exit 9; sleep 0.05; done; echo call-{i}"),
                "timeout": 30
            }),
        )
    };
    let server = ScriptedServer::start(vec![
        tools(&[barrier(1), barrier(2), barrier(3), barrier(4)]),
        text("all four ran"),
    ])
    .await;
    let sb = Sandbox::new();
    sb.global_config(r#"{"dangerous": {"action": "allow"}, "max_tool_parallel": 4}"#);
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "go"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let results: Vec<String> = tool_results(&server.requests()[1])
        .iter()
        .map(|r| unwrap_untrusted(r))
        .collect();
    assert_eq!(
        results,
        (1..=4)
            .map(|i| format!("call-{i}\n[exit code: 0]"))
            .collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_503_and_honours_retry_after() {
    let server = ScriptedServer::start(vec![
        Reply::Status(
            503,
            vec![("Retry-After".into(), "1".into())],
            "overloaded".into(),
        ),
        text("second time lucky"),
    ])
    .await;
    let sb = Sandbox::new();
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "hello"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "second time lucky\n");
    assert_eq!(request_count(&server), 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("retrying in 1.0s (attempt 2/4)"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthorized_fails_once_with_a_clear_message() {
    let server = ScriptedServer::start(vec![Reply::Status(
        401,
        vec![],
        r#"{"error":{"message":"Incorrect API key provided"}}"#.into(),
    )])
    .await;
    let sb = Sandbox::new();
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("ODEK_API_KEY", "sk-wrongwrongwrongwrongwrongwrong");
    cmd.args(["run", "hello"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert_eq!(request_count(&server), 1, "401 is never retried");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("odek: iteration 1: llm: 401 Unauthorized (status 401)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: the server refused the API key"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_arguments_and_unknown_tools_become_error_results() {
    let server = ScriptedServer::start(vec![
        raw_tool_call("shell", "{\"command\": \"echo hi\""),
        tools(&[("teleport", json!({"to": "mars"}))]),
        text("I adapted"),
    ])
    .await;
    let sb = Sandbox::new();
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "try things"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let reqs = server.requests();
    let bad_args = unwrap_untrusted(&tool_results(&reqs[1])[0]);
    assert!(
        bad_args.starts_with("error: the arguments are not valid JSON (EOF while parsing"),
        "{bad_args}"
    );
    assert!(
        bad_args.contains("The arguments as received:\n{\"command\": \"echo hi\""),
        "{bad_args}"
    );
    let history = messages(&reqs[1]);
    let sent_call = &history
        .iter()
        .find(|m| m["tool_calls"].is_array())
        .expect("the call")["tool_calls"][0];
    assert_eq!(
        sent_call["function"]["arguments"], "{}",
        "never sent back verbatim"
    );
    let unknown = tool_results(&reqs[2])[1].clone();
    assert!(
        unknown.starts_with("error: tool \"teleport\" not found; available tools: read_file"),
        "{unknown}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dangerous_command_is_denied_without_a_terminal() {
    let server = ScriptedServer::start(vec![
        tools(&[(
            "shell",
            json!({"command": "python3 -c \"open('marker','w').write('x')\""}),
        )]),
        text("it was denied"),
    ])
    .await;
    let sb = Sandbox::new();
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "make a marker"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let result = unwrap_untrusted(&tool_results(&server.requests()[1])[0]);
    assert!(
        result.starts_with("error: operation denied (non-interactive mode)"),
        "{result}"
    );
    assert!(result.contains("code_execution"), "{result}");
    assert!(!sb.work.join("marker").exists(), "the command must not run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_runs_with_no_server() {
    let sb = Sandbox::new();
    let demo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo.jsonl");
    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.args(["run", "--replay"])
        .arg(&demo)
        .arg("describe this directory");
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("replayed from `examples/demo.jsonl`"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("✓ shell").count(), 3, "{stderr}");
    assert_eq!(stderr.matches("✓ plan").count(), 4, "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_mid_run_exits_130_and_leaves_no_child() {
    let server = ScriptedServer::start(vec![
        tools(&[(
            "shell",
            json!({"command": "sleep 60 & echo $! > sleep.pid; wait"}),
        )]),
        text("never reached"),
    ])
    .await;
    let sb = Sandbox::new();
    sb.global_config(r#"{"dangerous": {"action": "allow"}}"#);
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "sleep a while"]);
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().expect("spawn");
    let pid_file = sb.work.join("sleep.pid");
    for _ in 0..200 {
        if std::fs::read_to_string(&pid_file).is_ok_and(|s| s.ends_with('\n')) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let sleep_pid: i32 = read(&pid_file).trim().parse().expect("pid");
    // SAFETY: sending a signal to our own child process.
    // SAFETY: sends SIGINT to the child this test started.
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT)
    };
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().expect("wait"))
        .await
        .expect("join");
    assert_eq!(out.status.code(), Some(130), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("odek: interrupted"),
        "{}",
        show(&out)
    );
    assert!(
        !process_alive(sleep_pid),
        "the shell's child {sleep_pid} survived"
    );
}

/// Alive = exists and is not a zombie waiting to be reaped.
fn process_alive(pid: i32) -> bool {
    for _ in 0..40 {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return false,
            Ok(stat) if stat.split_whitespace().nth(2) == Some("Z") => return false,
            Ok(_) => std::thread::sleep(std::time::Duration::from_millis(50)),
        }
    }
    true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_errors_exit_2_and_task_can_come_from_stdin() {
    let sb = Sandbox::new();
    let out = output({
        let mut c = sb.odek("http://127.0.0.1:9/v1");
        c.args(["run", "--bogus", "task"]);
        c
    })
    .await;
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));

    let server = ScriptedServer::start(vec![text("got it")]).await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(b"task from stdin\n").expect("write");
    }
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().expect("wait"))
        .await
        .expect("join");
    assert_eq!(out.status.code(), Some(0));
    let task = messages(&server.requests()[0]).last().expect("m")["content"].clone();
    assert_eq!(task, "task from stdin");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_endpoint_without_key_is_a_clear_error() {
    let sb = Sandbox::new();
    let out = output({
        let mut c = sb.odek("https://api.example.com/v1");
        c.args(["run", "hi"]);
        c
    })
    .await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no API key provided for https://api.example.com/v1 (set ODEK_API_KEY, DEEPSEEK_API_KEY or OPENAI_API_KEY"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_names_version_target_and_commit() {
    let sb = Sandbox::new();
    let mut texts = Vec::new();
    // The whole command line `version`, `--version` or `-V` is answered before the rest of
    // the command line is defined; `version` with a flag goes through it: the same line.
    for args in [
        &["version"][..],
        &["--version"],
        &["-V"],
        &["version", "--"],
    ] {
        let mut cmd = sb.odek("http://127.0.0.1:9/v1");
        cmd.args(args);
        let out = output(cmd).await;
        assert_eq!(out.status.code(), Some(0));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.starts_with(&format!("odek {} (", env!("CARGO_PKG_VERSION"))),
            "{text}"
        );
        assert!(text.contains(", commit "), "{text}");
        texts.push(text.into_owned());
    }
    texts.dedup();
    assert_eq!(texts.len(), 1, "{texts:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctx_files_and_agents_md_are_injected_before_the_task() {
    let server = ScriptedServer::start(vec![text("seen"), text("seen again")]).await;
    let sb = Sandbox::new();
    std::fs::write(sb.work.join("AGENTS.md"), "Always answer in haiku.\n").expect("write");
    std::fs::write(sb.work.join("spec.txt"), "the spec says 42").expect("write");
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--ctx", "spec.txt", "read the spec"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let sent = messages(&server.requests()[0]);
    assert_eq!(sent.len(), 4, "system, AGENTS.md, --ctx, task");
    let agents = sent[1]["content"].as_str().expect("text");
    assert!(
        agents.starts_with("[Injected context: project instructions from ./AGENTS.md"),
        "{agents}"
    );
    assert!(agents.contains("Always answer in haiku."));
    let ctx = sent[2]["content"].as_str().expect("text");
    assert!(
        ctx.contains("--- spec.txt ---\n<untrusted_content_") && ctx.contains("the spec says 42"),
        "{ctx}"
    );
    assert_eq!(sent[3]["content"], "read the spec");

    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--no-agents", "again"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(
        messages(&server.requests()[1]).len(),
        2,
        "no AGENTS.md with --no-agents"
    );

    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--ctx", "missing.txt", "x"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--ctx missing.txt: No such file"),
        "{}",
        show(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_then_replay_reproduces_the_run() {
    let server = ScriptedServer::start(vec![
        tools(&[("shell", json!({"command": "echo recorded"}))]),
        text("recorded answer"),
    ])
    .await;
    let sb = Sandbox::new();
    let recording = sb.dir.path().join("rec.jsonl");
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--ephemeral", "--record"])
        .arg(&recording)
        .arg("go");
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.args(["run", "--ephemeral", "--replay"])
        .arg(&recording)
        .arg("go");
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "recorded answer\n");
    assert!(String::from_utf8_lossy(&out.stderr).contains("✓ shell echo recorded"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_prints_only_the_answer() {
    let server = ScriptedServer::start(vec![
        tools(&[("shell", json!({"command": "echo x"}))]),
        text("just this"),
    ])
    .await;
    let sb = Sandbox::new();
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "-q", "go"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "just this\n");
    assert!(out.stderr.is_empty(), "{}", show(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_iter_ends_with_a_partial_summary() {
    let server = ScriptedServer::start(vec![
        tools(&[("shell", json!({"command": "echo 1"}))]),
        tools(&[("shell", json!({"command": "echo 2"}))]),
        text("Half done: ran two commands."),
    ])
    .await;
    let sb = Sandbox::new();
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--max-iter", "2", "go"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "[Iteration budget reached — partial summary]\n\nHalf done: ran two commands.\n"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("reached max iterations (2)"));
    let summary_request = &server.requests()[2];
    assert!(
        summary_request.get("tools").is_none(),
        "the summary call offers no tools"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runtime_budget_stops_a_slow_tool_and_exits_4() {
    let server = ScriptedServer::start(vec![
        tools(&[("shell", json!({"command": "sleep 20"}))]),
        text("never"),
    ])
    .await;
    let sb = Sandbox::new();
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--max-runtime", "1", "wait"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("execution budget exceeded: runtime"),
        "{}",
        show(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_user_approves_or_denies_risky_commands() {
    let server = ScriptedServer::start(vec![
        tools(&[(
            "shell",
            json!({"command": "python3 -c \"open('approved','w')\""}),
        )]),
        tools(&[(
            "shell",
            json!({"command": "python3 -c \"open('denied','w')\""}),
        )]),
        text("asked twice"),
    ])
    .await;
    let sb = Sandbox::new();
    let cmd = {
        let mut c = sb.odek(&server.base_url());
        c.env("TERM", "xterm")
            .args(["run", "--no-stream", "make two files"]);
        c
    };
    tokio::task::spawn_blocking(move || -> Result<(), rexpect::error::Error> {
        let mut p = rexpect::session::spawn_command(cmd, Some(20_000))?;
        p.exp_string("requires approval")?;
        p.exp_string("risk: code_execution")?;
        p.exp_string("[a]pprove")?;
        p.send_line("a")?;
        p.exp_string("requires approval")?;
        p.send_line("d")?;
        p.exp_string("asked twice")?;
        p.exp_eof()?;
        Ok(())
    })
    .await
    .expect("join")
    .expect("the approval conversation");
    assert!(sb.work.join("approved").exists());
    assert!(!sb.work.join("denied").exists());
    let denied = unwrap_untrusted(&tool_results(&server.requests()[2])[1]);
    assert!(
        denied.starts_with("error: operation denied by user"),
        "{denied}"
    );
}

/// The replayed demo's tool lines as a terminal shows them, with this environment added.
async fn replayed_tool_lines(sb: &Sandbox, env: &[(&str, &str)]) -> String {
    let demo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo.jsonl");
    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.env("TERM", "xterm")
        .args(["run", "--replay"])
        .arg(&demo)
        .arg("describe this directory");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let latin1 = tokio::task::spawn_blocking(move || -> Result<String, rexpect::error::Error> {
        let mut p = rexpect::session::spawn_command(cmd, Some(15_000))?;
        p.exp_eof()
    })
    .await
    .expect("join")
    .expect("the replay ran in a terminal");
    // rexpect hands over each byte as one char: put the UTF-8 back together.
    let bytes: Vec<u8> = latin1.chars().map(|c| c as u32 as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_lines_carry_the_emoji_table_and_fall_back_to_plain_text() {
    let sb = Sandbox::new();
    let rich = replayed_tool_lines(&sb, &[("LANG", "C.UTF-8")]).await;
    assert_eq!(rich.matches("📋 \u{1b}[36mplan").count(), 4, "{rich}");
    assert_eq!(rich.matches("💻 \u{1b}[36mshell").count(), 3, "{rich}");

    let no_color = replayed_tool_lines(&sb, &[("LANG", "C.UTF-8"), ("NO_COLOR", "1")]).await;
    assert_eq!(no_color.matches("✓ plan").count(), 4, "{no_color}");
    assert!(
        !no_color.contains('📋') && !no_color.contains('\u{1b}'),
        "{no_color}"
    );

    let ascii = replayed_tool_lines(&sb, &[("LANG", "C")]).await;
    assert_eq!(ascii.matches("  ok \u{1b}[36mplan").count(), 4, "{ascii}");
    assert_eq!(ascii.matches("  ok \u{1b}[36mshell").count(), 3, "{ascii}");
    assert!(!ascii.contains('📋') && !ascii.contains('✓'), "{ascii}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_odek_home_set_nothing_is_written_to_the_users_home() {
    let sb = Sandbox::new();
    let home = sb.tmp().join("user-home");
    std::fs::create_dir_all(&home).expect("home");
    let demo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo.jsonl");
    for args in [
        vec![
            "run",
            "--replay",
            demo.to_str().expect("path"),
            "describe this directory",
        ],
        vec!["session", "list"],
        vec!["init", "--global"],
        vec!["man"],
    ] {
        let mut cmd = sb.odek("http://127.0.0.1:9/v1");
        cmd.env("HOME", &home).args(&args);
        let out = output(cmd).await;
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", show(&out));
    }
    let written: Vec<_> = std::fs::read_dir(&home)
        .expect("home")
        .map(|e| e.expect("entry").path())
        .collect();
    assert!(
        written.is_empty(),
        "written to the user's home: {written:?}"
    );
    assert!(sb.home.join("config.json").exists() && sb.home.join("sessions").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_server_that_is_not_running_gets_the_hint_from_the_typed_error() {
    let sb = Sandbox::new();
    sb.global_config(r#"{"llm": {"max_attempts": 1}}"#);
    // Port 9 (discard) on loopback: nothing listens, the connection is refused.
    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.args(["run", "hello"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("odek: iteration 1: llm: connection error"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: nothing is listening at the base URL"),
        "{stderr}"
    );
    assert_eq!(stderr.matches("hint:").count(), 1, "{stderr}");
}

/// rexpect hands over each byte as one char: the UTF-8 put back together.
fn utf8_of(latin1: &str) -> String {
    let bytes: Vec<u8> = latin1.chars().map(|c| c as u32 as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Issue 60, M1: the prompt shows the whole command — a second line, a part pushed far to
/// the right by blanks — and each part's class and reason; denied, neither part runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_shows_the_whole_command_its_other_lines_and_far_parts() {
    let hidden = "cargo test --quiet\npython3 -c \"open('hidden','w')\"";
    let spaced = format!(
        "cargo test --quiet{}; python3 -c \"open('spaced','w')\"",
        " ".repeat(120)
    );
    let server = ScriptedServer::start(vec![
        tools(&[("shell", json!({"command": hidden}))]),
        tools(&[("shell", json!({"command": spaced}))]),
        text("asked twice"),
    ])
    .await;
    let sb = Sandbox::new();
    let cmd = {
        let mut c = sb.odek(&server.base_url());
        c.env("TERM", "xterm")
            .args(["run", "--no-stream", "run the tests"]);
        c
    };
    let screen = tokio::task::spawn_blocking(move || -> Result<String, rexpect::error::Error> {
        let mut p = rexpect::session::spawn_command(cmd, Some(20_000))?;
        let mut seen = p.exp_string("[a]pprove")?;
        p.send_line("d")?;
        seen.push_str(&p.exp_string("[a]pprove")?);
        p.send_line("d")?;
        seen.push_str(&p.exp_eof()?);
        Ok(seen)
    })
    .await
    .expect("join")
    .expect("the approval conversation");
    let screen = utf8_of(&screen);
    assert!(
        screen.contains("cargo test --quiet\u{240a}python3 -c \"open('hidden','w')\""),
        "{screen}"
    );
    assert!(
        screen.contains("· python3 -c open('hidden','w')"),
        "each part on its own row: {screen}"
    );
    assert!(
        screen.contains("cargo test --quiet ⟨120 blanks⟩ ; python3 -c \"open('spaced','w')\""),
        "{screen}"
    );
    assert!(screen.matches("code_execution").count() >= 4, "{screen}");
    assert!(!sb.work.join("hidden").exists());
    assert!(!sb.work.join("spaced").exists());
}

/// Issue 60, M2: a file name's and an answer's control bytes reach the terminal as
/// pictures: the tool line, and `odek session show` of an answer holding OSC 52.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_names_and_answers_reach_the_terminal_with_their_control_bytes_shown() {
    let name = "evil\u{1b}]0;pwned\u{7}.txt";
    let answer = "copied\u{1b}]52;c;ZXZpbA==\u{7} done";
    let server = ScriptedServer::start(vec![
        tools(&[("write_file", json!({"path": name, "content": "x"}))]),
        text(answer),
    ])
    .await;
    let sb = Sandbox::new();
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--no-stream", "write it"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("evil\u{241b}]0;pwned\u{2407}.txt"),
        "{stderr}"
    );
    assert!(
        !stderr.contains('\u{1b}') && !stderr.contains('\u{7}'),
        "{stderr:?}"
    );
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["session", "show"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("copied\u{241b}]52;c;ZXZpbA==\u{2407} done"),
        "{shown}"
    );
    assert!(
        !shown.contains('\u{1b}') && !shown.contains('\u{7}'),
        "{shown:?}"
    );
}

/// Issue 60, L6: a 401 whose body echoes the key: the final error line holds no key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_final_error_line_never_shows_the_key_a_server_echoes() {
    let key = "sk-live-echoed-0123456789abcdefABCDEF";
    let server = ScriptedServer::start(vec![Reply::Status(
        401,
        vec![],
        format!(r#"{{"error":{{"message":"Incorrect API key provided: {key}"}}}}"#),
    )])
    .await;
    let sb = Sandbox::new();
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("ODEK_API_KEY", key).args(["run", "hello"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Incorrect API key provided"), "{stderr}");
    assert!(!stderr.contains(key), "{stderr}");
}
