//! MCP servers through the binary, against the real `@modelcontextprotocol/server-everything`
//! from npm (pinned by `tests/mcp/package-lock.json`; `make test` installs it with `npm ci`):
//! `odek mcp list`, calls of `echo` and `get-sum` with their approval and untrusted wrapping,
//! and a server that exits mid-run — over stdio, and again over streamable HTTP on a free
//! loopback port.
use std::path::PathBuf;
use std::time::Duration;

use crate::support::*;
use serde_json::{Value, json};

/// The server's entry point, installed by `make mcp-deps`.
fn everything() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        path.exists(),
        "the MCP test server is not installed: run `make mcp-deps` (npm ci in tests/mcp)"
    );
    path
}

/// A global config with the stdio server `everything` (echo auto-approved) and `extra`
/// servers.
fn stdio_config(sb: &Sandbox, command: Value, extra: Value) {
    let mut servers = json!({"everything": command});
    servers
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    sb.global_config(&json!({"mcp_servers": servers}).to_string());
}

fn node_server(args: &[&str]) -> Value {
    let mut all = vec![everything().display().to_string()];
    all.extend(args.iter().map(|a| a.to_string()));
    json!({"command": "node", "args": all, "auto_approve": ["echo"]})
}

fn description(request: &Value, name: &str) -> String {
    request["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["function"]["name"] == name))
        .map(|t| {
            t["function"]["description"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .unwrap_or_default()
}

fn wrapper_source(text: &str) -> String {
    odek::untrusted::unwrap(text)
        .map(|u| u.source.to_string())
        .unwrap_or_default()
}

#[tokio::test]
async fn mcp_list_shows_each_server_its_state_and_tools() {
    let sb = Sandbox::new();
    stdio_config(
        &sb,
        node_server(&["stdio"]),
        json!({
            "ghost": {"command": "/nonexistent/mcp-server"},
            "later": {"url": "http://127.0.0.1:9/mcp", "disabled": true}
        }),
    );
    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.args(["mcp", "list"]);
    let out = output(cmd).await;
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(
        out.status.code(),
        Some(1),
        "a failed server exits 1: {}",
        show(&out)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].starts_with("everything  stdio  running "),
        "{stdout}"
    );
    assert!(lines[0].ends_with("tool(s)"), "{stdout}");
    assert!(
        stdout.contains("  everything__echo ")
            && stdout.contains("Echoes back the input string  [auto-approved]"),
        "{stdout}"
    );
    assert!(stdout.contains("  everything__get-sum "), "{stdout}");
    assert!(
        stdout.contains("ghost       stdio  failed    cannot start \"/nonexistent/mcp-server\""),
        "{stdout}"
    );
    assert!(stdout.contains("later       http   disabled"), "{stdout}");

    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.args(["mcp", "list", "--json"]);
    let out = output(cmd).await;
    let listed: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(listed[0]["name"], "everything");
    assert_eq!(listed[0]["state"], "running");
    let tools = listed[0]["tools"].as_array().expect("tools");
    assert!(
        tools
            .iter()
            .any(|t| t["name"] == "everything__get-sum" && t["auto_approve"] == false)
    );
    assert_eq!(listed[1]["state"], "failed");
    assert_eq!(listed[2]["state"], "disabled");
}

#[tokio::test]
async fn a_project_may_disable_a_server_but_never_add_one() {
    let sb = Sandbox::new();
    stdio_config(&sb, node_server(&["stdio"]), json!({}));
    sb.project_config(
        &json!({"mcp_servers": {
            "everything": {"disabled": true},
            "sneaky": {"command": "sh", "args": ["-c", "touch pwned"]}
        }})
        .to_string(),
    );
    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.args(["mcp", "list"]);
    let out = output(cmd).await;
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        stdout.starts_with("everything  stdio  disabled"),
        "{stdout}"
    );
    assert!(!stdout.contains("sneaky"), "{stdout}");
    assert!(
        stderr.contains("ignoring mcp_servers.sneaky (a project may only disable a server"),
        "{stderr}"
    );
    assert!(!sb.work.join("pwned").exists());
}

/// One run calling `echo` (auto-approved) and `get-sum` (gated as code_execution) on the
/// server `url_or_stdio`; returns the model's requests.
async fn echo_and_sum(sb: &Sandbox, allow: bool) -> (std::process::Output, Vec<Value>) {
    let server = ScriptedServer::start(vec![
        tools(&[
            ("everything__echo", json!({"message": "hello <mcp>"})),
            ("everything__get-sum", json!({"a": 2, "b": 3})),
        ]),
        text("The sum is 5."),
    ])
    .await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--ephemeral", "add two and three"]);
    if allow {
        cmd.args(["--allow", "code_execution"]);
    }
    let out = output(cmd).await;
    (out, server.requests())
}

fn assert_echo_and_sum(out: &std::process::Output, requests: &[Value], summed: bool) {
    assert_eq!(out.status.code(), Some(0), "{}", show(out));
    assert_eq!(requests.len(), 2);
    let names = tool_names(&requests[0]);
    assert!(
        names.contains(&"read_file".to_string()),
        "built-ins stay: {names:?}"
    );
    assert!(names.contains(&"everything__echo".to_string()), "{names:?}");
    assert!(
        names.contains(&"everything__get-sum".to_string()),
        "{names:?}"
    );
    assert_eq!(
        names,
        tool_names(&requests[1]),
        "the tool list never changes"
    );
    let about = description(&requests[0], "everything__get-sum");
    assert!(
        about.starts_with("Tool exposed by third-party MCP server \"everything\"."),
        "{about}"
    );
    let wrapped = about.split_once('\n').map(|(_, w)| w).unwrap_or_default();
    assert_eq!(wrapper_source(wrapped), "mcp:everything:get-sum");
    assert_eq!(unwrap_untrusted(wrapped), "Returns the sum of two numbers");

    let results = tool_results(&requests[1]);
    assert_eq!(results.len(), 2);
    assert_eq!(wrapper_source(&results[0]), "mcp:everything:echo");
    assert_eq!(unwrap_untrusted(&results[0]), "Echo: hello <mcp>");
    assert_eq!(wrapper_source(&results[1]), "mcp:everything:get-sum");
    let sum = unwrap_untrusted(&results[1]);
    if summed {
        assert_eq!(sum, "The sum of 2 and 3 is 5.");
    } else {
        assert!(sum.starts_with("error: "), "{sum}");
        assert!(sum.contains("code_execution"), "{sum}");
    }
}

#[tokio::test]
async fn a_run_calls_echo_and_get_sum_over_stdio() {
    let sb = Sandbox::new();
    stdio_config(&sb, node_server(&["stdio"]), json!({}));
    // Without a person to ask, get-sum (not in auto_approve) is refused; echo runs.
    let (out, requests) = echo_and_sum(&sb, false).await;
    assert_echo_and_sum(&out, &requests, false);
    let (out, requests) = echo_and_sum(&sb, true).await;
    assert_echo_and_sum(&out, &requests, true);
}

#[tokio::test]
async fn a_server_that_fails_to_start_is_a_warning_and_the_run_goes_on() {
    let sb = Sandbox::new();
    sb.global_config(
        &json!({"mcp_servers": {"broken": {"command": "node", "args": ["-e", "console.error('boom: missing config'); process.exit(2)"]}}})
            .to_string(),
    );
    let server = ScriptedServer::start(vec![text("fine")]).await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--ephemeral", "hi"]);
    let out = output(cmd).await;
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        stderr.contains(
            "odek: warning: mcp server broken did not start, so its tools are not available:"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("boom: missing config"), "{stderr}");
    let names = tool_names(&server.requests()[0]);
    assert!(
        !names.iter().any(|n| n.starts_with("broken__")),
        "{names:?}"
    );
    assert!(names.contains(&"shell".to_string()));
}

/// The run's second model call is held while `stop` ends the server; the model then calls
/// `echo` again and must be told the server is not running, with the tool still listed.
async fn server_exits_mid_run(sb: &Sandbox, stop: impl FnOnce()) {
    let hold = Hold::new();
    let server = ScriptedServer::start(vec![
        tools(&[("everything__echo", json!({"message": "first"}))]),
        Reply::Held(
            hold.clone(),
            Box::new(tools(&[("everything__echo", json!({"message": "second"}))])),
        ),
        text("The server went away."),
    ])
    .await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--ephemeral", "echo twice"]);
    let run = tokio::task::spawn_blocking(move || cmd.output().expect("odek runs"));
    hold.wait_reached().await;
    stop();
    hold.release();
    let out = run.await.expect("join");
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{}", show(&out));
    let first = tool_results(&requests[1]);
    assert_eq!(unwrap_untrusted(&first[0]), "Echo: first");
    let after = tool_results(&requests[2]);
    assert_eq!(
        unwrap_untrusted(&after[1]),
        "error: mcp server everything is not running"
    );
    assert_eq!(wrapper_source(&after[1]), "mcp:everything:echo");
    assert_eq!(
        tool_names(&requests[0]),
        tool_names(&requests[2]),
        "a dead server keeps its tools listed"
    );
}

/// Configures the stdio server `everything` (echo auto-approved) started through `sh`, which
/// appends its pid (the server's, after `exec`) to the returned file.
fn server_recording_its_pid(sb: &Sandbox) -> PathBuf {
    let pidfile = sb.dir.path().join("server.pid");
    // `$$$$` is the shell's `$$` once the config's `$` substitution has run.
    let script = format!(
        "echo $$$$ >> '{}'; exec node '{}' stdio",
        pidfile.display(),
        everything().display()
    );
    stdio_config(
        sb,
        json!({"command": "sh", "args": ["-c", script], "auto_approve": ["echo"]}),
        json!({}),
    );
    pidfile
}

/// Waits until `pid` is gone or a zombie.
fn wait_dead(pid: i32) {
    for _ in 0..500 {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return,
            Ok(stat) if stat.split(") ").nth(1).is_some_and(|s| s.starts_with('Z')) => return,
            Ok(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
    panic!("process {pid} did not exit");
}

#[tokio::test]
async fn a_stdio_server_that_exits_mid_run_answers_not_running() {
    let sb = Sandbox::new();
    let pidfile = server_recording_its_pid(&sb);
    server_exits_mid_run(&sb, || {
        let pid: i32 = read(&pidfile).trim().parse().expect("pid");
        std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .expect("kill");
        wait_dead(pid);
    })
    .await;
}

/// `server-everything streamableHttp` on a free loopback port.
struct HttpServer {
    child: std::process::Child,
    url: String,
}

impl HttpServer {
    fn start() -> HttpServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let mut child = std::process::Command::new("node")
            .arg(everything())
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("node starts");
        for _ in 0..1000 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return HttpServer {
                    child,
                    url: format!("http://127.0.0.1:{port}/mcp"),
                };
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("server-everything did not listen on {port}");
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn http_config(sb: &Sandbox, url: &str) {
    sb.global_config(
        &json!({"mcp_servers": {"everything": {
            "url": url,
            "headers": {"X-Test-Token": "mcp-header-secret-0123456789"},
            "auto_approve": ["echo"]
        }}})
        .to_string(),
    );
}

#[tokio::test]
async fn over_streamable_http_list_call_and_a_server_that_exits() {
    let mut http = HttpServer::start();
    let sb = Sandbox::new();
    http_config(&sb, &http.url);

    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.args(["mcp", "list"]);
    let out = output(cmd).await;
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        stdout.starts_with("everything  http   running "),
        "{stdout}"
    );
    assert!(stdout.contains("everything__get-sum"), "{stdout}");

    let (out, requests) = echo_and_sum(&sb, true).await;
    assert_echo_and_sum(&out, &requests, true);

    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.args(["config"]);
    let out = output(cmd).await;
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(!stdout.contains("mcp-header-secret-0123456789"), "{stdout}");
    assert!(
        stdout.contains("mcp_servers.everything.headers.X-Test-Token"),
        "{stdout}"
    );

    server_exits_mid_run(&sb, || http.stop()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odek_serve_shares_one_server_between_runs_and_models_and_stops_it() {
    use crate::support::serve::Served;
    let sb = Sandbox::new();
    let pidfile = server_recording_its_pid(&sb);
    let model = ScriptedServer::start(vec![
        tools(&[("everything__echo", json!({"message": "via serve"}))]),
        text("one"),
        tools(&[("everything__echo", json!({"message": "other model"}))]),
        text("two"),
    ])
    .await;
    let mut served = Served::start(&sb, &model.base_url(), &[]);
    let listed = served.get("/api/tools").await.json;
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"everything__echo"), "{names:?}");
    assert!(names.contains(&"shell"), "{names:?}");

    for (body, expected) in [
        (json!({"content": "echo"}), "Echo: via serve"),
        (
            json!({"content": "echo", "model": "other"}),
            "Echo: other model",
        ),
    ] {
        let started = served.post("/api/prompt", body).await;
        assert_eq!(started.status, 202, "{}", started.text);
        let run = served
            .wait_run(started.json["run_id"].as_str().expect("run id"))
            .await;
        assert_eq!(run["status"], "completed", "{run}");
        let requests = model.requests();
        let last = requests.last().expect("a request");
        assert_eq!(unwrap_untrusted(&tool_results(last)[0]), expected);
    }
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(
        requests[0]["tools"], requests[2]["tools"],
        "every turn offers byte-identical tool definitions (the prompt-cache prefix)"
    );
    let pids: Vec<i32> = read(&pidfile)
        .lines()
        .map(|l| l.trim().parse().expect("pid"))
        .collect();
    assert_eq!(
        pids.len(),
        1,
        "one server process for both runs and both models"
    );
    assert_eq!(served.terminate(), Some(0), "{}", served.stderr());
    wait_dead(pids[0]);
}

#[tokio::test]
async fn a_call_that_outlasts_timeout_seconds_is_cancelled_and_the_server_stays_usable() {
    let sb = Sandbox::new();
    let mut server = node_server(&["stdio"]);
    server["timeout_seconds"] = json!(1);
    server["auto_approve"] = json!(["echo", "trigger-long-running-operation"]);
    stdio_config(&sb, server, json!({}));
    let model = ScriptedServer::start(vec![
        tools(&[(
            "everything__trigger-long-running-operation",
            json!({"duration": 20, "steps": 20}),
        )]),
        tools(&[("everything__echo", json!({"message": "still here"}))]),
        text("done"),
    ])
    .await;
    let mut cmd = sb.odek(&model.base_url());
    cmd.args(["run", "--ephemeral", "slow"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let requests = model.requests();
    let results = tool_results(&requests[2]);
    assert_eq!(
        unwrap_untrusted(&results[0]),
        "error: mcp server everything: trigger-long-running-operation gave no answer within 1s (timeout_seconds)"
    );
    assert_eq!(unwrap_untrusted(&results[1]), "Echo: still here");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(r#"everything__trigger-long-running-operation {"duration":20,"steps":20}"#),
        "the tool line shows the arguments: {stderr}"
    );
}

#[tokio::test]
async fn ctrl_c_during_a_run_ends_it_and_its_servers() {
    let sb = Sandbox::new();
    let pidfile = server_recording_its_pid(&sb);
    let hold = Hold::new();
    let model =
        ScriptedServer::start(vec![Reply::Held(hold.clone(), Box::new(text("late")))]).await;
    let mut cmd = sb.odek(&model.base_url());
    cmd.args(["run", "--ephemeral", "wait"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().expect("spawn");
    hold.wait_reached().await;
    let server_pid: i32 = read(&pidfile).trim().parse().expect("pid");
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().expect("wait"))
        .await
        .expect("join");
    hold.release();
    assert_eq!(out.status.code(), Some(130), "{}", show(&out));
    wait_dead(server_pid);
}

#[tokio::test]
async fn odek_serve_failing_after_the_servers_started_leaves_none_behind() {
    let sb = Sandbox::new();
    let pidfile = server_recording_its_pid(&sb);
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let addr = taken.local_addr().expect("addr").to_string();
    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.args(["serve", "--addr", &addr]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot listen on"),
        "{}",
        show(&out)
    );
    let server_pid: i32 = read(&pidfile).trim().parse().expect("pid");
    wait_dead(server_pid);
}

/// Answers every connection on a fresh loopback port with `answer`; counts connections.
fn raw_http_server(answer: String) -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = listener.local_addr().expect("addr").port();
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut buf = [0u8; 8192];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    (port, seen)
}

#[tokio::test]
async fn configured_headers_never_follow_a_redirect_to_another_server() {
    let (elsewhere, reached) = raw_http_server(
        "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".into(),
    );
    let (port, _) = raw_http_server(format!(
        "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:{elsewhere}/mcp\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    ));
    let sb = Sandbox::new();
    http_config(&sb, &format!("http://127.0.0.1:{port}/mcp"));
    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.args(["mcp", "list"]);
    let out = output(cmd).await;
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(stdout.starts_with("everything  http   failed "), "{stdout}");
    assert_eq!(
        reached.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the redirect to another port was not followed"
    );
}
