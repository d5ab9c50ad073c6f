//! `odek serve` against what an attack run found (issue "two secret leaks and four weaker
//! spots"): each test drives the real binary over real HTTP or raw TCP and failed before its
//! fix.

use std::time::{Duration, Instant};

use crate::support::serve::{Served, SseReader, send};
use crate::support::*;
use reqwest::Method;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The configured API key (a known secret of the process).
const API_KEY: &str = "sk-odek-test-9f8e7d6c5b4a39281706f5e4";
/// An AWS access key id and a GitHub token (pattern secrets).
const AWS_ID: &str = "AKIA2OGYBAH6RK3LQXPZ";
const GITHUB: &str = "ghp_0123456789abcdefghijklmnopqrstuvwxyz";

fn assert_no_secret(what: &str, text: &str) {
    for secret in [API_KEY, AWS_ID, GITHUB] {
        assert!(!text.contains(secret), "{what} holds {secret}: {text}");
    }
}

/// Each secret split across three deltas.
fn split_secret_answer() -> Reply {
    pieces(&[
        "The key is sk-odek-te",
        "st-9f8e7d6c5b",
        "4a39281706f5e4, the id AKIA2OG",
        "YBAH6RK",
        "3LQXPZ and the token ghp_0123456789",
        "abcdefghijklmn",
        "opqrstuvwxyz. That is all.",
    ])
}

