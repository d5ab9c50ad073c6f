//! `odek serve` through the real binary over real HTTP, against the scripted model server:
//! auth, every endpoint's shape, the seed's plan view, runs with approvals and their live
//! events, busy sessions, bad input, rate limits and shutdown.

use std::time::Duration;

use crate::support::serve::{Served, SseReader, send};
use crate::support::*;
use reqwest::Method;
use serde_json::{Value, json};

fn session_file(sb: &Sandbox, id: &str) -> Vec<u8> {
    std::fs::read(sb.home.join("sessions").join(format!("{id}.json"))).expect("session file")
}

/// Posts a prompt and returns (run id, session id).
async fn prompt(served: &Served, body: Value) -> (String, String) {
    let started = served.post("/api/prompt", body).await;
    assert_eq!(started.status, 202, "{}", started.text);
    assert_eq!(started.json["status"], "running");
    (
        started.json["run_id"].as_str().expect("run id").to_string(),
        started.json["session_id"]
            .as_str()
            .expect("session id")
            .to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_needs_the_instance_token_as_header_or_bearer() {
    let sb = Sandbox::new();
    let served = Served::start(&sb, "http://127.0.0.1:9/v1", &[]);
    assert_eq!(served.token.len(), 64);
    let health = "/api/health";

    let none = send(served.bare(Method::GET, health)).await;
    assert_eq!(none.status, 401, "{}", none.text);
    assert!(
        none.json["error"]
            .as_str()
            .expect("json error")
            .contains("token")
    );
    assert_eq!(none.header("cache-control").as_deref(), Some("no-store"));
    let wrong = send(
        served
            .bare(Method::GET, health)
            .header("X-Odek-Token", "0".repeat(64)),
    )
    .await;
    assert_eq!(wrong.status, 401);

    let header = served.get(health).await;
    assert_eq!(header.status, 200, "{}", header.text);
    assert_eq!(header.json["status"], "ok");
    assert_eq!(header.header("cache-control").as_deref(), Some("no-store"));
    let bearer = send(served.bare(Method::GET, health).bearer_auth(&served.token)).await;
    assert_eq!(bearer.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_url_signs_the_browser_in_and_serves_the_page_under_the_csp() {
    let sb = Sandbox::new();
    let served = Served::start(&sb, "http://127.0.0.1:9/v1", &[]);
    assert_eq!(served.token.len(), 64);
    let health = "/api/health";
    // The token URL sets an HttpOnly SameSite=Strict cookie and sends the browser to `/`.
    let login = send(served.bare(Method::GET, &format!("/?token={}", served.token))).await;
    assert_eq!(login.status, 303);
    assert_eq!(login.header("location").as_deref(), Some("/"));
    let cookie = login.header("set-cookie").expect("cookie");
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().expect("pair").to_string();
    let with_cookie = send(served.bare(Method::GET, health).header("Cookie", &pair)).await;
    assert_eq!(with_cookie.status, 200);
    let page = send(served.bare(Method::GET, "/").header("Cookie", &pair)).await;
    assert_eq!(page.status, 200);
    assert!(
        page.header("content-security-policy")
            .expect("csp")
            .contains("script-src 'self'")
    );
    assert!(
        page.text
            .contains(r#"<script type="module" src="/js/main.js"></script>"#),
        "{}",
        page.text
    );
    // The page's files are embedded, typed and under the same policy; nothing else is served.
    for (path, kind) in [
        ("/js/main.js", "text/javascript; charset=utf-8"),
        ("/js/plan.js", "text/javascript; charset=utf-8"),
        ("/style.css", "text/css; charset=utf-8"),
        ("/favicon.svg", "image/svg+xml"),
    ] {
        let file = send(served.bare(Method::GET, path)).await;
        assert_eq!(file.status, 200, "{path}");
        assert_eq!(file.header("content-type").as_deref(), Some(kind), "{path}");
        assert!(file.header("content-security-policy").is_some(), "{path}");
        assert_eq!(
            file.header("x-content-type-options").as_deref(),
            Some("nosniff")
        );
    }
    for path in [
        "/js/nope.js",
        "/js/..%2F..%2FCargo.toml",
        "/js/../test/plan.test.js",
        "/package.json",
    ] {
        let missing = send(served.bare(Method::GET, path)).await;
        assert_eq!(missing.status, 404, "{path}: {}", missing.text);
    }
    let bad_login = send(served.bare(Method::GET, "/?token=nope")).await;
    assert_eq!(bad_login.status, 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_host_or_a_cross_origin_write_is_refused_even_with_the_token() {
    let sb = Sandbox::new();
    let served = Served::start(&sb, "http://127.0.0.1:9/v1", &[]);
    assert_eq!(served.token.len(), 64);
    let health = "/api/health";
    // A foreign Host (DNS rebinding) is refused even with the token.
    let foreign = send(
        served
            .request(Method::GET, health)
            .header("Host", "evil.example"),
    )
    .await;
    assert_eq!(foreign.status, 403, "{}", foreign.text);
    // State-changing requests from another origin are refused; the server's own pass.
    let body = json!({"name": "x"});
    let path = "/api/sessions/20260101-00000000000000000000000000000000";
    let cross = send(
        served
            .request(Method::POST, path)
            .header("Origin", "http://evil.example")
            .json(&body),
    )
    .await;
    assert_eq!(cross.status, 403, "{}", cross.text);
    let own = send(
        served
            .request(Method::POST, path)
            .header("Origin", format!("http://{}", served.addr))
            .json(&body),
    )
    .await;
    assert_eq!(own.status, 404, "{}", own.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cli_session_is_listed_read_and_its_plan_shown_over_http() {
    let server = ScriptedServer::start(vec![
        plan_create(&[("s1", "Scaffold the command"), ("s2", "Wire <b>flags</b>")]),
        plan_complete("s1"),
        text("all set"),
    ])
    .await;
    let sb = Sandbox::new();
    let id = first_session(&sb, &server, "build the thing").await;
    let served = Served::start(&sb, &server.base_url(), &[]);

    let list = served.get("/api/sessions").await;
    assert_eq!(list.status, 200, "{}", list.text);
    assert_eq!(
        (
            list.json["count"].clone(),
            list.json["offset"].clone(),
            list.json["limit"].clone(),
            list.json["query"].clone()
        ),
        (json!(1), json!(0), json!(50), json!(""))
    );
    let entry = &list.json["sessions"][0];
    assert_eq!(entry["id"], id.as_str());
    assert_eq!(entry["origin"], "cli");
    assert_eq!(entry["title"], "build the thing");
    assert_eq!(entry["running"], false);
    assert_eq!(
        served.get("/api/sessions?q=THING&limit=500").await.json["count"],
        1
    );
    assert_eq!(
        served.get("/api/sessions?limit=500").await.json["limit"],
        200
    );
    assert_eq!(
        served.get("/api/sessions?q=nothing-like-it").await.json["sessions"],
        json!([])
    );
    assert_eq!(
        served.get("/api/sessions?offset=1").await.json["sessions"],
        json!([])
    );
    assert_eq!(served.get("/api/sessions?limit=x").await.status, 400);

    let detail = served.get(&format!("/api/sessions/{id}")).await;
    assert_eq!(detail.status, 200);
    assert_eq!(detail.json["task"], "build the thing");
    assert!(detail.json["messages"].as_array().expect("messages").len() >= 6);

    let plan = served.get(&format!("/api/sessions/{id}/plan")).await;
    assert_eq!(plan.status, 200);
    assert_eq!(
        plan.json,
        json!({"session_id": id, "version": 2, "found": true, "steps": [
            {"id": "s1", "title": "Scaffold the command", "status": "done"},
            {"id": "s2", "title": "Wire <b>flags</b>", "status": "pending"}]})
    );

    // The plan URL is GET-only: other methods are refused and change nothing.
    let before = session_file(&sb, &id);
    for method in [Method::POST, Method::PUT, Method::DELETE, Method::PATCH] {
        let refused = send(
            served
                .request(method.clone(), &format!("/api/sessions/{id}/plan"))
                .json(&json!({"name": "renamed through the plan URL"})),
        )
        .await;
        assert_eq!(refused.status, 405, "{method}: {}", refused.text);
        assert!(refused.json["error"].is_string());
    }
    assert_eq!(session_file(&sb, &id), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cli_session_is_exported_as_markdown_and_json() {
    let server = ScriptedServer::start(vec![
        plan_create(&[("s1", "Scaffold the command"), ("s2", "Wire <b>flags</b>")]),
        plan_complete("s1"),
        text("all set"),
    ])
    .await;
    let sb = Sandbox::new();
    let id = first_session(&sb, &server, "build the thing").await;
    let served = Served::start(&sb, &server.base_url(), &[]);
    let md = served
        .get(&format!("/api/sessions/{id}/export?format=md"))
        .await;
    assert_eq!(md.status, 200);
    assert!(
        md.header("content-type")
            .expect("type")
            .starts_with("text/markdown")
    );
    assert!(
        md.header("content-disposition")
            .expect("attachment")
            .contains(&format!("{id}.md"))
    );
    assert!(md.text.starts_with("# build the thing\n"), "{}", md.text);
    assert!(md.text.contains("## Assistant\n\nall set"));
    let js = served
        .get(&format!("/api/sessions/{id}/export?format=json"))
        .await;
    assert_eq!(js.json["id"], id.as_str());
    assert_eq!(
        served
            .get(&format!("/api/sessions/{id}/export?format=pdf"))
            .await
            .status,
        400
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cli_session_is_renamed_and_deleted_over_http() {
    let server = ScriptedServer::start(vec![
        plan_create(&[("s1", "Scaffold the command"), ("s2", "Wire <b>flags</b>")]),
        plan_complete("s1"),
        text("all set"),
    ])
    .await;
    let sb = Sandbox::new();
    let id = first_session(&sb, &server, "build the thing").await;
    let served = Served::start(&sb, &server.base_url(), &[]);
    let renamed = served
        .post(
            &format!("/api/sessions/{id}"),
            json!({"name": "Release prep"}),
        )
        .await;
    assert_eq!(renamed.status, 200, "{}", renamed.text);
    assert_eq!(renamed.json["title"], "Release prep");
    assert_eq!(
        served.get("/api/sessions").await.json["sessions"][0]["title"],
        "Release prep"
    );
    let saved: Value = serde_json::from_slice(&session_file(&sb, &id)).expect("json");
    assert_eq!(saved["name"], "Release prep");
    assert_eq!(saved["task"], "build the thing");
    assert_eq!(
        served
            .post(&format!("/api/sessions/{id}"), json!({"name": " "}))
            .await
            .status,
        400
    );

    let deleted = served.delete(&format!("/api/sessions/{id}")).await;
    assert_eq!(deleted.status, 200, "{}", deleted.text);
    assert_eq!(served.get(&format!("/api/sessions/{id}")).await.status, 404);
    assert_eq!(
        served.get(&format!("/api/sessions/{id}/plan")).await.status,
        404
    );
    assert_eq!(
        served.delete(&format!("/api/sessions/{id}")).await.status,
        404
    );
    assert_eq!(served.get("/api/sessions").await.json["count"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_view_follows_the_seed_for_absent_collapsed_and_unknown_plans() {
    let server = ScriptedServer::start(vec![text("no plan needed")]).await;
    let sb = Sandbox::new();
    let plain = first_session(&sb, &server, "say hi").await;
    // A session of the Go original: no saved plan state, a collapsed plan message.
    let go_id = "20260101-0123456789abcdef0123456789abcdef";
    let go_session = json!({
        "id": go_id, "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
        "model": "m", "turns": 1, "task": "old", "messages": [
            {"role": "system", "content": "prompt"},
            {"role": "user", "content": "old"},
            {"role": "system", "content": "[Current plan: v5 — all 2 steps complete.]"},
            {"role": "assistant", "content": "done"}]});
    std::fs::write(
        sb.home.join("sessions").join(format!("{go_id}.json")),
        go_session.to_string(),
    )
    .expect("write");
    let served = Served::start(&sb, &server.base_url(), &[]);

    let absent = served.get(&format!("/api/sessions/{plain}/plan")).await;
    assert_eq!(absent.status, 200);
    assert_eq!(
        absent.json,
        json!({"session_id": plain, "version": 0, "steps": [], "found": false})
    );
    let collapsed = served.get(&format!("/api/sessions/{go_id}/plan")).await;
    assert_eq!(
        collapsed.json,
        json!({"session_id": go_id, "version": 5, "steps": [], "found": true})
    );
    assert_eq!(served.get("/api/sessions").await.json["count"], 2);

    let unknown = served
        .get("/api/sessions/20260101-ffffffffffffffffffffffffffffffff/plan")
        .await;
    assert_eq!(unknown.status, 404);
    assert!(
        unknown.json["error"]
            .as_str()
            .expect("error")
            .contains("no session")
    );
    let traversal = served.get("/api/sessions/..%2F..%2Fconfig/plan").await;
    assert_eq!(traversal.status, 404, "{}", traversal.text);
    assert_eq!(served.get("/api/nothing").await.status, 404);
}

const MAKE_FILE: &str = "python3 -c \"open('made.txt','w').write('ok')\"";

/// A run that asks to approve a shell command, then answers at length: long enough to go out
/// in several frames (the stream's last 192 bytes are held back until the answer ends, so a
/// secret split across deltas is never let out).
struct ApprovalRun {
    server: ScriptedServer,
    sb: Sandbox,
    served: Served,
    stream: SseReader,
    answer: String,
    run_id: String,
    session_id: String,
    /// The frames up to `approval_requested`.
    asked: Vec<crate::support::serve::SseFrame>,
}

impl ApprovalRun {
    async fn start() -> Self {
        let answer = "The file is made and everything went fine. ".repeat(10);
        let server = ScriptedServer::start(vec![
            plan_create(&[("s1", "Make the file"), ("s2", "Report")]),
            tools(&[("shell", json!({"command": MAKE_FILE}))]),
            plan_complete("s1"),
            text(&answer),
            text("continued from the terminal"),
        ])
        .await;
        let sb = Sandbox::new();
        let served = Served::start(&sb, &server.base_url(), &[]);
        let mut stream = SseReader::open(&served, "", None).await;
        let (run_id, session_id) = prompt(&served, json!({"content": "make the file"})).await;
        let asked = stream.until("approval_requested").await;
        ApprovalRun {
            server,
            sb,
            served,
            stream,
            answer,
            run_id,
            session_id,
            asked,
        }
    }

    fn approval_id(&self) -> String {
        let request = &self.asked.last().expect("frame").data;
        request["approval_id"].as_str().expect("id").to_string()
    }

    async fn respond(&self, action: &str) -> crate::support::serve::Answer {
        let path = format!("/api/runs/{}/approvals/{}", self.run_id, self.approval_id());
        self.served.post(&path, json!({ "action": action })).await
    }

    /// Approves and reads the stream to the run's end.
    async fn approved(mut self) -> (Self, Vec<crate::support::serve::SseFrame>) {
        assert_eq!(self.respond("approve").await.status, 200);
        let rest = self.stream.until("run_completed").await;
        (self, rest)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_over_http_asks_for_approval_and_takes_exactly_one_answer() {
    let run = ApprovalRun::start().await;
    let request = &run.asked.last().expect("frame").data;
    assert_eq!(request["run_id"], run.run_id.as_str());
    assert_eq!(request["tool"], "shell");
    assert_eq!(request["resource"], MAKE_FILE);
    assert_eq!(request["class"], "code_execution");
    let pending = run
        .served
        .get(&format!("/api/runs/{}/approvals", run.run_id))
        .await;
    assert_eq!(pending.json["approvals"][0]["status"], "pending");
    let view = run.served.get(&format!("/api/runs/{}", run.run_id)).await;
    assert_eq!(view.json["pending_approvals"], 1);
    assert_eq!(run.respond("maybe").await.status, 400);
    let answered = run.respond("approve").await;
    assert_eq!(answered.status, 200, "{}", answered.text);
    assert_eq!(run.respond("deny").await.status, 409);
    assert_eq!(
        run.served.wait_run(&run.run_id).await["status"],
        "completed"
    );
    assert_eq!(
        std::fs::read_to_string(run.sb.work.join("made.txt")).expect("made"),
        "ok"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_run_streams_its_events_and_answer_in_order_and_ends_completed() {
    let (run, rest) = ApprovalRun::start().await.approved().await;
    let frames: Vec<_> = run.asked.iter().chain(rest.iter()).collect();
    let kinds: Vec<&str> = frames.iter().map(|f| f.event.as_str()).collect();
    for kind in [
        "run_started",
        "plan_created",
        "approval_resolved",
        "tool_call_completed",
        "plan_updated",
        "answer_delta",
    ] {
        assert!(kinds.contains(&kind), "{kind} missing from {kinds:?}");
    }
    let deltas: Vec<&str> = frames
        .iter()
        .filter(|f| f.event == "answer_delta")
        .filter_map(|f| f.data["text"].as_str())
        .collect();
    assert!(deltas.len() >= 2, "{deltas:?}");
    assert_eq!(deltas.concat(), run.answer);
    let ids: Vec<u64> = frames.iter().filter_map(|f| f.id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    let last = frames.last().expect("terminal");
    assert_eq!(last.data["schema"], "odek.event/v1");
    assert_eq!(last.data["run_id"], run.run_id.as_str());
    assert_eq!(last.data["session_id"], run.session_id.as_str());

    let view = run.served.wait_run(&run.run_id).await;
    assert_eq!(view["status"], "completed");
    assert_eq!(view["answer"], run.answer.as_str());
    assert_eq!(view["tool_calls"], 3);
    let plan = run
        .served
        .get(&format!("/api/sessions/{}/plan", run.session_id))
        .await;
    assert_eq!(plan.json["steps"][0]["status"], "done");
    let listed = run.served.get("/api/sessions").await;
    assert_eq!(listed.json["sessions"][0]["origin"], "serve");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ring_keeps_a_runs_events_a_reader_resumes_after_an_id_and_the_cli_continues_it() {
    let (run, rest) = ApprovalRun::start().await.approved().await;
    let run_id = run.run_id.as_str();
    // The ring holds the run's events, browser-only frames never.
    let ring = run
        .served
        .get(&format!("/api/events?run_id={run_id}"))
        .await;
    let ring_kinds: Vec<&str> = ring.json["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e["type"].as_str())
        .collect();
    assert_eq!(ring_kinds.first(), Some(&"run_started"));
    assert_eq!(ring_kinds.last(), Some(&"run_completed"));
    assert!(
        !ring_kinds
            .iter()
            .any(|k| k.starts_with("answer_delta") || k.starts_with("approval"))
    );
    // Resuming after an id replays what came after it, from the ring.
    let resume_after = rest.first().and_then(|f| f.id).expect("id");
    let mut resumed = SseReader::open(
        &run.served,
        &format!("?run_id={run_id}"),
        Some(resume_after),
    )
    .await;
    let replayed = resumed.until("run_completed").await;
    assert!(replayed.iter().all(|f| f.id > Some(resume_after)));
    assert!(replayed.iter().all(|f| f.data["run_id"] == run_id));

    // The session is free again: the terminal continues it.
    run.served.wait_run(run_id).await;
    let mut cmd = run.sb.odek(&run.server.base_url());
    cmd.args(["continue", "--id", &run.session_id, "and now?"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("continued from the terminal"));
    let detail = run
        .served
        .get(&format!("/api/sessions/{}", run.session_id))
        .await;
    assert_eq!(detail.json["turns"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_session_refuses_a_second_prompt_rename_and_delete_and_a_run_can_be_cancelled() {
    let hold = Hold::new();
    let server = ScriptedServer::start(vec![
        text("first"),
        Reply::Held(hold.clone(), Box::new(text("never shown"))),
    ])
    .await;
    let sb = Sandbox::new();
    let served = Served::start(&sb, &server.base_url(), &[]);
    let (first, session_id) = prompt(&served, json!({"content": "one"})).await;
    assert_eq!(served.wait_run(&first).await["status"], "completed");

    let (run_id, same) = prompt(&served, json!({"content": "two", "session_id": session_id})).await;
    assert_eq!(same, session_id);
    hold.wait_reached().await;
    // Text alone would steer the run (steering.rs); with attachments it waits: 409.
    let second = served
        .post(
            "/api/prompt",
            json!({"content": "three", "session_id": session_id,
                "attachments": [{"name": "a.txt", "text": "x"}]}),
        )
        .await;
    assert_eq!(second.status, 409, "{}", second.text);
    assert_eq!(
        served
            .post(&format!("/api/sessions/{session_id}"), json!({"name": "n"}))
            .await
            .status,
        409
    );
    assert_eq!(
        served
            .delete(&format!("/api/sessions/{session_id}"))
            .await
            .status,
        409
    );
    let listed = served.get("/api/sessions").await;
    assert_eq!(listed.json["sessions"][0]["running"], true);
    let detail = served.get(&format!("/api/sessions/{session_id}")).await;
    assert_eq!(detail.json["run_id"], run_id.as_str());

    // The terminal cannot take the session while the server holds it.
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["continue", "--id", &session_id, "from the terminal"]);
    let out = output(cmd).await;
    assert_ne!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("odek serve"),
        "{}",
        show(&out)
    );

    let cancelled = served
        .post(&format!("/api/runs/{run_id}/cancel"), json!({}))
        .await;
    assert_eq!(cancelled.status, 202, "{}", cancelled.text);
    let run = served.wait_run(&run_id).await;
    hold.release();
    assert_eq!(run["status"], "cancelled");
    assert_eq!(
        served
            .post(&format!("/api/runs/{run_id}/cancel"), json!({}))
            .await
            .status,
        409
    );
    let saved = served.get(&format!("/api/sessions/{session_id}")).await;
    let users: Vec<&str> = saved.json["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(users, ["one", "two"]);
    assert_eq!(served.get("/api/runs/nope").await.status, 404);
    assert_eq!(served.get("/api/runs").await.json["count"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_held_by_the_terminal_is_busy_for_the_server() {
    let hold = Hold::new();
    let server = ScriptedServer::start(vec![
        text("first"),
        Reply::Held(hold.clone(), Box::new(text("second"))),
    ])
    .await;
    let sb = Sandbox::new();
    let id = first_session(&sb, &server, "start").await;
    let served = Served::start(&sb, &server.base_url(), &[]);
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["continue", "--id", &id, "go on"]);
    let cli = tokio::task::spawn_blocking(move || cmd.output().expect("runs"));
    hold.wait_reached().await;
    let busy = served
        .post(
            "/api/prompt",
            json!({"content": "me too", "session_id": id}),
        )
        .await;
    assert_eq!(busy.status, 409, "{}", busy.text);
    assert!(
        busy.json["error"]
            .as_str()
            .expect("error")
            .contains("odek continue")
    );
    assert_eq!(
        served.delete(&format!("/api/sessions/{id}")).await.status,
        409
    );
    hold.release();
    let out = cli.await.expect("join");
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_runs_of_two_sessions_keep_their_own_plans_and_events() {
    // Run A creates its plan, then its next answer is slow; run B runs start to end
    // meanwhile (the scripted server answers in order of the requests); then A ends.
    let server = ScriptedServer::start(vec![
        plan_create(&[("a1", "alpha one"), ("a2", "alpha two")]),
        Reply::Delayed(Duration::from_secs(3), Box::new(plan_complete("a1"))),
        plan_create(&[("b1", "beta one")]),
        plan_complete("b1"),
        text("beta done"),
        text("alpha done"),
    ])
    .await;
    let sb = Sandbox::new();
    let served = Served::start(&sb, &server.base_url(), &[]);
    let mut stream = SseReader::open(&served, "", None).await;
    let (run_a, session_a) = prompt(&served, json!({"content": "alpha"})).await;
    for _ in 0..1000 {
        if server.requests().len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(server.requests().len(), 2);
    let (run_b, session_b) = prompt(&served, json!({"content": "beta"})).await;
    assert_ne!(session_a, session_b);
    let b = served.wait_run(&run_b).await;
    assert_eq!(b["answer"], "beta done");
    assert_eq!(
        served.get(&format!("/api/runs/{run_a}")).await.json["status"],
        "running"
    );
    let a = served.wait_run(&run_a).await;
    assert_eq!(a["answer"], "alpha done");

    let plan_a = served
        .get(&format!("/api/sessions/{session_a}/plan"))
        .await
        .json;
    let plan_b = served
        .get(&format!("/api/sessions/{session_b}/plan"))
        .await
        .json;
    let ids = |p: &Value| -> Vec<String> {
        p["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .map(|s| s["id"].as_str().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(ids(&plan_a), ["a1", "a2"]);
    assert_eq!(ids(&plan_b), ["b1"]);
    assert_eq!(
        (plan_a["version"].clone(), plan_b["version"].clone()),
        (json!(2), json!(2))
    );

    let mut frames = Vec::new();
    while frames
        .iter()
        .filter(|f: &&crate::support::serve::SseFrame| f.event == "run_completed")
        .count()
        < 2
    {
        frames.push(stream.next().await.expect("frame"));
    }
    for f in frames
        .iter()
        .filter(|f| f.data["schema"] == "odek.event/v1")
    {
        let run = f.data["run_id"].as_str().expect("run id");
        let expected_session = if run == run_a {
            &session_a
        } else {
            assert_eq!(run, run_b);
            &session_b
        };
        assert_eq!(f.data["session_id"], expected_session.as_str(), "{f:?}");
    }
    let event_ids: Vec<u64> = frames.iter().filter_map(|f| f.id).collect();
    let mut unique = event_ids.clone();
    unique.dedup();
    assert_eq!(unique.len(), event_ids.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_unknown_form_and_oversized_bodies_get_json_errors_and_run_nothing() {
    let server = ScriptedServer::start(vec![]).await;
    let sb = Sandbox::new();
    let served = Served::start(&sb, &server.base_url(), &[]);
    let post_raw = |body: &'static str, content_type: &'static str| {
        served
            .request(Method::POST, "/api/prompt")
            .header("Content-Type", content_type)
            .body(body)
    };
    let malformed = send(post_raw("{\"content\": ", "application/json")).await;
    assert_eq!(malformed.status, 400);
    assert!(
        malformed.json["error"]
            .as_str()
            .expect("error")
            .starts_with("invalid JSON body")
    );
    let unknown = send(post_raw(
        "{\"content\": \"x\", \"tools\": []}",
        "application/json",
    ))
    .await;
    assert_eq!(unknown.status, 400);
    assert!(
        unknown.json["error"]
            .as_str()
            .expect("error")
            .contains("tools"),
        "{}",
        unknown.text
    );
    let form = send(post_raw("content=x", "application/x-www-form-urlencoded")).await;
    assert_eq!(form.status, 415);
    let huge = "x".repeat(9 * 1024 * 1024);
    let oversize = send(
        served
            .request(Method::POST, "/api/prompt")
            .json(&json!({"content": huge})),
    )
    .await;
    assert_eq!(oversize.status, 413, "{}", oversize.text);
    assert!(oversize.json["error"].is_string());
    // Under the body's limit (which leaves room for images), the text has its own.
    let long = send(
        served
            .request(Method::POST, "/api/prompt")
            .json(&json!({"content": "x".repeat(1024 * 1024 + 1)})),
    )
    .await;
    assert_eq!(long.status, 400, "{}", long.text);
    assert_eq!(
        long.json["error"],
        "content is 1048577 bytes, over the 1048576-byte limit"
    );
    let rename_huge = send(
        served
            .request(
                Method::POST,
                "/api/sessions/20260101-00000000000000000000000000000000",
            )
            .json(&json!({"name": "x".repeat(1024 * 1024 + 10)})),
    )
    .await;
    assert_eq!(rename_huge.status, 413);
    assert!(server.requests().is_empty());
    assert_eq!(served.get("/api/sessions").await.json["count"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_prompt_fields_ids_runs_and_approvals_get_json_errors_and_run_nothing() {
    let server = ScriptedServer::start(vec![]).await;
    let sb = Sandbox::new();
    let served = Served::start(&sb, &server.base_url(), &[]);
    assert_eq!(
        served
            .post("/api/prompt", json!({"content": "  "}))
            .await
            .status,
        400
    );
    let both = served
        .post("/api/prompt", json!({"content": "x", "model": "other", "session_id": "20260101-00000000000000000000000000000000"}))
        .await;
    assert_eq!(both.status, 400);
    assert!(
        both.json["error"]
            .as_str()
            .expect("error")
            .contains("model")
    );
    assert_eq!(
        served
            .post(
                "/api/prompt",
                json!({"content": "x", "model": "bad model!"})
            )
            .await
            .status,
        400
    );
    let unknown_session = served
        .post(
            "/api/prompt",
            json!({"content": "x", "session_id": "20260101-00000000000000000000000000000000"}),
        )
        .await;
    assert_eq!(unknown_session.status, 404);
    assert_eq!(
        served
            .post(
                "/api/prompt",
                json!({"content": "x", "session_id": "../etc"})
            )
            .await
            .status,
        404
    );
    assert_eq!(
        served.post("/api/runs/nope/cancel", json!({})).await.status,
        404
    );
    assert_eq!(
        served
            .post("/api/runs/nope/approvals/a1", json!({"action": "approve"}))
            .await
            .status,
        404
    );
    assert!(server.requests().is_empty());
    assert_eq!(served.get("/api/sessions").await.json["count"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_and_prompts_over_the_limit_get_429_with_retry_after() {
    let server = ScriptedServer::start(vec![text("one")]).await;
    let sb = Sandbox::new();
    sb.global_config(
        r#"{"serve": {"rate_limits": {"reads_per_minute": 3, "prompts_per_minute": 1}}}"#,
    );
    let served = Served::start(&sb, &server.base_url(), &[]);
    let (run_id, _) = prompt(&served, json!({"content": "first"})).await;
    let second = served
        .post("/api/prompt", json!({"content": "second"}))
        .await;
    assert_eq!(second.status, 429, "{}", second.text);
    assert!(second.header("retry-after").is_some());
    assert_eq!(served.wait_run(&run_id).await["status"], "completed");
    assert_eq!(server.requests().len(), 1);
    let plan = "/api/sessions/20260101-00000000000000000000000000000000/plan";
    for _ in 0..3 {
        assert_eq!(served.get(plan).await.status, 404);
    }
    let limited = served.get(plan).await;
    assert_eq!(limited.status, 429, "{}", limited.text);
    let retry: u64 = limited
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .expect("seconds");
    assert!((1..=60).contains(&retry));
    assert_eq!(served.get("/api/sessions").await.status, 429);
    // Other endpoints are not reads of sessions.
    assert_eq!(served.get("/api/health").await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_config_tools_and_health_describe_the_server() {
    let server = ScriptedServer::start(vec![
        with_usage(text("hello"), json!({"prompt_tokens": 1000, "completion_tokens": 10, "prompt_tokens_details": {"cached_tokens": 400}})),
    ])
    .await;
    let sb = Sandbox::new();
    let _ = first_session(&sb, &server, "count me").await;
    let served = Served::start(&sb, &server.base_url(), &[]);
    let usage = served.get("/api/usage").await;
    let mut cli = sb.odek(&server.base_url());
    cli.args(["usage", "--json"]);
    let out = output(cli).await;
    let expected: Value = serde_json::from_slice(&out.stdout).expect("usage json");
    assert_eq!(usage.json, expected);
    assert_eq!(usage.json["cached_tokens"], 400);
    assert_eq!(served.get("/api/usage?since=abc").await.status, 400);

    let tools = served.get("/api/tools").await;
    let names: Vec<&str> = tools.json["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"plan") && names.contains(&"shell"),
        "{names:?}"
    );
    let config = served.get("/api/config").await;
    assert_eq!(config.json["model"], "test-model");
    assert_eq!(config.json["serve"]["rate_limits"]["reads_per_minute"], 60);
    let health = served.get("/api/health").await;
    assert_eq!(health.json["planning"], true);
    assert_eq!(health.json["runs_running"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_key_is_masked_in_the_config_and_no_planning_removes_the_plan_tool() {
    let sb = Sandbox::new();
    let key = "sk-test-0123456789abcdefghijklmnopqrstuv";
    sb.global_config(&format!(r#"{{"api_key": "{key}"}}"#));
    let served = Served::start(&sb, "http://127.0.0.1:9/v1", &["--no-planning"]);
    let config = served.get("/api/config").await;
    assert!(!config.text.contains(key));
    assert!(
        config.json["api_key"]
            .as_str()
            .expect("masked")
            .contains('…')
    );
    let tools = served.get("/api/tools").await;
    assert!(!tools.text.contains("\"plan\""));
    assert_eq!(served.get("/api/health").await.json["planning"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_mid_run_cancels_saves_and_exits_zero() {
    let hold = Hold::new();
    let server = ScriptedServer::start(vec![
        plan_create(&[("s1", "one")]),
        Reply::Held(hold.clone(), Box::new(text("late"))),
    ])
    .await;
    let sb = Sandbox::new();
    let events = sb.dir.path().join("events.jsonl");
    let events_arg = events.to_string_lossy().to_string();
    let mut served = Served::start(&sb, &server.base_url(), &["--events-jsonl", &events_arg]);
    let (run_id, session_id) = prompt(&served, json!({"content": "long job"})).await;
    hold.wait_reached().await;
    let code = tokio::task::block_in_place(|| served.terminate());
    hold.release();
    assert_eq!(code, Some(0), "{}", served.stderr());
    assert!(
        served
            .stderr()
            .contains("stopping (1 running run(s) cancelled and saved)"),
        "{}",
        served.stderr()
    );
    let lines: Vec<Value> = std::fs::read_to_string(&events)
        .expect("events")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    let last = lines.last().expect("events");
    assert_eq!(last["type"], "run_failed");
    assert_eq!(last["run_id"], run_id.as_str());
    assert_eq!(last["data"]["error_class"], "context_canceled");
    let saved: Value = serde_json::from_slice(&session_file(&sb, &session_id)).expect("saved");
    assert_eq!(saved["origin"], "serve");
    assert_eq!(saved["plan"]["steps"][0]["id"], "s1");
    assert!(
        saved["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .any(|m| m["content"] == "long job")
    );
    assert!(
        !sb.home
            .join("sessions")
            .join(format!("{session_id}.journal"))
            .exists()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_address_that_cannot_be_used_is_a_clear_error() {
    let sb = Sandbox::new();
    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.args(["serve", "--addr", "not-an-address"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot listen on not-an-address"),
        "{}",
        show(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clarify_question_is_answered_over_http_once_and_a_cancel_closes_the_next() {
    let secret = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789";
    let server = ScriptedServer::start(vec![
        tools(&[(
            "clarify",
            json!({"question": format!("Use the key {secret}?"), "options": ["yes", "no"]}),
        )]),
        text("Going ahead."),
        tools(&[("clarify", json!({"question": "Still there?"}))]),
        text("never"),
    ])
    .await;
    let sb = Sandbox::new();
    let served = Served::start(&sb, &server.base_url(), &[]);
    let mut stream = SseReader::open(&served, "", None).await;
    let (run_id, session_id) = prompt(&served, json!({"content": "deploy"})).await;
    let asked = stream.until("clarify_requested").await;
    let frame = &asked.last().expect("frame").data;
    assert_eq!(frame["run_id"], run_id.as_str());
    assert_eq!(frame["options"], json!(["yes", "no"]));
    let question = frame["question"].as_str().expect("question");
    assert!(
        !question.contains(secret) && question.contains("[REDACTED]"),
        "{question}"
    );
    let qid = frame["question_id"].as_str().expect("id").to_string();
    assert!(qid.starts_with('q') && qid.len() == 17, "{qid}");

    let listed = served.get(&format!("/api/runs/{run_id}/questions")).await;
    assert_eq!(listed.json["questions"][0]["status"], "pending");
    assert_eq!(
        served.get(&format!("/api/runs/{run_id}")).await.json["pending_questions"],
        1
    );
    let path = format!("/api/runs/{run_id}/questions/{qid}");
    assert_eq!(
        served.post(&path, json!({"answer": "  "})).await.status,
        400
    );
    assert_eq!(served.post(&path, json!({"reply": "x"})).await.status, 400);
    let missing = served
        .post(
            &format!("/api/runs/{run_id}/questions/q0"),
            json!({"answer": "no"}),
        )
        .await;
    assert_eq!(missing.status, 404, "{}", missing.text);
    let answered = served
        .post(&path, json!({"answer": "no, use the staging key"}))
        .await;
    assert_eq!(answered.status, 200, "{}", answered.text);
    assert_eq!(answered.json["status"], "answered");
    assert_eq!(
        served.post(&path, json!({"answer": "yes"})).await.status,
        409
    );
    let closed = stream.until("clarify_resolved").await;
    assert_eq!(closed.last().expect("frame").data["reason"], "answered");
    assert!(closed.last().expect("frame").data.get("answer").is_none());
    assert_eq!(served.wait_run(&run_id).await["status"], "completed");
    let results = tool_results(&server.requests()[1]);
    assert_eq!(results, ["the user answered: no, use the staging key"]);

    // A second question, then the run is cancelled while it waits.
    let next = served
        .post(
            "/api/prompt",
            json!({"content": "again", "session_id": session_id}),
        )
        .await;
    assert_eq!(next.status, 202, "{}", next.text);
    let run_id = next.json["run_id"].as_str().expect("run").to_string();
    stream.until("clarify_requested").await;
    let cancelled = served
        .post(&format!("/api/runs/{run_id}/cancel"), json!({}))
        .await;
    assert_eq!(cancelled.status, 202, "{}", cancelled.text);
    let closed = stream.until("clarify_resolved").await;
    assert_eq!(closed.last().expect("frame").data["reason"], "cancelled");
    assert_eq!(served.wait_run(&run_id).await["status"], "cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_and_search_over_http_under_the_token_with_json_errors() {
    let site = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::any())
        .respond_with(wiremock::ResponseTemplate::new(200).set_body_raw("a page", "text/plain"))
        .mount(&site)
        .await;
    let server = ScriptedServer::start(vec![
        tools(&[("web_fetch", json!({"url": format!("{}/p", site.uri())}))]),
        tools(&[(
            "memory",
            json!({"action": "add", "target": "project", "content": "Deploys go through the staging gate"}),
        )]),
        text("The aardvark report is ready."),
    ])
    .await;
    let sb = Sandbox::new();
    sb.global_config(
        &json!({"web": {"allow_hosts": ["127.0.0.1"], "allow_private_hosts": ["127.0.0.1"]}})
            .to_string(),
    );
    let served = Served::start(&sb, &server.base_url(), &[]);
    let unauthorised = send(served.bare(reqwest::Method::GET, "/api/memory")).await;
    assert_eq!(unauthorised.status, 401);
    // An id that is no number (or overflows one) is a JSON error like every other.
    for id in ["99999999999999999999", "abc", "0"] {
        let wrong = served.get(&format!("/api/memory/{id}")).await;
        assert_eq!(wrong.status, 400, "{id}: {}", wrong.text);
        assert!(
            wrong.json["error"]
                .as_str()
                .is_some_and(|e| e.contains("is not a memory fact's id")),
            "{id}: {}",
            wrong.text
        );
    }

    let added = served
        .post(
            "/api/memory",
            json!({"target": "user", "content": "Prefers short answers"}),
        )
        .await;
    assert_eq!(added.status, 201, "{}", added.text);
    let id = added.json["fact"]["id"].as_i64().expect("id");
    assert_eq!(added.json["fact"]["status"], "active");
    let again = served
        .post(
            "/api/memory",
            json!({"target": "user", "content": "prefers short answers"}),
        )
        .await;
    assert_eq!(again.status, 409, "{}", again.text);
    assert!(
        again.json["error"]
            .as_str()
            .unwrap()
            .contains("already known")
    );
    let bad = served
        .post("/api/memory", json!({"target": "team", "content": "x"}))
        .await;
    assert_eq!(bad.status, 400, "{}", bad.text);

    // A run that read a page writes a pending fact; accepting it makes it active.
    let (run_id, session_id) =
        prompt(&served, json!({"content": "write the aardvark report"})).await;
    assert_eq!(served.wait_run(&run_id).await["status"], "completed");
    let listed = served.get("/api/memory?status=pending").await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    assert_eq!(listed.json["pending"], 1);
    let pending = &listed.json["facts"][0];
    assert_eq!(pending["session_id"], session_id.as_str());
    let pid = pending["id"].as_i64().unwrap();
    let accepted = served
        .post(&format!("/api/memory/{pid}/accept"), json!({}))
        .await;
    assert_eq!(accepted.status, 200, "{}", accepted.text);
    assert_eq!(accepted.json["fact"]["status"], "active");
    let twice = served
        .post(&format!("/api/memory/{pid}/accept"), json!({}))
        .await;
    assert_eq!(twice.status, 404, "{}", twice.text);
    let all = served.get("/api/memory").await;
    assert_eq!(all.json["pending"], 0);
    assert_eq!(all.json["stores"][1]["used"], 35, "{}", all.text);

    let edited = served
        .post(
            &format!("/api/memory/{id}"),
            json!({"content": "Prefers answers in bullet points"}),
        )
        .await;
    assert_eq!(
        edited.json["fact"]["content"],
        "Prefers answers in bullet points"
    );
    assert_eq!(
        served.delete(&format!("/api/memory/{id}")).await.status,
        200
    );
    assert_eq!(served.get(&format!("/api/memory/{id}")).await.status, 404);

    let found = served.get("/api/search?q=aardvark").await;
    assert_eq!(found.status, 200, "{}", found.text);
    assert_eq!(found.json["sessions"][0]["id"], session_id.as_str());
    assert!(
        found.json["sessions"][0]["snippet"]
            .as_str()
            .unwrap()
            .contains("«aardvark»"),
        "{}",
        found.text
    );
    assert_eq!(served.get("/api/search").await.status, 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_lists_the_configured_ones_and_what_the_endpoint_lists() {
    let server = ScriptedServer::start(vec![]).await;
    wiremock::Mock::given(wiremock::matchers::method("GET"))
        .and(wiremock::matchers::path("/v1/models"))
        .respond_with(
            wiremock::ResponseTemplate::new(200).set_body_json(serde_json::json!({
                "object": "list",
                "data": [{"id": "test-model"}, {"id": "qwen3-coder"}, {"id": "qwen3-coder"}],
            })),
        )
        .mount(server.mock())
        .await;
    let sb = Sandbox::new();
    sb.global_config(r#"{"models": ["gpt-4o", "test-model"]}"#);
    let served = Served::start(&sb, &server.base_url(), &[]);
    let bare = crate::support::serve::send(served.bare(reqwest::Method::GET, "/api/models")).await;
    assert_eq!(bare.status, 401);
    let listed = served.get("/api/models").await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    assert_eq!(
        listed.json,
        serde_json::json!({
            "default": "test-model",
            "models": [
                {"name": "test-model", "from": ["model", "models", "endpoint"]},
                {"name": "gpt-4o", "from": ["models"]},
                {"name": "qwen3-coder", "from": ["endpoint"]},
            ],
            "endpoint_listed": true,
            "images": false,
        })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_and_schedule_actions_answer_json_errors_under_the_token() {
    let server = ScriptedServer::start(vec![]).await;
    let sb = Sandbox::new();
    let served = Served::start(&sb, &server.base_url(), &[]);
    for (method, path) in [
        (Method::GET, "/api/skills"),
        (Method::POST, "/api/skills/lint/trust"),
        (Method::POST, "/api/schedules/digest/run"),
        (Method::POST, "/api/schedules/digest/enable"),
    ] {
        let bare = send(served.bare(method.clone(), path).json(&json!({}))).await;
        assert!(
            bare.status == 401 || bare.status == 403,
            "{method} {path} without the token: {}",
            bare.status
        );
    }
    let skills = served.get("/api/skills").await;
    assert_eq!(skills.status, 200, "{}", skills.text);
    assert_eq!(skills.json, json!({"skills": [], "broken": []}));
    let missing = served.post("/api/skills/lint/trust", json!({})).await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json["error"], "no skill named \"lint\"");
    for action in ["run", "enable", "disable"] {
        let missing = served
            .post(&format!("/api/schedules/digest/{action}"), json!({}))
            .await;
        assert_eq!(missing.status, 404, "{action}: {}", missing.text);
        assert!(
            missing.json["error"]
                .as_str()
                .unwrap_or_default()
                .starts_with("no job named \"digest\""),
            "{}",
            missing.text
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attachments_reach_the_model_wrapped_and_bad_ones_are_refused() {
    let server = ScriptedServer::start(vec![text("Two rows.")]).await;
    let sb = Sandbox::new();
    let served = Served::start(&sb, &server.base_url(), &[]);
    assert_eq!(
        attachment_refused(
            &served,
            json!({"name": "big.log", "text": "x".repeat(262_145)})
        )
        .await,
        "attachment big.log is 262145 bytes, over the 262144-byte limit"
    );
    assert_eq!(
        attachment_refused(&served, json!({"name": "a", "text": "a\u{0}b"})).await,
        "attachment a is not text (it holds NUL bytes)"
    );
    let started = served.prompt_completed(json!({"content": "summarise the file", "attachments": [{"name": "q3.csv", "text": "a,b\n1,2\n"}]})).await;
    let user = last_user_text(&server.requests()[0]);
    assert!(
        user.starts_with("summarise the file\n\n--- q3.csv ---\n"),
        "{user}"
    );
    let wrapped = odek::untrusted::wrappers(&user);
    assert_eq!(wrapped.len(), 1);
    assert_eq!(
        (wrapped[0].source, wrapped[0].body),
        ("attachment:q3.csv", "a,b\n1,2")
    );
    let session = served
        .get(&format!(
            "/api/sessions/{}",
            started["session_id"].as_str().expect("id")
        ))
        .await;
    assert_eq!(
        session.json["title"], "summarise the file",
        "the title is the prompt as typed"
    );
}

/// A prompt with this one attachment is refused with 400: its error.
async fn attachment_refused(served: &Served, attachment: Value) -> String {
    let answer = served
        .post(
            "/api/prompt",
            json!({"content": "x", "attachments": [attachment]}),
        )
        .await;
    assert_eq!(answer.status, 400, "{}", answer.text);
    answer.json["error"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// A 1×1 PNG.
const DOT_PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89\0\0\0\rIDATx\x9cc\xf8\x0f\x04\0\x09\xfb\x03\xfd\xe3U\xf2\x9c\0\0\0\0IEND\xaeB`\x82";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn images_go_to_a_model_that_takes_them_as_image_parts_and_are_refused_otherwise() {
    use base64::Engine as _;
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let image = json!({"name": "dot.png", "image": b64(DOT_PNG)});

    // A model that does not take images: refused, with the setting named.
    let server = ScriptedServer::start(vec![]).await;
    let sb = Sandbox::new();
    let served = Served::start(&sb, &server.base_url(), &[]);
    let models = served.get("/api/models").await;
    assert_eq!(models.json["images"], false, "{}", models.text);
    assert_eq!(
        attachment_refused(&served, image.clone()).await,
        "attachment dot.png is an image, and the model does not take images (setting `images`)"
    );
    drop(served);

    // One that does.
    let server = ScriptedServer::start(vec![text("A single dot."), text("Still one dot.")]).await;
    let sb = Sandbox::new();
    sb.global_config(&json!({"images": true}).to_string());
    let served = Served::start(&sb, &server.base_url(), &[]);
    assert_eq!(served.get("/api/models").await.json["images"], true);
    for (attachment, error) in [
        (
            json!({"name": "x.svg", "image": b64(b"<svg onload=alert(1)/>")}),
            "x.svg is not a PNG, JPEG, GIF or WebP image",
        ),
        (
            json!({"name": "a.png", "image": "not base64!"}),
            "attachment a.png: image must be the file's bytes in standard base64 (no data: prefix)",
        ),
        (
            json!({"name": "a.png", "image": b64(DOT_PNG), "text": "both"}),
            "attachment a.png must have text or image (one of them, not both)",
        ),
        (
            json!({"name": "big.jpg", "image": b64(&vec![0xff; 4 * 1024 * 1024 + 1])}),
            "image big.jpg is 4194305 bytes, over the 4194304-byte limit",
        ),
    ] {
        assert_eq!(attachment_refused(&served, attachment).await, error);
    }
    let started = served
        .prompt_completed(json!({"content": "what is in the picture?", "attachments": [image]}))
        .await;
    let user = last_user(&server.requests()[0]);
    let expected_url = format!("data:image/png;base64,{}", b64(DOT_PNG));
    assert_eq!(
        user["content"],
        json!([
            {"type": "text", "text": "what is in the picture?\n\n[Image attached: dot.png]"},
            {"type": "image_url", "image_url": {"url": expected_url}},
        ])
    );
    // Saved as sent: the session reads back with its image.
    let session = served
        .get(&format!(
            "/api/sessions/{}",
            started["session_id"].as_str().expect("id")
        ))
        .await;
    let saved = session.json["messages"]
        .as_array()
        .and_then(|m| m.iter().rfind(|m| m["role"] == "user"))
        .cloned()
        .expect("saved user message");
    assert_eq!(saved["content"], user["content"]);
    assert_eq!(session.json["title"], "what is in the picture?");
    // The audit log records the image (its size, never its data).
    let mut audit = sb.odek(&server.base_url());
    audit.args([
        "audit",
        "--json",
        started["session_id"].as_str().expect("id"),
    ]);
    let out = audit.output().expect("odek audit");
    let records: Vec<Value> = serde_json::from_slice(&out.stdout).expect("json");
    let image = records
        .iter()
        .find(|r| r["source"] == "image")
        .unwrap_or_else(|| panic!("no image record: {records:?}"));
    assert_eq!(image["bytes"], expected_url.len(), "{image}");
    assert_eq!(
        image["content"],
        format!("data:image/png;base64,… ({} bytes)", expected_url.len())
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains(&b64(DOT_PNG)));
    // `odek session show` says an image went with the turn.
    let mut show = sb.odek(&server.base_url());
    show.args([
        "session",
        "show",
        started["session_id"].as_str().expect("id"),
    ]);
    let shown = String::from_utf8_lossy(&show.output().expect("show").stdout).into_owned();
    assert!(
        shown.contains("[Image attached: dot.png]\n[1 image(s) attached]"),
        "{shown}"
    );

    // Continued with `images` off: the saved image stays in the file but is not sent;
    // the message's text says it was left out.
    drop(served);
    sb.global_config("{}");
    let served = Served::start(&sb, &server.base_url(), &[]);
    let session_id = started["session_id"].as_str().expect("id");
    served
        .prompt_completed(json!({"content": "and now?", "session_id": session_id}))
        .await;
    let earlier = messages(&server.requests()[1])
        .into_iter()
        .find(|m| m["role"] == "user")
        .expect("the first user message");
    assert_eq!(
        earlier["content"],
        "what is in the picture?\n\n[Image attached: dot.png]\n\n[1 image(s) omitted: this model does not take images]"
    );
}
