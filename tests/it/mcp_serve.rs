//! `odek mcp serve` driven by a real MCP client from another ecosystem: the official Python
//! SDK (tests/mcp/client.py, pinned by tests/mcp/requirements.txt, installed by
//! `make mcp-py-deps`), over stdio — and `odek serve --mcp` over streamable HTTP.

use serde_json::{Value, json};

use crate::support::*;

/// Runs the Python client against `odek mcp serve ARGS` with these calls; its report.
async fn client(sb: &Sandbox, server: &ScriptedServer, args: &[&str], calls: Value) -> Value {
    // The client starts odek itself: the program becomes its first argument.
    let mut target = vec![odek_binary().into_os_string(), "mcp".into(), "serve".into()];
    target.extend(args.iter().map(Into::into));
    run_client(sb, server, &target, &[], calls).await
}

/// Runs the Python client against `odek serve --mcp` at `url` with the token.
async fn http_client(
    sb: &Sandbox,
    server: &ScriptedServer,
    url: &str,
    token: &str,
    calls: Value,
) -> Value {
    run_client(
        sb,
        server,
        &[url.into()],
        &[("ODEK_MCP_TOKEN", token)],
        calls,
    )
    .await
}

async fn run_client(
    sb: &Sandbox,
    server: &ScriptedServer,
    target: &[std::ffi::OsString],
    env: &[(&str, &str)],
    calls: Value,
) -> Value {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/client.py");
    let mut args = vec![script.into_os_string()];
    args.extend(target.iter().cloned());
    let python = venv_python("the MCP Python SDK is");
    run_external_client(sb, &server.base_url(), python, &args, env, &calls).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_lists_and_calls_odeks_tools_under_its_policy_and_runs_a_task() {
    let server = ScriptedServer::start(vec![text("The notes say: ship it.")]).await;
    let sb = Sandbox::new();
    std::fs::write(sb.work.join("notes.md"), "ship it\n").expect("notes");
    let maker = "python3 -c \"open('made.txt','w').write('ok')\"";
    let report = client(
        &sb,
        &server,
        &[],
        json!([
            {"name": "read_file", "arguments": {"path": "notes.md"}, "repeat": 20},
            {"name": "write_file", "arguments": {"path": "out.txt", "content": "written"}},
            {"name": "shell", "arguments": {"command": maker}},
            {"name": "read_file", "arguments": {"path": "missing.md"}},
            {"name": "run_task", "arguments": {"task": "what do the notes say?"}},
        ]),
    )
    .await;
    assert_eq!(report["server"], "odek");
    let tools: Vec<&str> = report["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for wanted in [
        "read_file",
        "write_file",
        "shell",
        "search_files",
        "run_task",
    ] {
        assert!(tools.contains(&wanted), "{wanted} missing: {tools:?}");
    }
    for absent in ["plan", "clarify", "delegate_tasks", "memory"] {
        assert!(!tools.contains(&absent), "{absent} offered: {tools:?}");
    }
    assert_eq!(report["schemas"]["read_file"]["type"], "object");
    let results = report["results"].as_array().expect("results");
    let first = &results[0];
    assert_eq!(first["is_error"], false, "{first}");
    assert!(unwrap_untrusted(first["text"].as_str().unwrap_or_default()).contains("ship it"));
    assert_eq!(results[1]["is_error"], false, "{}", results[1]);
    assert_eq!(read(sb.work.join("out.txt")), "written");
    // Code execution would ask; there is nobody to ask.
    let shell = &results[2];
    assert_eq!(shell["is_error"], true, "{shell}");
    assert!(
        shell["text"]
            .as_str()
            .unwrap_or_default()
            .contains("code_execution"),
        "{shell}"
    );
    assert!(!sb.work.join("made.txt").exists(), "the denied command ran");
    assert_eq!(results[3]["is_error"], true);
    let task = &results[4];
    assert_eq!(task["is_error"], false, "{task}");
    assert_eq!(task["text"], "The notes say: ship it.");
    // The task's turn is an odek session of origin "mcp".
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "only run_task calls the model");
    let index = read(sb.home.join("sessions/index.json"));
    assert!(index.contains("\"mcp\""), "{index}");
    eprintln!(
        "odek mcp serve: read_file through the Python SDK, median of 20: {} ms",
        first["ms"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_lets_a_class_run_and_no_run_task_offers_tools_only() {
    let server = ScriptedServer::start(vec![]).await;
    let sb = Sandbox::new();
    let maker = "python3 -c \"open('made.txt','w').write('ok')\"";
    let report = client(
        &sb,
        &server,
        &["--allow", "code_execution", "--no-run-task"],
        json!([
            {"name": "shell", "arguments": {"command": maker}},
            {"name": "run_task", "arguments": {"task": "anything"}},
        ]),
    )
    .await;
    let tools = report["tools"].as_array().expect("tools");
    assert!(!tools.iter().any(|t| t == "run_task"), "{tools:?}");
    let results = report["results"].as_array().expect("results");
    assert_eq!(results[0]["is_error"], false, "{}", results[0]);
    assert_eq!(read(sb.work.join("made.txt")), "ok");
    // Not offered: a protocol error, as MCP has it for an unknown tool.
    assert!(
        results[1]["protocol_error"]
            .as_str()
            .unwrap_or_default()
            .contains("no tool named run_task"),
        "{}",
        results[1]
    );
    assert!(server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odek_serve_offers_the_same_server_over_streamable_http_under_its_token() {
    use crate::support::serve::Served;
    let server = ScriptedServer::start(vec![text("The notes say: ship it.")]).await;
    let sb = Sandbox::new();
    std::fs::write(sb.work.join("notes.md"), "ship it\n").expect("notes");
    let served = Served::start(&sb, &server.base_url(), &["--mcp"]);
    // The MCP address is announced with the others (the lines after the token URL).
    for _ in 0..200 {
        if served.stderr().contains("Stop with Ctrl-C") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(
        served.stderr().contains("/api/mcp ("),
        "the MCP address is announced: {}",
        served.stderr()
    );
    let url = format!("{}/api/mcp", served.base);
    let maker = "python3 -c \"open('made.txt','w').write('ok')\"";
    let report = http_client(
        &sb,
        &server,
        &url,
        &served.token,
        json!([
            {"name": "read_file", "arguments": {"path": "notes.md"}, "repeat": 20},
            {"name": "shell", "arguments": {"command": maker}},
            {"name": "run_task", "arguments": {"task": "what do the notes say?"}},
        ]),
    )
    .await;
    assert_eq!(report["server"], "odek");
    let tools = report["tools"].as_array().expect("tools");
    for wanted in ["read_file", "shell", "run_task"] {
        assert!(tools.iter().any(|t| t == wanted), "{wanted}: {tools:?}");
    }
    assert!(!tools.iter().any(|t| t == "clarify"), "{tools:?}");
    let results = report["results"].as_array().expect("results");
    assert!(unwrap_untrusted(results[0]["text"].as_str().unwrap_or_default()).contains("ship it"));
    assert_eq!(
        results[1]["is_error"], true,
        "nobody to ask: {}",
        results[1]
    );
    assert!(!sb.work.join("made.txt").exists(), "the denied command ran");
    assert_eq!(
        results[2]["text"], "The notes say: ship it.",
        "{}",
        results[2]
    );
    eprintln!(
        "odek serve --mcp: read_file through the Python SDK over HTTP, median of 20: {} ms",
        results[0]["ms"]
    );

    // Without the token, or from another origin, nothing reaches the server.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let http = reqwest::Client::new();
    let bare = http
        .post(&url)
        .header("Accept", "application/json, text/event-stream")
        .json(&init)
        .send()
        .await
        .expect("post");
    assert_eq!(bare.status(), 401);
    let foreign = http
        .post(&url)
        .bearer_auth(&served.token)
        .header("Origin", "https://evil.example")
        .header("Accept", "application/json, text/event-stream")
        .json(&init)
        .send()
        .await
        .expect("post");
    assert_eq!(foreign.status(), 403);
    let ok = http
        .post(&url)
        .bearer_auth(&served.token)
        .header("Accept", "application/json, text/event-stream")
        .json(&init)
        .send()
        .await
        .expect("post");
    assert_eq!(ok.status(), 200);
    // Stateless: no stream to open, no session to end — JSON errors like every route.
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let refused = http
            .request(method.clone(), &url)
            .bearer_auth(&served.token)
            .send()
            .await
            .expect("request");
        assert_eq!(refused.status(), 405, "{method}");
        let body: Value = refused.json().await.expect("a JSON error");
        assert_eq!(
            body["error"],
            format!("{method} is not allowed on /api/mcp"),
            "{body}"
        );
    }
    drop(served);

    // --mcp-allow lets a class run without asking, as --allow does over stdio.
    let allowing = Served::start(
        &sb,
        &server.base_url(),
        &["--mcp", "--mcp-allow", "code_execution"],
    );
    let report = http_client(
        &sb,
        &server,
        &format!("{}/api/mcp", allowing.base),
        &allowing.token,
        json!([{"name": "shell", "arguments": {"command": maker}}]),
    )
    .await;
    assert_eq!(report["results"][0]["is_error"], false, "{report}");
    assert_eq!(read(sb.work.join("made.txt")), "ok");
    drop(allowing);

    // Without --mcp there is no such endpoint.
    let plain = Served::start(&sb, &server.base_url(), &[]);
    let missing = http
        .post(format!("{}/api/mcp", plain.base))
        .bearer_auth(&plain.token)
        .json(&init)
        .send()
        .await
        .expect("post");
    assert_eq!(missing.status(), 404);
}
