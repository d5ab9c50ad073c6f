//! Clients from other ecosystems (the ACP TypeScript SDK, the MCP Python SDK) run against
//! odek: one runner that feeds a client its script and reads back its report.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::Sandbox;

/// The Python of the test virtual environment, which holds the official SDKs (MCP, OpenAI,
/// Anthropic); `what` names the one the caller needs, for the message when it is missing.
pub fn venv_python(what: &str) -> PathBuf {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/.venv/bin/python");
    assert!(
        venv.exists(),
        "{what} not installed: run `make mcp-py-deps`"
    );
    venv
}

/// Runs `program` with `args` in the sandbox's work tree, with the environment odek gets
/// there for `base_url` plus `env`, `input` as JSON on its standard input; the JSON report it
/// prints. Fails the test when the client fails or prints no report.
pub async fn run_external_client(
    sb: &Sandbox,
    base_url: &str,
    program: impl AsRef<std::ffi::OsStr>,
    args: &[OsString],
    env: &[(&str, &str)],
    input: &Value,
) -> Value {
    let odek = sb.odek(base_url);
    let mut client = std::process::Command::new(program);
    client
        .env_clear()
        .envs(
            odek.get_envs()
                .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned()))),
        )
        .envs(env.iter().copied())
        .current_dir(&sb.work)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = client.spawn().expect("the client starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.to_string().as_bytes())
        .expect("the client reads its script");
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .expect("join")
        .expect("the client ran");
    assert!(
        out.status.success(),
        "the client failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not the client's report ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}
