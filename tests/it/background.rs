//! Background jobs through the binary: an HTTP server started by the model, read by a
//! later call and stopped; a job that ends and its notice in the next request with a
//! `background_finished` event; the cap of four jobs; jobs stopped when the run ends and
//! when odek is killed outright.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::serve::Served;
use crate::support::*;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The result of the request's last tool call, as the model reads it (still wrapped).
fn last_wrapped_result(request: &Value) -> String {
    tool_results(request).pop().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_starts_a_server_reads_its_log_after_a_request_and_stops_it() {
    let sb = Sandbox::new();
    let port = free_port();
    let server_cmd = format!("python3 -u -m http.server {port} --bind 127.0.0.1");
    let fetch = format!(
        "python3 -c \"import time,urllib.request\nfor i in range(100):\n  try:\n    print('status', urllib.request.urlopen('http://127.0.0.1:{port}/').status); break\n  except Exception: time.sleep(0.05)\""
    );
    let server = ScriptedServer::start(vec![
        tools(&[("shell", json!({"command": server_cmd, "background": true}))]),
        tools(&[("shell", json!({"command": fetch}))]),
        tools(&[("background", json!({"action": "output", "id": 1}))]),
        tools(&[("background", json!({"action": "list"}))]),
        tools(&[("background", json!({"action": "stop", "id": 1}))]),
        text("Served and stopped."),
    ])
    .await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.args([
        "run",
        "--allow",
        "code_execution",
        "--events-jsonl",
        "-",
        "serve the folder",
    ]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let requests = server.requests();
    let started = &last_wrapped_result(&requests[1]);
    assert!(
        started.contains("Started background job 1"),
        "{started}\n{}",
        show(&out)
    );
    assert!(
        last_wrapped_result(&requests[2]).contains("status 200"),
        "{:?}",
        tool_results(&requests[2])
    );
    let log = unwrap_untrusted(&last_wrapped_result(&requests[3]));
    assert!(
        log.contains("job 1 · running for") && log.contains("\"GET / HTTP/1.1\" 200"),
        "{log}"
    );
    assert!(log.contains("bytes 0–"), "{log}");
    let listed = &last_wrapped_result(&requests[4]);
    assert!(
        listed.contains("job 1 · running for") && listed.contains("http.server"),
        "{listed}"
    );
    let stopped = &last_wrapped_result(&requests[5]);
    assert!(
        stopped.starts_with("Stopped. job 1 · stopped after"),
        "{stopped}"
    );
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
    let finished = events_of(&stdout(&out), "background_finished");
    assert_eq!(finished.len(), 1, "{}", show(&out));
    assert_eq!(finished[0]["data"]["status"], "stopped");
    assert_eq!(finished[0]["data"]["job"], 1);
    // The model is told once, in the request after the stop.
    let notices: Vec<String> = messages(&requests[5])
        .iter()
        .filter(|m| m["role"] == "system")
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .filter(|c| c.starts_with("[background]"))
        .collect();
    assert_eq!(notices.len(), 1, "{notices:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_ends_is_noticed_in_the_next_request_with_its_last_lines() {
    let sb = Sandbox::new();
    let server = ScriptedServer::start(vec![
        tools(&[(
            "shell",
            json!({"command": "sleep 0.4; echo compiling; echo 'error: missing semicolon'; exit 3", "background": true}),
        )]),
        tools(&[("shell", json!({"command": "sleep 1.5"}))]),
        text("The build failed."),
    ])
    .await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--events-jsonl", "-", "build it"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let requests = server.requests();
    assert!(
        !messages(&requests[1]).iter().any(|m| m["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("[background]"))),
        "not before it ended"
    );
    let notice = messages(&requests[2])
        .into_iter()
        .filter(|m| m["role"] == "system")
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .find(|c| c.starts_with("[background]"))
        .expect("a notice");
    assert!(
        notice.starts_with("[background] Job 1 (`sleep 0.4; echo compiling; echo 'error: missing semicolon'; exit 3`) exited with status 3 after"),
        "{notice}"
    );
    assert!(
        notice.contains("error: missing semicolon") && notice.contains("untrusted"),
        "{notice}"
    );
    let finished = events_of(&stdout(&out), "background_finished");
    assert_eq!(finished.len(), 1, "{}", show(&out));
    assert_eq!(finished[0]["data"]["exit_code"], 3);
    assert_eq!(finished[0]["data"]["status"], "exited with status 3");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_jobs_at_once_at_most_and_the_run_stops_them_as_it_ends() {
    let sb = Sandbox::new();
    let start = |n: u32| {
        (
            "shell",
            json!({"command": format!("sleep 47.{n}1"), "background": true}),
        )
    };
    let server = ScriptedServer::start(vec![
        tools(&[start(1), start(2), start(3), start(4), start(5)]),
        text("Four started."),
    ])
    .await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "start five"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let results = tool_results(&server.requests()[1]);
    assert_eq!(
        results
            .iter()
            .filter(|r| r.contains("Started background job"))
            .count(),
        4,
        "{results:?}"
    );
    assert!(
        results
            .iter()
            .any(|r| r
                .contains("4 background jobs are running, the most at once (background.max_jobs)")),
        "{results:?}"
    );
    // odek has exited: none of its jobs is left.
    processes_gone("sleep 47.").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odek_killed_outright_leaves_no_job_running() {
    let sb = Sandbox::new();
    let hold = Hold::new();
    let server = ScriptedServer::start(vec![
        tools(&[(
            "shell",
            json!({"command": "sleep 53.21 & sleep 53.22; wait", "background": true}),
        )]),
        Reply::Held(hold.clone(), Box::new(text("never sent"))),
    ])
    .await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "start and wait"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut odek = cmd.spawn().expect("odek starts");
    hold.wait_reached().await;
    assert_eq!(
        processes_with("sleep 53.2").len(),
        3,
        "the job and its two sleeps"
    );
    odek.kill().expect("SIGKILL");
    let _ = odek.wait();
    processes_gone("sleep 53.2").await;
    hold.release();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_served_run_shows_its_jobs_with_their_tail_and_cancelling_it_stops_them() {
    let sb = Sandbox::new();
    let hold = Hold::new();
    let server = ScriptedServer::start(vec![
        tools(&[(
            "shell",
            json!({"command": "echo 'listening on :5173'; sleep 59.31", "background": true}),
        )]),
        Reply::Held(hold.clone(), Box::new(text("never shown"))),
    ])
    .await;
    let served = Served::start(&sb, &server.base_url(), &[]);
    let started = served
        .post("/api/prompt", json!({"content": "start the dev server"}))
        .await;
    assert_eq!(started.status, 202, "{}", started.text);
    let run_id = started.json["run_id"].as_str().expect("run id").to_string();
    hold.wait_reached().await;
    let mut view = Value::Null;
    for _ in 0..2000 {
        view = served.get(&format!("/api/runs/{run_id}")).await.json;
        if view["jobs"][0]["tail"] == "listening on :5173" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let job = &view["jobs"][0];
    assert_eq!(job["id"], 1, "{view}");
    assert_eq!(job["status"], "running", "{view}");
    assert_eq!(job["tail"], "listening on :5173", "{view}");
    assert!(
        job["command"]
            .as_str()
            .is_some_and(|c| c.contains("sleep 59.31"))
    );
    let listed = served.get("/api/runs").await.json;
    assert_eq!(listed["runs"][0]["jobs"][0]["id"], 1, "{listed}");
    processes_running("sleep 59.31", 2).await; // sh and its sleep
    let cancel = served
        .post(&format!("/api/runs/{run_id}/cancel"), json!({}))
        .await;
    assert_eq!(cancel.status, 202, "{}", cancel.text);
    hold.release();
    assert_eq!(served.wait_run(&run_id).await["status"], "cancelled");
    processes_gone("sleep 59.31").await;
    let after = served.get(&format!("/api/runs/{run_id}")).await.json;
    assert!(after.get("jobs").is_none(), "{after}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odek_killed_outright_during_a_foreground_command_leaves_it_no_orphan() {
    let sb = Sandbox::new();
    let server = ScriptedServer::start(vec![
        tools(&[("shell", json!({"command": "sleep 73.1 & sleep 73.2; wait"}))]),
        text("never reached"),
    ])
    .await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--ephemeral", "wait a while"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut odek = cmd.spawn().expect("odek starts");
    processes_running("sleep 73.", 3).await; // sh and its two sleeps
    odek.kill().expect("SIGKILL");
    let _ = odek.wait();
    processes_gone("sleep 73.").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_at_an_offset_inside_a_secret_shows_none_of_it() {
    let sb = Sandbox::new();
    let token = "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5";
    // "key: " then the token: offset 25 falls in its middle.
    let server = ScriptedServer::start(vec![
        tools(&[(
            "shell",
            json!({"command": format!("printf 'key: {token}\\nend\\n'; touch job-wrote; sleep 30"), "background": true}),
        )]),
        tools(&[(
            "shell",
            json!({"command": "while [ ! -e job-wrote ]; do sleep 0.02; done; sleep 0.3"}),
        )]),
        tools(&[("background", json!({"action": "output", "id": 1, "offset": 25}))]),
        tools(&[("background", json!({"action": "stop", "id": 1}))]),
        text("done"),
    ])
    .await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "read the job"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let read = last_wrapped_result(&server.requests()[3]);
    assert!(read.contains("end"), "{read}");
    for half in [&token[..20], &token[20..]] {
        assert!(!read.contains(half), "a part of the secret in: {read}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_that_leave_their_group_do_not_outlive_odek_nor_hold_it() {
    const NEEDLES: [&str; 5] = ["301.37", "302.41", "303.53", "304.67", "305.71"];
    let sb = Sandbox::new();
    let server = ScriptedServer::start(vec![
        tools(&[
            ("shell", json!({"command": "setsid -f sleep 301.37; echo started"})),
            ("shell", json!({"command": "timeout 302.41 sleep 302.41 & echo started"})),
            (
                "shell",
                json!({"command": "setsid -f sleep 303.53; timeout 304.67 sleep 304.67 & sleep 305.71", "background": true}),
            ),
        ]),
        text("done"),
    ])
    .await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "start them"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut odek = cmd.spawn().expect("odek starts");
    // odek ends on its own: no reader waits for the pipes those processes hold (a hang is
    // caught here, not timed).
    let mut ended = None;
    for _ in 0..600 {
        if let Some(status) = odek.try_wait().expect("wait") {
            ended = Some(status);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A process killed as odek ended may take a moment to be scheduled and die on a loaded
    // machine (its command line stays readable until it exits): a leftover is one still
    // there after that moment, not one caught mid-death.
    // Only this test's sleeps: other tests running at the same time sleep 30 seconds too.
    let ours = || -> std::collections::BTreeSet<u32> {
        NEEDLES
            .iter()
            .flat_map(|n| processes_with(&format!("sleep {n}")))
            .collect()
    };
    let mut left = ours();
    for _ in 0..100 {
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        left = ours();
    }
    if ended.is_none() {
        let _ = odek.kill();
        let _ = odek.wait();
    }
    for needle in NEEDLES {
        for pid in processes_with(&format!("sleep {needle}")) {
            // SAFETY: a test's own stray sleep.
            #[allow(unsafe_code)]
            unsafe {
                libc::kill(i32::try_from(pid).expect("pid"), libc::SIGKILL);
            }
        }
    }
    assert_eq!(
        ended.map(|s| s.code()),
        Some(Some(0)),
        "odek did not end; left: {left:?}"
    );
    assert!(left.is_empty(), "left running after odek ended: {left:?}");
}
