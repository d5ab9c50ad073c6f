//! The file, web and clarify tools through the real binary: `glob`, `batch_read`, `batch_patch`,
//! `web_fetch` against real local HTTP servers (Markdown, the address guard at every
//! redirect, the download cap, the time limit), `web_search` against a local SearXNG-shaped
//! server, headless `clarify`, the tool selection's errors, and the first request's size.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use wiremock::{Mock, MockServer, ResponseTemplate, matchers};

use crate::support::*;

/// Runs `odek run TASK` with `args` and returns the tool results the model got, unwrapped.
async fn run_and_results(sb: &Sandbox, server: &ScriptedServer, args: &[&str]) -> Vec<String> {
    let mut cmd = sb.odek(&server.base_url());
    cmd.arg("run").args(args).arg("do it");
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let requests = server.requests();
    let last = requests.last().expect("a request");
    tool_results(last)
        .iter()
        .map(|r| unwrap_untrusted(r))
        .collect()
}

/// A sandbox whose config lets `web_fetch` reach 127.0.0.1 without asking.
fn web_sandbox(extra: Value) -> Sandbox {
    let sb = Sandbox::new();
    let mut web = json!({"allow_hosts": ["127.0.0.1"], "allow_private_hosts": ["127.0.0.1"]});
    if let (Some(w), Some(e)) = (web.as_object_mut(), extra.as_object()) {
        w.extend(e.clone());
    }
    sb.global_config(&json!({ "web": web }).to_string());
    sb
}