async fn start_run(served: &Served, content: &str) -> String {
    let started = served
        .post("/api/prompt", json!({"content": content}))
        .await;
    assert_eq!(started.status, 202, "{}", started.text);
    started.json["run_id"].as_str().expect("run id").to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finding_1_runs_report_their_answer_redacted() {
    let answer = format!("The key is {API_KEY}, the id {AWS_ID} and the token {GITHUB}.");
    let server = ScriptedServer::start(vec![text(&answer)]).await;
    let sb = Sandbox::new();
    let served = Served::start_with_env(&sb, &server.base_url(), &[], &[("ODEK_API_KEY", API_KEY)]);
    let run_id = start_run(&served, "tell me the secrets").await;
    let run = served.wait_run(&run_id).await;
    assert_eq!(run["status"], "completed", "{run}");
    let one = served.get(&format!("/api/runs/{run_id}")).await;
    let all = served.get("/api/runs").await;
    for (what, body) in [
        ("GET /api/runs/{id}", &one.text),
        ("GET /api/runs", &all.text),
    ] {
        assert_no_secret(what, body);
        assert_eq!(body.matches("[REDACTED]").count(), 3, "{what}: {body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finding_2_a_secret_split_across_deltas_never_reaches_the_stream() {
    let server = ScriptedServer::start(vec![split_secret_answer()]).await;
    let sb = Sandbox::new();
    let served = Served::start_with_env(&sb, &server.base_url(), &[], &[("ODEK_API_KEY", API_KEY)]);
    let mut stream = SseReader::open(&served, "", None).await;
    let run_id = start_run(&served, "tell me the secrets").await;
    let frames = stream.until("run_completed").await;
    let deltas: String = frames
        .iter()
        .filter(|f| f.event == "answer_delta" && f.data["run_id"] == run_id.as_str())
        .filter_map(|f| f.data["text"].as_str())
        .collect();
    assert_no_secret("the concatenated answer_delta frames", &deltas);
    assert_eq!(
        deltas,
        "The key is [REDACTED], the id [REDACTED] and the token [REDACTED]. That is all."
    );
    let every_frame: String = frames.iter().map(|f| f.data.to_string()).collect();
    assert_no_secret("the event stream", &every_frame);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finding_3_only_standard_session_ids_name_sessions_on_every_route() {
    let server = ScriptedServer::start(vec![text("done")]).await;
    let sb = Sandbox::new();
    let id = first_session(&sb, &server, "make a session").await;
    let dir = sb.home.join("sessions");
    std::fs::write(dir.join("vectors_meta.json"), "{}").expect("the Go original's file");
    assert!(dir.join("index.json").exists());
    let served = Served::start(&sb, &server.base_url(), &[]);
    for name in ["index", "vectors_meta", "..%2F..%2Fconfig", "20260101-XYZ"] {
        let path = format!("/api/sessions/{name}");
        let answers = [
            served.delete(&path).await,
            served.get(&path).await,
            served.post(&path, json!({"name": "renamed"})).await,
            served.get(&format!("{path}/plan")).await,
            served.get(&format!("{path}/export?format=json")).await,
            served
                .post("/api/prompt", json!({"content": "x", "session_id": name}))
                .await,
        ];
        for answer in answers {
            assert_eq!(answer.status, 404, "{name}: {}", answer.text);
            assert!(
                answer.json["error"]
                    .as_str()
                    .expect("error")
                    .contains("YYYYMMDD"),
                "{}",
                answer.text
            );
        }
    }
    assert!(dir.join("index.json").exists(), "the index was deleted");
    assert!(
        dir.join("vectors_meta.json").exists(),
        "a foreign file was deleted"
    );
    assert_eq!(served.get(&format!("/api/sessions/{id}")).await.status, 200);
    assert_eq!(server.requests().len(), 1, "no prompt ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finding_4_error_bodies_name_the_problem_not_the_paths() {
    let sb = Sandbox::new();
    let dir = sb.home.join("sessions");
    std::fs::create_dir_all(&dir).expect("dir");
    let id = "20260102-0123456789abcdef0123456789abcdef";
    std::fs::write(dir.join(format!("{id}.json")), "{ not json").expect("corrupt file");
    let served = Served::start(&sb, "http://127.0.0.1:9/v1", &[]);
    let home = sb.dir.path().to_str().expect("utf-8 path");
    for path in [
        format!("/api/sessions/{id}"),
        format!("/api/sessions/{id}/plan"),
        format!("/api/sessions/{id}/export?format=md"),
    ] {
        let answer = served.get(&path).await;
        assert_eq!(answer.status, 500, "{path}: {}", answer.text);
        assert!(!answer.text.contains(home), "{path}: {}", answer.text);
        assert!(!answer.text.contains(".json"), "{path}: {}", answer.text);
        assert!(
            answer.json["error"]
                .as_str()
                .expect("error")
                .contains(&format!("session {id}: its file is corrupt")),
            "{}",
            answer.text
        );
    }
    // The server's own log keeps the whole error.
    assert!(
        served.stderr().contains(&format!("{id}.json")),
        "{}",
        served.stderr()
    );
}

/// Reads from `stream` until the server closes it (or `limit` passes); returns what came
/// and how long it took.
async fn read_until_closed(mut stream: TcpStream, limit: Duration) -> (String, Duration) {
    let start = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout_at((start + limit).into(), stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => panic!(
                "still open after {limit:?}; got {:?}",
                String::from_utf8_lossy(&got)
            ),
        }
    }
    (String::from_utf8_lossy(&got).to_string(), start.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finding_5_slow_idle_and_too_many_connections_are_cut_off() {
    let sb = Sandbox::new();
    let served = Served::start(&sb, "http://127.0.0.1:9/v1", &[]);
    let addr = served.addr.clone();
    let limit = Duration::from_secs(25);

    // Part of a request line, nothing at all, and an idle kept-alive connection: each is
    // closed by the server within the header timeout (10 s), before any token check.
    let mut partial = TcpStream::connect(&addr).await.expect("connect");
    partial
        .write_all(b"GET /api/health HT")
        .await
        .expect("write");
    let silent = TcpStream::connect(&addr).await.expect("connect");
    let mut kept = TcpStream::connect(&addr).await.expect("connect");
    let request = format!(
        "GET /api/health HTTP/1.1\r\nHost: {addr}\r\nX-Odek-Token: {}\r\n\r\n",
        served.token
    );
    kept.write_all(request.as_bytes()).await.expect("write");
    let waits = [
        tokio::spawn(read_until_closed(partial, limit)),
        tokio::spawn(read_until_closed(silent, limit)),
        tokio::spawn(read_until_closed(kept, limit)),
    ];

    // A 65th connection from one address is refused while 64 are open; closing one makes
    // room again.
    let mut open = Vec::new();
    for _ in 0..64 {
        open.push(TcpStream::connect(&addr).await.expect("connect"));
    }
    // The three above count too: 67 asked, 64 admitted, so the last three are refused.
    let refused = TcpStream::connect(&addr).await.expect("connect");
    let (answer, _) = read_until_closed(refused, limit).await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("too many connections"), "{answer}");
    drop(open);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(served.get("/api/health").await.status, 200);

    let mut outcomes = Vec::new();
    for wait in waits {
        outcomes.push(wait.await.expect("join"));
    }
    // The partial request may get a 408 before the close; the kept-alive one got its
    // answer, and was closed later, idle.
    let (kept_got, _) = &outcomes[2];
    assert!(kept_got.starts_with("HTTP/1.1 200"), "{kept_got}");
    assert_eq!(kept_got.matches("HTTP/1.1").count(), 1, "{kept_got}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finding_6_the_browser_cookie_is_per_instance_and_not_the_api_token() {
    let sb = Sandbox::new();
    let served = Served::start(&sb, "http://127.0.0.1:9/v1", &[]);
    let other_sb = Sandbox::new();
    let other = Served::start(&other_sb, "http://127.0.0.1:9/v1", &[]);
    let health = "/api/health";

    let sign_in = |s: &Served| send(s.bare(Method::GET, &format!("/?token={}", s.token)));
    let login = sign_in(&served).await;
    assert_eq!(login.status, 303);
    let set_cookie = login.header("set-cookie").expect("cookie");
    let pair = set_cookie.split(';').next().expect("pair").to_string();
    let (name, credential) = pair.split_once('=').expect("name=value");
    let port = served.addr.rsplit_once(':').expect("port").1;
    assert_eq!(name, format!("odek_session_{port}"));
    assert_ne!(credential, served.token, "the cookie holds the API token");
    assert_eq!(credential.len(), 64);
    assert!(set_cookie.contains("HttpOnly") && set_cookie.contains("SameSite=Strict"));
    let other_login = sign_in(&other).await;
    let other_name = other_login.header("set-cookie").expect("cookie");
    assert!(!other_name.starts_with(&format!("{name}=")), "{other_name}");

    let with = |cookie: &str| send(served.bare(Method::GET, health).header("Cookie", cookie));
    assert_eq!(with(&pair).await.status, 200);
    // The credential is useless as a token, under another name, or at the other instance;
    // the API token is no longer accepted as a cookie.
    assert_eq!(
        send(
            served
                .bare(Method::GET, health)
                .header("X-Odek-Token", credential)
        )
        .await
        .status,
        401
    );
    assert_eq!(
        send(served.bare(Method::GET, health).bearer_auth(credential))
            .await
            .status,
        401
    );
    assert_eq!(
        with(&format!("odek_token={}", served.token)).await.status,
        401
    );
    assert_eq!(
        send(other.bare(Method::GET, health).header("Cookie", &pair))
            .await
            .status,
        401
    );

    // Signing out revokes it.
    let out = send(
        served
            .bare(Method::POST, "/api/logout")
            .header("Cookie", &pair),
    )
    .await;
    assert_eq!(out.status, 200, "{}", out.text);
    assert_eq!(out.json["signed_out"], true);
    assert!(
        out.header("set-cookie")
            .expect("cleared")
            .contains("Max-Age=0")
    );
    assert_eq!(with(&pair).await.status, 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_resolves_a_pending_approval_with_a_frame_and_ids_are_random() {
    let server = ScriptedServer::start(vec![
        tools(&[(
            "shell",
            json!({"command": "python3 -c \"open('made.txt','w').write('ok')\""}),
        )]),
        text("never reached"),
    ])
    .await;
    let sb = Sandbox::new();
    let mut served = Served::start(&sb, &server.base_url(), &[]);
    let mut stream = SseReader::open(&served, "", None).await;
    let run_id = start_run(&served, "clean up").await;
    let asked = stream.until("approval_requested").await;
    let approval_id = asked.last().expect("frame").data["approval_id"]
        .as_str()
        .expect("id")
        .to_string();
    assert_eq!(approval_id.len(), 17, "{approval_id}");
    assert!(
        approval_id[1..].chars().all(|c| c.is_ascii_hexdigit())
            && !approval_id[1..].chars().all(|c| c.is_ascii_digit()),
        "{approval_id}"
    );

    let stopping = tokio::task::spawn_blocking(move || {
        let code = served.terminate();
        (code, served)
    });
    let mut resolved: Option<Value> = None;
    let mut seen = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(40), async {
        while let Some(frame) = stream.next().await {
            seen.push(frame.event.clone());
            if frame.event == "approval_resolved" {
                resolved = Some(frame.data.clone());
            }
            if frame.event == "run_failed" {
                break;
            }
        }
    })
    .await;
    let (code, served) = stopping.await.expect("join");
    assert!(read.is_ok(), "frames: {seen:?}\n{}", served.stderr());
    assert_eq!(code, Some(0));
    let resolved = resolved.expect("an approval_resolved frame before the stream ended");
    assert_eq!(resolved["run_id"], run_id.as_str());
    assert_eq!(resolved["approval_id"], approval_id.as_str());
    assert_eq!(resolved["action"], "deny");
    assert_eq!(resolved["reason"], "cancelled");
}

/// Issue 43, F12: a request with the token whose body stalls is answered 408 after 10 s
/// without a byte (the server keeps answering others meanwhile), and every route answers
/// odd input — a path segment that is not UTF-8, a malformed query, a wrong content type,
/// broken JSON, an unknown route or method — with the JSON error body of every route.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finding_12_a_stalled_body_times_out_and_every_error_is_json() {
    let sb = Sandbox::new();
    let served = Served::start(&sb, "http://127.0.0.1:9/v1", &[]);
    let addr = served.addr.clone();
    let mut stalled = TcpStream::connect(&addr).await.expect("connect");
    let head = format!(
        "POST /api/memory HTTP/1.1\r\nHost: {addr}\r\nX-Odek-Token: {}\r\n\
         Content-Type: application/json\r\nContent-Length: 200\r\n\r\n{{\"content\": \"sl",
        served.token
    );
    stalled.write_all(head.as_bytes()).await.expect("write");
    let waited = tokio::spawn(read_until_closed(stalled, Duration::from_secs(25)));

    type Body = Option<(&'static str, &'static str)>;
    let odd: Vec<(Method, &str, Body)> = vec![
        (Method::GET, "/api/runs/%FF", None),
        (Method::GET, "/api/sessions/%C3%28", None),
        (Method::GET, "/api/sessions/%FF/plan", None),
        (Method::POST, "/api/runs/%FF/cancel", None),
        (
            Method::POST,
            "/api/runs/r/approvals/%FF",
            Some(("application/json", "{}")),
        ),
        (Method::GET, "/api/memory/%FF", None),
        (Method::GET, "/api/memory/99999999999999999999", None),
        (Method::POST, "/api/schedules/%FF/run", None),
        (Method::POST, "/api/skills/%FF/trust", None),
        (Method::GET, "/api/events?after=%FF%FE&limit=x", None),
        (Method::POST, "/api/memory", Some(("text/plain", "{}"))),
        (
            Method::POST,
            "/api/memory",
            Some(("application/json", "{\"content\": ")),
        ),
        (
            Method::POST,
            "/api/memory",
            Some(("application/json", "[1,2]")),
        ),
        (
            Method::POST,
            "/api/prompt",
            Some(("application/json", "\u{0}")),
        ),
        (Method::PUT, "/api/prompt", None),
        (Method::GET, "/api/nothing-here", None),
        (Method::DELETE, "/api/health", None),
    ];
    for (method, path, body) in odd {
        let mut request = served.request(method.clone(), path);
        if let Some((kind, text)) = body {
            request = request.header("Content-Type", kind).body(text.to_string());
        }
        let answer = send(request).await;
        assert!(answer.status >= 400, "{method} {path}: {}", answer.status);
        assert!(
            answer
                .header("content-type")
                .is_some_and(|t| t.starts_with("application/json")),
            "{method} {path}: {:?} {}",
            answer.header("content-type"),
            answer.text
        );
        assert!(
            answer.json["error"].is_string(),
            "{method} {path}: {}",
            answer.text
        );
    }
    assert_eq!(served.get("/api/health").await.status, 200);

    let (got, _) = waited.await.expect("join");
    assert!(got.starts_with("HTTP/1.1 408"), "{got}");
    assert!(got.contains("did not arrive in time"), "{got}");
}
