//! The sandbox where the system offers none, through the real binary: one warning line at
//! start, the status in `odek config`, and with `sandbox_required` shell commands, their
//! background jobs and a project's hooks refused — never run unsandboxed.
//!
//! This machine's kernel has Landlock, so the binary is told it has none with its test
//! seam, `ODEK_TEST_SANDBOX_UNAVAILABLE`.

use serde_json::{Value, json};

use crate::support::*;

const SEAM: &str = "ODEK_TEST_SANDBOX_UNAVAILABLE";
const ALLOW_ALL: &str = r#"{"dangerous": {"action": "allow"}}"#;
const REQUIRED: &str = r#"{"dangerous": {"action": "allow"}, "sandbox_required": true}"#;

/// odek's own lines of `text` that mention the seam (each sandbox warning does; a refused
/// tool call's line on the terminal is the tool's).
fn seam_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.starts_with("odek:") && l.contains(SEAM))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_sandbox_that_is_unavailable_refuses_commands_and_jobs_after_one_warning() {
    let sb = Sandbox::new();
    sb.global_config(REQUIRED);
    let server = ScriptedServer::start(vec![
        tools(&[("shell", json!({"command": "echo x > inside.txt"}))]),
        tools(&[(
            "shell",
            json!({"command": "echo y > job.txt", "background": true}),
        )]),
        text("nothing ran"),
    ])
    .await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.env(SEAM, "1").args(["run", "write a file"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let err = stderr(&out);
    let warnings = seam_lines(&err);
    assert_eq!(warnings.len(), 1, "one warning line:\n{err}");
    assert!(
        warnings[0].starts_with("odek: warning: ")
            && warnings[0].contains("shell commands will not run: sandbox_required is set"),
        "{err}"
    );
    assert!(!err.contains("run without the sandbox"), "{err}");

    let reqs = server.requests();
    for (request, what) in [(&reqs[1], "command"), (&reqs[2], "background job")] {
        let result = last_result(request);
        assert!(
            result.contains("the sandbox is required (sandbox_required) but not available here")
                && result.contains(SEAM)
                && result.contains("turn sandbox_required off")
                && result.contains("was not run"),
            "the {what}'s result: {result}"
        );
    }
    assert!(!sb.work.join("inside.txt").exists(), "the command ran");
    assert!(!sb.work.join("job.txt").exists(), "the job ran");
    // No command of the session ran outside the sandbox: `continue` keeps it that way.
    assert_eq!(only_session(&sb)["sandbox"], json!(true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_requirement_commands_run_unsandboxed_after_one_warning() {
    let sb = Sandbox::new();
    sb.global_config(ALLOW_ALL);
    let server = ScriptedServer::start(vec![
        tools(&[("shell", json!({"command": "echo x > inside.txt"}))]),
        text("wrote"),
    ])
    .await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.env(SEAM, "1")
        .args(["run", "--ephemeral", "write a file"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let err = stderr(&out);
    let warnings = seam_lines(&err);
    assert_eq!(warnings.len(), 1, "one warning line:\n{err}");
    assert!(
        warnings[0].contains("so shell commands run without the sandbox"),
        "{err}"
    );
    assert_eq!(read(sb.work.join("inside.txt")), "x\n");
}

/// A project's hook is refused like a command: it does not run, and its tool call is not
/// let through on its failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_sandbox_that_is_unavailable_refuses_a_projects_hook() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    sb.global_config(REQUIRED);
    std::fs::create_dir_all(sb.work.join(".odek")).expect("mkdir");
    std::fs::write(
        sb.work.join(".odek/hooks.json"),
        r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}]}}"#,
    )
    .expect("hooks");
    let guard = sb.work.join("guard.sh");
    std::fs::write(&guard, "#!/bin/sh\necho ran > hook.log\nexit 0\n").expect("guard");
    std::fs::set_permissions(&guard, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let mut trust = sb.odek("http://127.0.0.1:9/v1");
    trust.args(["hooks", "trust"]);
    let out = output(trust).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));

    let server = ScriptedServer::start(vec![
        tools(&[("shell", json!({"command": "echo x > inside.txt"}))]),
        text("done"),
    ])
    .await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.env(SEAM, "1").args(["run", "--ephemeral", "go"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(!sb.work.join("hook.log").exists(), "the project's hook ran");
    assert!(!sb.work.join("inside.txt").exists(), "the command ran");
    let result = last_result(&server.requests()[1]);
    assert!(result.contains("sandbox_required"), "{result}");
}

/// `odek config`'s `sandbox:` line, and the stderr it printed.
async fn config_line(sb: &Sandbox, env: &[(&str, &str)], args: &[&str]) -> (String, String) {
    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.arg("config").args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = stdout
        .lines()
        .find(|l| l.starts_with("sandbox:"))
        .unwrap_or_else(|| panic!("no sandbox line in\n{stdout}"))
        .to_string();
    (line, stderr(&out))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odek_config_says_whether_the_sandbox_is_on_off_or_unavailable_and_what_then() {
    let sb = Sandbox::new();
    let (line, _) = config_line(&sb, &[], &[]).await;
    if std::env::var_os("ODEK_REQUIRE_LANDLOCK").is_some() || !line.contains("unavailable") {
        assert!(
            line.starts_with("sandbox:        on (Landlock ABI "),
            "{line}"
        );
    }

    let (line, err) = config_line(&sb, &[(SEAM, "1")], &[]).await;
    assert_eq!(
        line,
        format!(
            "sandbox:        unavailable: {SEAM} is set (a test seam that makes the sandbox unavailable); shell commands run without it (sandbox_required would refuse them)"
        )
    );
    assert!(seam_lines(&err).is_empty(), "the line says it once: {err}");

    let (line, _) = config_line(&sb, &[(SEAM, "1"), ("ODEK_SANDBOX_REQUIRED", "true")], &[]).await;
    assert!(
        line.ends_with("shell commands are refused (sandbox_required)"),
        "{line}"
    );

    let (line, _) = config_line(&sb, &[(SEAM, "1")], &["--no-sandbox"]).await;
    assert_eq!(line, "sandbox:        off (sandbox is false)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_may_require_the_sandbox_but_never_lift_the_requirement() {
    let sb = Sandbox::new();
    sb.project_config(r#"{"sandbox_required": true}"#);
    let rows = config_json(&sb).await;
    assert_eq!(rows["sandbox_required"]["value"], json!(true));
    let source = rows["sandbox_required"]["source"]
        .as_str()
        .unwrap_or_default();
    assert!(source.starts_with("project "), "{source}");

    sb.global_config(r#"{"sandbox_required": true}"#);
    sb.project_config(r#"{"sandbox_required": false}"#);
    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.args(["config", "--json"]);
    let out = output(cmd).await;
    let err = stderr(&out);
    assert!(
        err.contains("ignoring sandbox_required=false (a project may only require the sandbox)"),
        "{err}"
    );
    let rows: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(rows["sandbox_required"]["value"], json!(true));
}

async fn config_json(sb: &Sandbox) -> Value {
    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.args(["config", "--json"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    serde_json::from_slice(&out.stdout).expect("JSON")
}