async fn fetch_result(sb: &Sandbox, url: &str, max_chars: Option<usize>) -> String {
    let mut args = json!({ "url": url });
    if let Some(n) = max_chars {
        args["max_chars"] = json!(n);
    }
    let server = ScriptedServer::start(vec![tools(&[("web_fetch", args)]), text("done")]).await;
    let results = run_and_results(sb, &server, &[]).await;
    results.last().expect("a result").clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_html_page_comes_back_as_markdown_with_links_and_without_scripts() {
    let site = MockServer::start().await;
    let page = r#"<!DOCTYPE html><html><head><title>Guide</title><style>p{color:red}</style>
        <script>document.write("tracking")</script></head><body><h1>Install</h1>
        <p>See <a href="https://example.com/docs">the docs</a> first.</p>
        <ul><li>fast</li><li>light</li></ul></body></html>"#;
    Mock::given(matchers::path("/guide"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(page, "text/html; charset=utf-8"))
        .mount(&site)
        .await;
    let sb = web_sandbox(json!({}));
    let result = fetch_result(&sb, &format!("{}/guide", site.uri()), None).await;
    assert!(
        result.starts_with(&format!(
            "URL: {}/guide\nContent-Type: text/html",
            site.uri()
        )),
        "{result}"
    );
    assert!(result.contains("# Install"), "{result}");
    assert!(
        result.contains("[the docs](https://example.com/docs)"),
        "{result}"
    );
    assert!(
        result.contains("fast") && result.contains("light"),
        "{result}"
    );
    assert!(
        !result.contains("tracking") && !result.contains("color:red"),
        "{result}"
    );

    // JSON as it is; an image refused with its type.
    Mock::given(matchers::path("/data"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"ok": true})))
        .mount(&site)
        .await;
    Mock::given(matchers::path("/logo"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(vec![0u8, 1, 2], "image/png"))
        .mount(&site)
        .await;
    let json_result = fetch_result(&sb, &format!("{}/data", site.uri()), None).await;
    assert!(json_result.ends_with(r#"{"ok":true}"#), "{json_result}");
    let image = fetch_result(&sb, &format!("{}/logo", site.uri()), None).await;
    assert!(
        image.contains("is image/png, not HTML, text or JSON"),
        "{image}"
    );
}

/// A same-host redirect to a URL with a user name and password is refused like such a first
/// URL: nothing is sent with the credentials, and they are not shown to the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_to_a_url_with_credentials_is_not_followed() {
    let site = MockServer::start().await;
    let port = site.address().port();
    Mock::given(matchers::path("/login"))
        .respond_with(ResponseTemplate::new(302).insert_header(
            "location",
            format!("http://admin:hunter2hunter@127.0.0.1:{port}/admin").as_str(),
        ))
        .mount(&site)
        .await;
    Mock::given(matchers::path("/admin"))
        .respond_with(ResponseTemplate::new(200).set_body_string("the admin page"))
        .mount(&site)
        .await;
    let sb = web_sandbox(json!({}));
    let result = fetch_result(&sb, &format!("{}/login", site.uri()), None).await;
    assert!(
        result.contains("redirects to a URL with a user name or password; it is not followed"),
        "{result}"
    );
    assert!(
        !result.contains("hunter2hunter") && !result.contains("the admin page"),
        "{result}"
    );
    let requests = site.received_requests().await.unwrap_or_default();
    assert!(
        requests
            .iter()
            .all(|r| r.url.path() != "/admin" && !r.headers.contains_key("authorization")),
        "{requests:?}"
    );
}

/// Pages of 2,000, 10,000 and 50,000 nested elements (made to crash the HTML converter's
/// recursion) come back as Markdown with their text, and odek goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_of_deeply_nested_elements_neither_crashes_nor_stalls_odek() {
    let site = MockServer::start().await;
    for depth in [2_000, 10_000, 50_000] {
        let page = format!(
            "<html><body>{}nested {depth} deep{}</body></html>",
            "<div>".repeat(depth),
            "</div>".repeat(depth)
        );
        Mock::given(matchers::path(format!("/deep{depth}")))
            .respond_with(ResponseTemplate::new(200).set_body_raw(page, "text/html"))
            .mount(&site)
            .await;
    }
    let sb = web_sandbox(json!({}));
    for depth in [2_000, 10_000, 50_000] {
        let result = fetch_result(&sb, &format!("{}/deep{depth}", site.uri()), None).await;
        assert!(result.contains(&format!("nested {depth} deep")), "{result}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_to_loopback_and_an_unlisted_loopback_address_are_refused_naming_the_rule() {
    let inside = MockServer::start().await;
    Mock::given(matchers::any())
        .respond_with(ResponseTemplate::new(200).set_body_string("internal secrets"))
        .mount(&inside)
        .await;
    let inside_port = inside.address().port();
    let outside = MockServer::start().await;
    // `localhost` resolves to a loopback address: checked at the redirect, not only at the start.
    Mock::given(matchers::path("/hop"))
        .respond_with(
            ResponseTemplate::new(302)
                .insert_header("location", format!("http://localhost:{inside_port}/admin")),
        )
        .mount(&outside)
        .await;
    Mock::given(matchers::path("/hop-literal"))
        .respond_with(
            ResponseTemplate::new(301)
                .insert_header("location", format!("http://127.0.0.2:{inside_port}/admin")),
        )
        .mount(&outside)
        .await;
    // The redirect targets may be fetched without asking; the guard still refuses them.
    let sb = web_sandbox(json!({"allow_hosts": ["127.0.0.1", "127.0.0.2", "localhost"]}));
    let literal_hop = fetch_result(&sb, &format!("{}/hop-literal", outside.uri()), None).await;
    assert!(
        literal_hop.contains("refused: 127.0.0.2 is a loopback address"),
        "{literal_hop}"
    );
    let hop = fetch_result(&sb, &format!("{}/hop", outside.uri()), None).await;
    assert!(
        hop.contains("web_fetch: refused: localhost resolves to ")
            && hop.contains("a loopback address"),
        "{hop}"
    );
    assert!(hop.contains("web.allow_private_hosts"), "{hop}");
    assert!(!hop.contains("internal secrets"), "{hop}");
    assert!(
        inside
            .received_requests()
            .await
            .unwrap_or_default()
            .is_empty()
    );

    // Without the listing, even the literal address is refused; the cloud metadata
    // address is named as such.
    let strict = Sandbox::new();
    strict.global_config(r#"{"web": {"allow_hosts": ["127.0.0.1", "169.254.169.254"]}}"#);
    let literal = fetch_result(&strict, &format!("{}/admin", inside.uri()), None).await;
    assert!(
        literal.contains("refused: 127.0.0.1 is a loopback address"),
        "{literal}"
    );
    let metadata = fetch_result(&strict, "http://169.254.169.254/latest/meta-data/", None).await;
    assert!(
        metadata.contains("a link-local address (cloud metadata"),
        "{metadata}"
    );

    // Listed, the same host is reached, through the redirect too.
    let listed = web_sandbox(json!({
        "allow_hosts": ["127.0.0.1", "localhost"],
        "allow_private_hosts": ["127.0.0.1", "localhost"]
    }));
    let reached = fetch_result(&listed, &format!("{}/hop", outside.uri()), None).await;
    assert!(reached.contains("internal secrets"), "{reached}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_to_another_host_is_not_followed_without_its_own_call() {
    let other = MockServer::start().await;
    Mock::given(matchers::any())
        .respond_with(ResponseTemplate::new(200).set_body_string("elsewhere"))
        .mount(&other)
        .await;
    let site = MockServer::start().await;
    let target = format!("http://localhost:{}/landing", other.address().port());
    Mock::given(matchers::path("/go"))
        .respond_with(ResponseTemplate::new(302).insert_header("location", target.as_str()))
        .mount(&site)
        .await;
    // Same host, another path: followed.
    Mock::given(matchers::path("/old"))
        .respond_with(ResponseTemplate::new(301).insert_header("location", "/new"))
        .mount(&site)
        .await;
    Mock::given(matchers::path("/new"))
        .respond_with(ResponseTemplate::new(200).set_body_raw("moved here", "text/plain"))
        .mount(&site)
        .await;
    let sb = web_sandbox(json!({"allow_private_hosts": ["127.0.0.1", "localhost"]}));
    let result = fetch_result(&sb, &format!("{}/go", site.uri()), None).await;
    assert!(result.contains(&format!("Redirect: {target}")), "{result}");
    assert!(
        result.contains("redirects to another host; call web_fetch with that URL"),
        "{result}"
    );
    assert!(
        other
            .received_requests()
            .await
            .unwrap_or_default()
            .is_empty()
    );
    let moved = fetch_result(&sb, &format!("{}/old", site.uri()), None).await;
    assert!(
        moved.starts_with(&format!("URL: {}/new", site.uri())),
        "{moved}"
    );
    assert!(moved.ends_with("moved here"), "{moved}");
}

/// A server that answers one request with a `Content-Length` of `total` bytes and writes
/// until the client stops reading; returns how many body bytes it got out.
fn endless_body(total: usize) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/big.txt", listener.local_addr().expect("addr"));
    let written = Arc::new(AtomicUsize::new(0));
    let count = written.clone();
    std::thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else {
            return;
        };
        let mut request = [0u8; 4096];
        let _ = stream.read(&mut request);
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {total}\r\n\r\n"
        );
        if stream.write_all(head.as_bytes()).is_err() {
            return;
        }
        let chunk = vec![b'x'; 64 * 1024];
        while count.load(Ordering::SeqCst) < total {
            match stream.write(&chunk) {
                Ok(n) => count.fetch_add(n, Ordering::SeqCst),
                Err(_) => return,
            };
        }
    });
    (url, written)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_50_mib_body_is_cut_at_the_cap_without_being_downloaded_whole() {
    let total = 50 * 1024 * 1024;
    let (url, written) = endless_body(total);
    let sb = web_sandbox(json!({}));
    let result = fetch_result(&sb, &url, Some(1000)).await;
    assert!(result.contains("[cut at 1000 of "), "{result}");
    assert!(
        result.contains("larger than 5 MiB; only its start was downloaded"),
        "{result}"
    );
    // What the kernel's buffers took on top of the 5 MiB read is far below the 50 MiB.
    let sent = written.load(Ordering::SeqCst);
    assert!(sent < 20 * 1024 * 1024, "{sent} bytes went out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_is_timed_out() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/slow", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        let held: Vec<_> = listener.incoming().take(1).collect();
        std::thread::sleep(Duration::from_secs(30));
        drop(held);
    });
    let sb = web_sandbox(json!({"timeout_seconds": 1}));
    let result = fetch_result(&sb, &url, None).await;
    assert!(
        result.contains("timed out after 1 s (web.timeout_seconds)"),
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unlisted_host_asks_and_without_a_terminal_is_denied_as_network_egress() {
    let sb = Sandbox::new();
    let result = fetch_result(&sb, "https://example.com/", None).await;
    assert!(
        result.contains("operation denied (non-interactive mode)"),
        "{result}"
    );
    assert!(result.contains("network_egress"), "{result}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_search_reads_a_searxng_answer_and_exists_only_when_configured() {
    let searx = MockServer::start().await;
    Mock::given(matchers::path("/search"))
        .and(matchers::query_param("q", "rust agent"))
        .and(matchers::query_param("format", "json"))
        .and(matchers::query_param("language", "en"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "query": "rust agent",
            "results": [
                {"title": "odek", "url": "https://example.com/odek", "content": "A light agent."},
                {"title": "Other", "url": "https://example.com/other", "content": "Heavier."},
                {"title": "Third", "url": "https://example.com/third", "content": "Cut."}
            ]
        })))
        .mount(&searx)
        .await;
    let sb = Sandbox::new();
    sb.global_config(
        &json!({"web_search": {"base_url": searx.uri(), "language": "en"}}).to_string(),
    );
    let server = ScriptedServer::start(vec![
        tools(&[(
            "web_search",
            json!({"query": "rust agent", "max_results": 2}),
        )]),
        text("done"),
    ])
    .await;
    let results = run_and_results(&sb, &server, &[]).await;
    assert_eq!(
        results[0],
        "1. odek\n   https://example.com/odek\n   A light agent.\n2. Other\n   https://example.com/other\n   Heavier."
    );
    let offered = |request: &Value| -> Vec<String> {
        request["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap_or("").to_string())
            .collect()
    };
    assert!(offered(&server.requests()[0]).contains(&"web_search".to_string()));

    let plain = Sandbox::new();
    let server = ScriptedServer::start(vec![text("done")]).await;
    run_and_results(&plain, &server, &[]).await;
    let names = offered(&server.requests()[0]);
    assert!(!names.contains(&"web_search".to_string()), "{names:?}");
    for name in ["glob", "batch_read", "batch_patch", "web_fetch", "clarify"] {
        assert!(
            names.contains(&name.to_string()),
            "{name} missing from {names:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_in_bulk_glob_batch_read_and_a_batch_patch_that_leaves_a_file_untouched() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.work.join("src/deep")).expect("mkdir");
    std::fs::write(sb.work.join("src/a.rs"), "fn a() {}\n").expect("w");
    std::fs::write(sb.work.join("src/deep/b.rs"), "fn b() {}\nfn c() {}\n").expect("w");
    std::fs::write(sb.work.join("notes.txt"), "one\ntwo\n").expect("w");
    let server = ScriptedServer::start(vec![
        tools(&[
            ("glob", json!({"pattern": "src/**/*.rs"})),
            (
                "batch_read",
                json!({"files": [{"path": "src/a.rs"}, {"path": "src/deep/b.rs", "offset": 2}]}),
            ),
        ]),
        tools(&[(
            "batch_patch",
            json!({"patches": [
                {"path": "notes.txt", "old_string": "one", "new_string": "1"},
                {"path": "src/a.rs", "old_string": "fn a", "new_string": "pub fn a"},
                {"path": "notes.txt", "old_string": "three", "new_string": "3"}
            ]}),
        )]),
        text("done"),
    ])
    .await;
    run_and_results(&sb, &server, &[]).await;
    let requests = server.requests();
    let first: Vec<String> = tool_results(&requests[1])
        .iter()
        .map(|r| unwrap_untrusted(r))
        .collect();
    let found: Value = serde_json::from_str(&first[0]).expect("glob answers JSON");
    let mut paths: Vec<&str> = found["matches"]
        .as_array()
        .expect("matches")
        .iter()
        .map(|m| m["path"].as_str().expect("path"))
        .collect();
    paths.sort_unstable();
    assert_eq!(paths, ["src/a.rs", "src/deep/b.rs"]);
    assert_eq!(
        first[1],
        "==> src/a.rs <==\n1|fn a() {}\n\n==> src/deep/b.rs <==\n2|fn c() {}\n[lines 2-2 of 2]"
    );
    let patched = unwrap_untrusted(&tool_results(&requests[2])[2]);
    assert!(
        patched.starts_with("error: batch_patch: 1 of 2 files not changed"),
        "{patched}"
    );
    assert!(
        patched.contains("==> src/a.rs <==\n--- a/src/a.rs"),
        "{patched}"
    );
    assert!(
        patched.contains("not changed: edit 3: batch_patch: old_string not found"),
        "{patched}"
    );
    assert_eq!(
        read(sb.work.join("notes.txt")),
        "one\ntwo\n",
        "untouched: one of its edits failed"
    );
    assert_eq!(read(sb.work.join("src/a.rs")), "pub fn a() {}\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clarify_without_a_terminal_tells_the_model_to_decide() {
    let sb = Sandbox::new();
    let server = ScriptedServer::start(vec![
        tools(&[(
            "clarify",
            json!({"question": "Which port?", "options": ["80", "8080"]}),
        )]),
        text("I chose 8080."),
    ])
    .await;
    let results = run_and_results(&sb, &server, &[]).await;
    assert_eq!(
        results,
        ["no user is available: decide, and state the assumption in your answer"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_tool_name_is_an_error_naming_the_known_ones() {
    let sb = Sandbox::new();
    let server = ScriptedServer::start(vec![text("never")]).await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--tool", "web_fech", "x"]);
    let out = output(cmd).await;
    assert_ne!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("unknown tool \"web_fech\" (available: read_file, write_file, search_files, patch, glob, batch_read, batch_patch, shell, background, delegate_tasks, web_fetch, web_search, browser, clarify, memory, session_search, skill_load, skill_list, plan)"),
        "{stderr}"
    );
    assert!(server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_runs_first_request_stays_under_15_kb_with_every_tool() {
    let sb = Sandbox::new();
    sb.global_config(r#"{"web_search": {"base_url": "http://127.0.0.1:9"}}"#);
    let server = ScriptedServer::start(vec![text("done")]).await;
    run_and_results(&sb, &server, &[]).await;
    let first = &server.requests()[0];
    let bytes = first.to_string().len();
    let tools_bytes = first["tools"].to_string().len();
    assert_eq!(first["tools"].as_array().map(Vec::len), Some(16));
    assert!(tools_bytes <= 12_000, "the tools take {tools_bytes} bytes");
    assert!(bytes <= 15_000, "the first request is {bytes} bytes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trust_for_the_session_remembers_the_host_not_every_host() {
    let site = MockServer::start().await;
    Mock::given(matchers::any())
        .respond_with(ResponseTemplate::new(200).set_body_raw("page text", "text/plain"))
        .mount(&site)
        .await;
    let port = site.address().port();
    let (by_ip, by_name) = (
        format!("http://127.0.0.1:{port}/one"),
        format!("http://localhost:{port}/two"),
    );
    let server = ScriptedServer::start(vec![
        tools(&[("web_fetch", json!({"url": by_ip}))]),
        tools(&[(
            "web_fetch",
            json!({"url": format!("http://127.0.0.1:{port}/three")}),
        )]),
        tools(&[("web_fetch", json!({"url": by_name}))]),
        text("fetched three"),
    ])
    .await;
    let sb = Sandbox::new();
    sb.global_config(r#"{"web": {"allow_private_hosts": ["127.0.0.1", "localhost"]}}"#);
    let cmd = {
        let mut c = sb.odek(&server.base_url());
        c.env("TERM", "xterm").args(["run", "--no-stream", "fetch"]);
        c
    };
    tokio::task::spawn_blocking(move || -> Result<(), rexpect::error::Error> {
        let mut p = rexpect::session::spawn_command(cmd, Some(20_000))?;
        p.exp_string("requires approval")?;
        p.exp_string("risk: network_egress")?;
        p.exp_string("fetches from 127.0.0.1]")?;
        p.exp_string("[t]rust these hosts for this session")?;
        p.send_line("t")?;
        // The second fetch from 127.0.0.1 is not asked about; localhost is.
        p.exp_string("requires approval")?;
        p.exp_string("fetches from localhost")?;
        p.send_line("d")?;
        p.exp_string("fetched three")?;
        p.exp_eof()?;
        Ok(())
    })
    .await
    .expect("join")
    .expect("the approval conversation");
    let requests = server.requests();
    let results: Vec<String> = tool_results(requests.last().expect("request"))
        .iter()
        .map(|r| unwrap_untrusted(r))
        .collect();
    assert!(
        results[0].ends_with("page text") && results[1].ends_with("page text"),
        "{results:?}"
    );
    assert!(
        results[2].starts_with("error: operation denied by user"),
        "{results:?}"
    );
    assert_eq!(site.received_requests().await.map(|r| r.len()), Some(2));
}
