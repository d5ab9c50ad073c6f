//! The browser's processes and profile through the real binary and a real headless
//! Chromium: odek killed outright leaves no Chromium process (and the next browser sweeps
//! the profile it left), a normal end leaves neither a process nor the `odek-browser-*`
//! profile and Chromium's socket folder, and a configured program that is not a browser is
//! a tool error the run goes on after.

use std::path::Path;

use serde_json::json;
use wiremock::{Mock, MockServer, ResponseTemplate, matchers};

use crate::support::*;

/// A server on loopback whose `/` is a small page.
async fn site() -> MockServer {
    let site = MockServer::start().await;
    Mock::given(matchers::path("/"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            "<html><title>Up</title><p>The dev server is up.</p></html>",
            "text/html; charset=utf-8",
        ))
        .mount(&site)
        .await;
    site
}

/// The processes of the sandbox's Chromium: every process whose environment holds the
/// sandbox's `TMPDIR` (each of the browser's helpers inherits it, whatever its command line
/// or process group) and whose command line names Chromium or Chrome.
#[cfg(target_os = "linux")]
fn browser_processes(sb: &Sandbox) -> Vec<String> {
    processes_in_env(&format!("TMPDIR={}", sb.tmp().display()))
        .into_iter()
        .map(|(_, command)| command)
        .filter(|c| c.contains("chrom"))
        .collect()
}

/// Without `/proc`: the processes whose command line holds the sandbox's temporary folder
/// (the browser's own holds its profile there).
#[cfg(not(target_os = "linux"))]
fn browser_processes(sb: &Sandbox) -> Vec<String> {
    let tmp = sb.tmp().display().to_string();
    processes_with(&tmp).iter().map(u32::to_string).collect()
}

/// Waits (up to 5 s) until the sandbox's Chromium is gone (zombies aside: their
/// `environ` is empty).
async fn browser_gone(sb: &Sandbox) {
    for _ in 0..500 {
        if browser_processes(sb).is_empty() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("left running: {:#?}", browser_processes(sb));
}

/// What browsers left in the sandbox's temporary folder: `odek-browser-*` profiles and
/// Chromium's socket folders (`org.chromium.Chromium.*`).
fn leftovers(tmp: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(tmp)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| {
                    name.starts_with("odek-browser-") || name.starts_with("org.chromium.")
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Runs `odek run` whose model opens `url` in the browser, then answers; returns the
/// browser's result.
async fn open_and_end(sb: &Sandbox, url: &str) -> String {
    let server = ScriptedServer::start(vec![
        tools(&[("browser", json!({"action": "open", "url": url}))]),
        text("done"),
    ])
    .await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("ODEK_BROWSER", "true")
        .args(["run", "open the dev server"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    tool_results(&server.requests()[1]).remove(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odek_killed_outright_leaves_no_browser_running() {
    let sb = Sandbox::new();
    let site = site().await;
    let hold = Hold::new();
    let server = ScriptedServer::start(vec![
        tools(&[("browser", json!({"action": "open", "url": site.uri()}))]),
        Reply::Held(hold.clone(), Box::new(text("never sent"))),
    ])
    .await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("ODEK_BROWSER", "true")
        .args(["run", "open the dev server"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut odek = cmd.spawn().expect("odek starts");
    hold.wait_reached().await;
    let requests = server.requests();
    let opened = tool_results(&requests[1]);
    assert!(opened[0].contains("The dev server is up."), "{opened:?}");
    let running = browser_processes(&sb);
    assert!(
        running.len() >= 2,
        "the browser and its helpers: {running:#?}"
    );
    odek.kill().expect("SIGKILL");
    let _ = odek.wait();
    browser_gone(&sb).await;
    hold.release();
    // Its profile and socket folder are left; the next browser sweeps them away.
    let left = leftovers(&sb.tmp());
    assert_eq!(left.len(), 2, "{left:?}");
    let opened = open_and_end(&sb, &site.uri()).await;
    assert!(opened.contains("The dev server is up."), "{opened}");
    assert_eq!(leftovers(&sb.tmp()), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_normal_end_leaves_no_browser_and_no_profile_folder() {
    let sb = Sandbox::new();
    let site = site().await;
    let opened = open_and_end(&sb, &site.uri()).await;
    assert!(opened.contains("The dev server is up."), "{opened}");
    browser_gone(&sb).await;
    assert_eq!(leftovers(&sb.tmp()), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_program_that_is_not_a_browser_is_a_tool_error_and_the_run_goes_on() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let fake = sb.dir.path().join("not-chrome");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho 'no such option: --headless=new' >&2\nexit 2\n",
    )
    .expect("write");
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let server = ScriptedServer::start(vec![
        tools(&[(
            "browser",
            json!({"action": "open", "url": "http://127.0.0.1:9/"}),
        )]),
        text("the browser could not start"),
    ])
    .await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("ODEK_BROWSER", "true")
        .env("ODEK_BROWSER_EXECUTABLE", &fake)
        .args(["run", "open the page"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("the browser could not start"));
    let result = tool_results(&server.requests()[1]).remove(0);
    let expected = format!(
        "browser: {} did not start as a browser (the browser ended); it said: no such \
         option: --headless=new; set browser.executable to a Chromium or Chrome",
        fake.display()
    );
    assert!(result.contains(&expected), "{result}");
    assert_eq!(leftovers(&sb.tmp()), Vec::<String>::new());
}

/// After `close`, odek has no ended children: what it adopted of the browser (its helpers,
/// and the crash handler that runs in a session of its own) is reaped, not left as zombies
/// for as long as odek runs (a REPL, `odek serve`).
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_browser_leaves_no_ended_process_behind() {
    let sb = Sandbox::new();
    let site = site().await;
    let server = ScriptedServer::start(vec![
        tools(&[("browser", json!({"action": "open", "url": site.uri()}))]),
        tools(&[("browser", json!({"action": "close"}))]),
        tools(&[(
            "shell",
            json!({"command": "ps -o stat=,comm= --ppid $PPID"}),
        )]),
        text("done"),
    ])
    .await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("ODEK_BROWSER", "true")
        .env("ODEK_DANGEROUS_ACTION", "allow")
        .args(["run", "open the dev server, close it, list your children"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let opened = tool_results(&server.requests()[1]).remove(0);
    assert!(opened.contains("The dev server is up."), "{opened}");
    let children = tool_results(&server.requests()[3])
        .pop()
        .unwrap_or_default();
    assert!(children.contains("sh"), "{children}");
    let ended: Vec<&str> = children
        .lines()
        .filter(|l| l.trim_start().starts_with('Z'))
        .collect();
    assert!(
        ended.is_empty(),
        "zombies under odek after close: {ended:?}\n{children}"
    );
}
