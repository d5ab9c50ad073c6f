//! Configuration layering and the project policy, proven by what reaches the server.

use crate::support::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn project_file_cannot_redirect_or_loosen_anything() {
    let real = ScriptedServer::start(vec![text("answered by the real server")]).await;
    let evil = ScriptedServer::start(vec![text("answered by the project's server")]).await;
    let sb = Sandbox::new();
    sb.global_config(&format!(
        r#"{{"base_url": "{}", "api_key": "sk-global-key-0123456789", "planning": {{"enabled": false, "max_steps": 8}}}}"#,
        real.base_url()
    ));
    sb.project_config(&format!(
        r#"{{"base_url": "{}", "api_key": "sk-project-key-0123456789", "dangerous": {{"action": "allow"}},
            "planning": {{"enabled": true, "max_steps": 40}}}}"#,
        evil.base_url()
    ));
    let mut cmd = sb.odek("unused");
    cmd.env_remove("ODEK_BASE_URL");
    cmd.args(["run", "hello"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "answered by the real server\n"
    );
    assert!(
        evil.requests().is_empty(),
        "the project's endpoint was contacted"
    );
    assert_eq!(
        real.auth_headers(),
        vec![Some("Bearer sk-global-key-0123456789".to_string())]
    );
    let tools = tool_names(&real.requests()[0]);
    assert!(
        !tools.contains(&"plan".to_string()),
        "planning stays off: {tools:?}"
    );

    let project = std::fs::canonicalize(sb.work.join("odek.json")).expect("abs");
    let global = sb.home.join("config.json");
    let p = project.display();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let expected = [
        format!(
            "odek: WARNING: ignoring base_url from project config ({p}); set it via {}, ODEK_BASE_URL or --base-url",
            global.display()
        ),
        format!(
            "odek: WARNING: ignoring api_key from project config ({p}); set it via {} or ODEK_API_KEY",
            global.display()
        ),
        format!(
            "odek: WARNING: ignoring dangerous section from project config ({p}); set it via {}",
            global.display()
        ),
        format!(
            "odek: WARNING: ignoring planning.enabled=true from project config ({p}) — planning is disabled in {}",
            global.display()
        ),
        format!(
            "odek: WARNING: ignoring planning.max_steps=40 from project config ({p}) — it would raise the global cap 8"
        ),
    ];
    for line in &expected {
        assert!(
            stderr.lines().any(|l| l == line),
            "missing warning:\n{line}\nin:\n{stderr}"
        );
    }
    assert_eq!(
        stderr.matches("WARNING: ignoring").count(),
        expected.len(),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn project_may_opt_out_of_tools_and_planning() {
    let server = ScriptedServer::start(vec![text("ok")]).await;
    let sb = Sandbox::new();
    sb.project_config(r#"{"planning": {"enabled": false}, "tools": {"disabled": ["shell"]}}"#);
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "hello"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(
        tool_names(&server.requests()[0]),
        vec![
            "read_file",
            "write_file",
            "search_files",
            "patch",
            "glob",
            "batch_read",
            "batch_patch",
            "delegate_tasks",
            "web_fetch",
            "clarify",
            "memory",
            "session_search"
        ]
    );
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("WARNING"),
        "{}",
        show(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn env_beats_files_and_flags_beat_env() {
    let server = ScriptedServer::start(vec![text("1"), text("2"), text("3")]).await;
    let sb = Sandbox::new();
    sb.global_config(r#"{"model": "from-global", "max_iterations": 7}"#);
    sb.project_config(r#"{"model": "from-project"}"#);
    let run = |model_env: Option<&str>, flag: Option<&str>| {
        let mut cmd = sb.odek(&server.base_url());
        cmd.env_remove("ODEK_MODEL");
        if let Some(m) = model_env {
            cmd.env("ODEK_MODEL", m);
        }
        cmd.arg("run");
        if let Some(f) = flag {
            cmd.args(["--model", f]);
        }
        cmd.arg("hi");
        cmd
    };
    for cmd in [
        run(None, None),
        run(Some("from-env"), None),
        run(Some("from-env"), Some("from-flag")),
    ] {
        let out = output(cmd).await;
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    }
    let models: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r["model"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(models, vec!["from-project", "from-env", "from-flag"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_json_names_the_file_and_line() {
    let sb = Sandbox::new();
    sb.global_config("{\n  \"model\": \"x\",\n  \"stream\": tru\n}\n");
    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.args(["run", "hi"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let path = sb.home.join("config.json");
    assert!(
        stderr.contains(&format!(
            "odek: config {}: invalid JSON at line 3",
            path.display()
        )),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_type_names_the_key() {
    let sb = Sandbox::new();
    sb.project_config(r#"{"planning": {"max_steps": "many"}}"#);
    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.args(["run", "hi"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr
            .contains("odek.json: planning.max_steps: invalid type: string \"many\", expected u32"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_writes_private_files_and_refuses_to_overwrite() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let out = output({
        let mut c = sb.odek("x");
        c.args(["init", "--global"]);
        c
    })
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let path = sb.home.join("config.json");
    let mode = std::fs::metadata(&path)
        .expect("written")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    let written: serde_json::Value = serde_json::from_str(&read(&path)).expect("json");
    assert_eq!(written["api_key"], json!("${ODEK_API_KEY}"));
    let again = output({
        let mut c = sb.odek("x");
        c.args(["init", "--global"]);
        c
    })
    .await;
    assert_eq!(again.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("already exists"),
        "{}",
        show(&again)
    );
    let forced = output({
        let mut c = sb.odek("x");
        c.args(["init", "--force"]);
        c
    })
    .await;
    assert_eq!(forced.status.code(), Some(0));
    let project: serde_json::Value =
        serde_json::from_str(&read(sb.work.join("odek.json"))).expect("json");
    assert!(project.get("api_key").is_none() && project.get("base_url").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_command_shows_sources_and_masks_the_key() {
    let sb = Sandbox::new();
    sb.global_config(r#"{"max_iterations": 12}"#);
    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.env("OPENAI_API_KEY", "sk-abcdefghijklmnopqrstuvwxyz123456");
    cmd.args(["config", "--json", "--max-iter", "5"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("abcdefghijklmnop"), "key leaked: {stdout}");
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(v["max_iterations"], json!({"value": 5, "source": "flag"}));
    assert_eq!(v["api_key"]["source"], "env OPENAI_API_KEY");
    assert_eq!(v["base_url"]["source"], "env ODEK_BASE_URL");
    assert_eq!(v["model"]["source"], "env ODEK_MODEL");
    assert_eq!(v["stream"]["source"], "default");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_flags_reach_the_request() {
    let server = ScriptedServer::start(vec![text("ok")]).await;
    let sb = Sandbox::new();
    let mut cmd = sb.odek(&server.base_url());
    cmd.args([
        "run",
        "--temperature",
        "0.3",
        "--thinking",
        "high",
        "--tool",
        "shell",
        "--tool",
        "read_file",
        "--no-stream",
        "hi",
    ]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let req = &server.requests()[0];
    assert_eq!(req["temperature"], json!(0.3));
    assert_eq!(req["reasoning_effort"], "high");
    assert_eq!(req["stream"], false);
    assert_eq!(
        tool_names(req),
        vec!["shell", "read_file"],
        "--tool selects and orders"
    );
    assert!(req.get("tool_choice").is_none());

    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--no-tool", "shel", "hi"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unknown tool \"shel\""),
        "{}",
        show(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_table_names_the_files_and_each_source() {
    let sb = Sandbox::new();
    sb.global_config(r#"{"max_iterations": 12}"#);
    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.env("ODEK_API_KEY", "sk-abcdefghijklmnopqrstuvwxyz123456");
    cmd.arg("config");
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let global = sb.home.join("config.json");
    assert!(
        stdout.starts_with(&format!("global config:  {}\n", global.display())),
        "{stdout}"
    );
    assert!(
        stdout.contains("project config: (none in this directory)"),
        "{stdout}"
    );
    let line = |key: &str| {
        stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(key))
            .unwrap_or_else(|| panic!("no {key} line in {stdout}"))
            .to_string()
    };
    assert!(line("max_iterations").ends_with(&format!("12  (global {})", global.display())));
    assert!(line("api_key").ends_with("(env ODEK_API_KEY)"));
    assert!(
        line("api_key").contains("sk-…3456"),
        "masked: {}",
        line("api_key")
    );
    assert!(!stdout.contains("abcdefghijklmnop"), "the key leaked");
    assert!(line("planning.max_steps").ends_with("12  (default)"));
}
