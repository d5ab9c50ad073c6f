//! The smoke subset: a few short end-to-end flows that CI also runs for another architecture,
//! the tests and odek under an emulator (docs/PLATFORMS.md):
//!
//! ```text
//! ODEK_TEST_RUNNER=qemu-aarch64-static \
//! CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_RUNNER=qemu-aarch64-static \
//!   cargo-zigbuild test --locked --target aarch64-unknown-linux-musl --test it smoke::
//! ```
//!
//! They cover what differs between machines: the binary built for the target, HTTP to the
//! model, files and sessions on disk (SQLite's index included), the shell (the host's
//! `/bin/sh`) in its own process group — stopped with it when a budget runs out — and the
//! settings' layers. Here they run with the rest of the suite.

use crate::support::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_writes_a_file_reads_it_through_the_shell_and_its_session_goes_on() {
    let server = ScriptedServer::start(vec![
        tools(&[(
            "write_file",
            json!({"path": "notes.txt", "content": "alpha\nbeta\n"}),
        )]),
        tools(&[(
            "shell",
            json!({"command": "cat notes.txt; echo $((6 * 7))"}),
        )]),
        text("two lines"),
        text("still two"),
    ])
    .await;
    let sb = Sandbox::new();
    let mut run = sb.odek(&server.base_url());
    run.args(["run", "count", "the", "lines"]);
    let out = output(run).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "two lines\n");
    assert_eq!(read(sb.work.join("notes.txt")), "alpha\nbeta\n");
    let results: Vec<String> = tool_results(&server.requests()[2])
        .iter()
        .map(|r| unwrap_untrusted(r))
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results[0].starts_with("wrote 11 bytes to notes.txt"),
        "{results:?}"
    );
    assert_eq!(results[1], "alpha\nbeta\n42\n[exit code: 0]");

    let mut more = sb.odek(&server.base_url());
    more.args(["continue", "and", "now"]);
    let out = output(more).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "still two\n");
    let again = &server.requests()[3];
    // The saved turn is sent again, its answer included, then the new message.
    let sent = messages(again);
    assert!(sent.iter().any(|m| m["content"] == "two lines"), "{sent:?}");
    assert_eq!(last_user_text(again), "and now");

    let mut list = sb.odek(&server.base_url());
    list.args(["session", "list"]);
    let out = output(list).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(listed.contains("count the lines"), "{listed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_that_runs_out_stops_the_command_and_its_group() {
    let server = ScriptedServer::start(vec![
        tools(&[("shell", json!({"command": "sleep 61.5 & sleep 61.6; wait"}))]),
        text("never"),
    ])
    .await;
    let sb = Sandbox::new();
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--max-runtime", "1", "wait"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("execution budget exceeded: runtime"),
        "{stderr}"
    );
    // Both sleeps were in the command's group: neither outlives odek.
    processes_gone("sleep 61.").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_names_its_target_and_the_settings_their_layers() {
    let sb = Sandbox::new();
    let mut version = sb.odek("http://127.0.0.1:9/v1");
    version.arg("version");
    let out = output(version).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let line = String::from_utf8_lossy(&out.stdout);
    // Built for the machine these tests were built for (under the emulator: its architecture).
    let target = format!("({}-", std::env::consts::ARCH);
    assert!(line.contains(&target), "{line}");

    sb.global_config(r#"{"max_iterations": 12, "stream": false}"#);
    sb.project_config(r#"{"max_iterations": 9}"#);
    let mut config = sb.odek("http://127.0.0.1:9/v1");
    config.args(["config", "--json", "--max-iter", "5"]);
    let out = output(config).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let settings: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        settings["max_iterations"],
        json!({"value": 5, "source": "flag"})
    );
    assert_eq!(settings["stream"]["value"], json!(false));
    assert!(
        settings["stream"]["source"]
            .as_str()
            .is_some_and(|source| source.starts_with("global")),
        "{}",
        settings["stream"]
    );
    assert_eq!(settings["base_url"]["source"], "env ODEK_BASE_URL");
}
