//! `delegate_tasks` through the real binary: a parent `odek run` whose model delegates to
//! three sub-agents, against one model server that answers each conversation by its first
//! user message — three children really at once (a barrier), results in task order, their
//! tokens in the run's usage, events, no key in any child's environment or command line, no
//! parent plan in any child request, and Ctrl-C taking every child down.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::support::keyed::{Answer, KeyedServer};
use crate::support::*;

const KEY: &str = "sk-parent-ZyXwVuTsRqPoNmLkJiHg9876543210";
const GOALS: [&str; 3] = [
    "alpha: count the files",
    "beta: list the TODOs",
    "gamma: read the README",
];

fn tool_call(name: &str, args: Value) -> Value {
    json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": format!("call_{name}"), "type": "function", "function": {"name": name, "arguments": args.to_string()}}]})
}

fn results_in(request: &Value) -> usize {
    request["messages"]
        .as_array()
        .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count())
}

/// Children held until `expected` of them have asked (or `release` fires).
struct Barrier {
    arrived: AtomicUsize,
    all_here: Notify,
    release: Notify,
    expected: usize,
    hold_forever: bool,
}

impl Barrier {
    fn new(expected: usize, hold_forever: bool) -> Arc<Self> {
        Arc::new(Barrier {
            arrived: AtomicUsize::new(0),
            all_here: Notify::new(),
            release: Notify::new(),
            expected,
            hold_forever,
        })
    }

    async fn arrive(&self) {
        let release = self.release.notified();
        if self.arrived.fetch_add(1, Ordering::SeqCst) + 1 >= self.expected {
            self.all_here.notify_waiters();
        }
        if self.hold_forever {
            std::future::pending::<()>().await;
        }
        let _ = tokio::time::timeout(Duration::from_secs(20), release).await;
    }

    async fn wait_all(&self) {
        for _ in 0..2000 {
            if self.arrived.load(Ordering::SeqCst) >= self.expected {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!(
            "only {} children arrived",
            self.arrived.load(Ordering::SeqCst)
        );
    }
}

/// The parent makes a plan, delegates the three goals, then answers; each child answers
/// its goal after the barrier.
fn script(barrier: Arc<Barrier>) -> Answer {
    Arc::new(move |first: String, request: Value| {
        let barrier = barrier.clone();
        Box::pin(async move {
            if first == "split the work" {
                return match results_in(&request) {
                    0 => tool_call(
                        "plan",
                        json!({"verb": "create", "steps": [
                        {"id": "s1", "title": "Survey the repository in three parts"}]}),
                    ),
                    1 => tool_call(
                        "delegate_tasks",
                        json!({"tasks": GOALS.iter().map(|g| json!({
                        "goal": g, "context": "Step s1: Survey the repository in three parts"})).collect::<Vec<_>>()}),
                    ),
                    _ => json!({"role": "assistant", "content": "All three parts are surveyed."}),
                };
            }
            barrier.arrive().await;
            let goal = GOALS
                .iter()
                .find(|g| first.starts_with(*g))
                .copied()
                .unwrap_or("unknown");
            json!({"role": "assistant", "content": format!("result of {goal}")})
        })
    })
}

fn sandbox(server: &KeyedServer) -> (Sandbox, std::process::Command) {
    let sb = Sandbox::new();
    sb.global_config(
        &json!({"stream": false, "context_window": 100000,
                "dangerous": {"classes": {"system_write": "allow"}}})
        .to_string(),
    );
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("ODEK_API_KEY", KEY);
    (sb, cmd)
}

/// The pids of this test's children: `odek subagent` processes whose task file lies in
/// the test's temporary directory.
fn children_of(sb: &Sandbox) -> Vec<u32> {
    let marker = sb.home.join("tasks").display().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(" subagent --task ") && cmdline.contains(&marker) {
            found.push(pid);
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_children_run_at_once_and_answer_in_task_order() {
    let barrier = Barrier::new(3, false);
    let server = KeyedServer::start(script(barrier.clone())).await;
    let (sb, mut cmd) = sandbox(&server);
    let events = sb.tmp().join("events.jsonl");
    cmd.args(["run", "--events-jsonl"])
        .arg(&events)
        .arg("split the work");
    let run = tokio::task::spawn_blocking(move || cmd.output().expect("runs"));
    // All three children are in their first model call at the same moment.
    barrier.wait_all().await;
    let pids = children_of(&sb);
    assert_eq!(pids.len(), 3, "{pids:?}");
    for pid in &pids {
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        for (what, bytes) in [("environ", environ), ("cmdline", cmdline)] {
            assert!(
                !String::from_utf8_lossy(&bytes).contains(KEY),
                "the key is in the {what} of child {pid}"
            );
        }
    }
    barrier.release.notify_waiters();
    let out = run.await.expect("join");
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("All three parts are surveyed."));

    let requests = server.requests();
    let last = requests
        .iter()
        .rfind(|r| crate::support::keyed::first_user(r) == "split the work")
        .expect("the parent's last request");
    let result = tool_results(last)
        .last()
        .cloned()
        .expect("the delegate result");
    let positions: Vec<usize> = GOALS
        .iter()
        .map(|g| result.find(&format!("result of {g}")).expect(g))
        .collect();
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "not in task order: {result}"
    );
    for n in 1..=3 {
        assert!(result.contains(&format!("sub-agent {n}/3: ok")), "{result}");
        assert!(
            result.contains(&format!("source=\"subagent:{n}\"")),
            "{result}"
        );
    }
    // No child saw the parent's plan or history.
    for request in requests
        .iter()
        .filter(|r| crate::support::keyed::first_user(r) != "split the work")
    {
        let text = request.to_string();
        assert!(
            !text.contains("[Current plan"),
            "a child got the plan: {text}"
        );
        assert!(
            !text.contains("split the work"),
            "a child got the parent's task"
        );
    }
    // Events: one start and one end per child, and the children's tokens in the run's.
    let lines: Vec<Value> = read(&events)
        .lines()
        .map(|l| serde_json::from_str(l).expect("event"))
        .collect();
    let of = |t: &str| lines.iter().filter(|e| e["type"] == t).count();
    assert_eq!(of("subagent_started"), 3);
    assert_eq!(of("subagent_finished"), 3);
    assert!(
        lines
            .iter()
            .filter(|e| e["type"] == "subagent_finished")
            .all(|e| e["data"]["status"] == "ok")
    );
    assert!(
        !read(&events).contains("alpha: count"),
        "a goal's text reached the events"
    );
    let done = lines
        .iter()
        .find(|e| e["type"] == "run_completed")
        .expect("run_completed");
    assert_eq!(
        done["data"]["input_tokens"], 600,
        "3 parent calls + 3 children, 100 each"
    );
    // The children's sessions are saved, each naming its parent.
    let parent = lines[0]["session_id"]
        .as_str()
        .expect("session")
        .to_string();
    let children: Vec<Value> = std::fs::read_dir(sb.home.join("sessions"))
        .expect("sessions")
        .flatten()
        .filter_map(|e| {
            serde_json::from_str::<Value>(&std::fs::read_to_string(e.path()).ok()?).ok()
        })
        .filter(|s| s["origin"] == "subagent")
        .collect();
    assert_eq!(children.len(), 3);
    assert!(
        children
            .iter()
            .all(|c| c["parent_session"] == parent.as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_on_the_parent_leaves_no_child_behind() {
    let barrier = Barrier::new(3, true);
    let server = KeyedServer::start(script(barrier.clone())).await;
    let (sb, mut cmd) = sandbox(&server);
    cmd.args(["run", "split the work"]);
    let child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("starts");
    barrier.wait_all().await;
    assert_eq!(children_of(&sb).len(), 3);
    let pid = i32::try_from(child.id()).expect("pid");
    // SAFETY: sends SIGINT to the parent this test started.
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(pid, libc::SIGINT);
    }
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().expect("exits"))
        .await
        .expect("join");
    assert_eq!(out.status.code(), Some(130));
    for _ in 0..200 {
        if children_of(&sb).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("children left behind: {:?}", children_of(&sb));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trusted_childs_call_is_asked_on_the_parents_terminal() {
    let command = "python3 -c \"open('made.txt','w').write('ok')\"";
    let answer: Answer = Arc::new(move |first: String, request: Value| {
        Box::pin(async move {
            match (first == "delegate it", results_in(&request)) {
                (true, 0) => tool_call(
                    "delegate_tasks",
                    json!({"tasks": [
                    {"goal": "make the file", "trust_level": "trusted"}]}),
                ),
                (true, _) => json!({"role": "assistant", "content": "The sub-agent made it."}),
                (false, 0) => tool_call("shell", json!({"command": command})),
                (false, _) => json!({"role": "assistant", "content": "made"}),
            }
        })
    });
    let server = KeyedServer::start(answer).await;
    let (sb, mut cmd) = sandbox(&server);
    cmd.env("TERM", "xterm").args(["run", "delegate it"]);
    tokio::task::spawn_blocking(move || -> Result<(), rexpect::error::Error> {
        let mut p = rexpect::session::spawn_command(cmd, Some(20_000))?;
        p.exp_string("requires approval")?;
        p.exp_string("sub-agent 1/1: shell")?;
        p.exp_string("made.txt")?;
        p.exp_string("[a]pprove")?;
        p.send_line("a")?;
        p.exp_string("The sub-agent made it.")?;
        p.exp_eof()?;
        Ok(())
    })
    .await
    .expect("join")
    .expect("the approval on the parent's terminal");
    assert_eq!(read(sb.work.join("made.txt")), "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_past_its_limit_ends_as_timeout_and_its_session_is_listed_only_with_all() {
    let answer: Answer = Arc::new(move |first: String, request: Value| {
        Box::pin(async move {
            match (first == "delegate a slow one", results_in(&request)) {
                (true, 0) => tool_call(
                    "delegate_tasks",
                    json!({"tasks": [{"goal": "wait for ever"}]}),
                ),
                (true, _) => json!({"role": "assistant", "content": "It timed out."}),
                // The closing summary a limit asks for (a request without tools).
                (false, _) if request["tools"].is_null() => {
                    json!({"role": "assistant", "content": "Nothing finished."})
                }
                // The child's model never answers: its own limit ends it.
                (false, _) => std::future::pending().await,
            }
        })
    });
    let server = KeyedServer::start(answer).await;
    let (sb, mut cmd) = sandbox(&server);
    // The shortest limit a configuration may set.
    sb.global_config(
        &json!({"stream": false, "context_window": 100000, "subagents": {"timeout_seconds": 10},
                "dangerous": {"classes": {"system_write": "allow"}}})
        .to_string(),
    );
    cmd.args(["run", "delegate a slow one"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let requests = server.requests();
    let last = requests
        .iter()
        .rfind(|r| crate::support::keyed::first_user(r) == "delegate a slow one")
        .expect("the parent's last request");
    let result = tool_results(last).last().cloned().expect("result");
    assert!(result.contains("sub-agent 1/1: timeout"), "{result}");
    assert!(children_of(&sb).is_empty(), "the child is gone");
    // `session list` shows the parent's session; the child's only with --all.
    let mut list = sb.odek(&server.base_url());
    list.args(["session", "list"]);
    let listed = String::from_utf8_lossy(&output(list).await.stdout).to_string();
    assert!(listed.contains("delegate a slow one"), "{listed}");
    assert!(!listed.contains("wait for ever"), "{listed}");
    let mut all = sb.odek(&server.base_url());
    all.args(["session", "list", "--all"]);
    let everything = String::from_utf8_lossy(&output(all).await.stdout).to_string();
    assert!(everything.contains("wait for ever"), "{everything}");
}

/// A parent whose three children each run `sleep <seconds>` (safe, so an untrusted child
/// runs it), then stop answering.
async fn sleeping_children(seconds: &str) -> (KeyedServer, Sandbox, std::process::Child) {
    let command = format!("sleep {seconds}");
    let answer: Answer = Arc::new(move |first: String, request: Value| {
        let command = command.clone();
        Box::pin(async move {
            if first == "after" {
                return json!({"role": "assistant", "content": "ok"});
            }
            if first == "split the work" {
                return match results_in(&request) {
                    0 => tool_call(
                        "delegate_tasks",
                        json!({"tasks": GOALS.iter().map(|g| json!({"goal": g})).collect::<Vec<_>>()}),
                    ),
                    _ => json!({"role": "assistant", "content": "stopped"}),
                };
            }
            match results_in(&request) {
                0 => tool_call("shell", json!({"command": command})),
                _ => json!({"role": "assistant", "content": "slept"}),
            }
        })
    });
    let server = KeyedServer::start(answer).await;
    let (sb, mut cmd) = sandbox(&server);
    cmd.args(["run", "split the work"]);
    let mut parent = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("starts");
    let needle = format!("sleep {seconds}");
    for _ in 0..1500 {
        if processes_with(&needle).len() >= 3 {
            return (server, sb, parent);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let _ = parent.kill();
    let _ = parent.wait();
    panic!("the children's commands never started");
}

async fn all_gone(sb: &Sandbox, needle: &str) {
    for _ in 0..1000 {
        if children_of(sb).is_empty() && processes_with(needle).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "left behind: children {:?}, commands {:?}",
        children_of(sb),
        processes_with(needle)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_the_children_and_the_commands_they_started() {
    let (_server, sb, parent) = sleeping_children("3011").await;
    let pid = i32::try_from(parent.id()).expect("pid");
    // SAFETY: sends SIGINT to the parent this test started.
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(pid, libc::SIGINT);
    }
    let out = tokio::task::spawn_blocking(move || parent.wait_with_output().expect("exits"))
        .await
        .expect("join");
    assert_eq!(out.status.code(), Some(130));
    all_gone(&sb, "sleep 3011").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_killed_outright_takes_its_children_and_their_commands_along() {
    let (server, sb, mut parent) = sleeping_children("3012").await;
    // Issue 43, F11: the task files are in a private folder under the home, not in /tmp.
    let tasks = sb.home.join("tasks");
    let files = || -> Vec<String> {
        std::fs::read_dir(&tasks)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(files().len(), 3, "{:?}", files());
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&tasks)
        .expect("folder")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
    parent.kill().expect("SIGKILL");
    let _ = parent.wait();
    all_gone(&sb, "sleep 3012").await;
    // Killed outright, the parent could not remove them; the next start does.
    assert_eq!(files().len(), 3, "{:?}", files());
    let mut next = sb.odek(&server.base_url());
    next.args(["run", "--ephemeral", "after"]);
    let out = output(next).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(files().is_empty(), "{:?}", files());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_subagents_takes_the_tool_and_its_plan_sentence_away() {
    let server = ScriptedServer::start(vec![text("one"), text("two")]).await;
    let sb = Sandbox::new();
    let offered = |request: &Value| -> (bool, bool) {
        let tools = request["tools"].to_string();
        let system = request["messages"][0]["content"]
            .as_str()
            .unwrap_or("")
            .to_string();
        (
            tools.contains("\"delegate_tasks\""),
            system.contains("Before delegate_tasks"),
        )
    };
    let mut with = sb.odek(&server.base_url());
    with.args(["run", "--ephemeral", "x"]);
    assert_eq!(output(with).await.status.code(), Some(0));
    let mut without = sb.odek(&server.base_url());
    without.args(["run", "--ephemeral", "--no-subagents", "x"]);
    assert_eq!(output(without).await.status.code(), Some(0));
    let requests = server.requests();
    assert_eq!(offered(&requests[0]), (true, true));
    assert_eq!(offered(&requests[1]), (false, false));
}

/// Children that never finish on their own: each calls `shell` again after every result.
fn spending_script(barrier: Arc<Barrier>) -> Answer {
    // Only the children's first requests wait (a closing summary's request starts afresh).
    let first_requests = Arc::new(AtomicUsize::new(0));
    Arc::new(move |first: String, request: Value| {
        let barrier = barrier.clone();
        let first_requests = first_requests.clone();
        Box::pin(async move {
            let done = results_in(&request);
            if first == "spend it" {
                return match done {
                    0 => tool_call(
                        "delegate_tasks",
                        json!({"tasks": (1..=8).map(|n| json!({"goal": format!("task {n}: keep going")})).collect::<Vec<_>>()}),
                    ),
                    _ => json!({"role": "assistant", "content": "Delegated."}),
                };
            }
            if done == 0 && first_requests.fetch_add(1, Ordering::SeqCst) < barrier.expected {
                barrier.arrive().await;
            }
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": format!("call_{done}"), "type": "function",
                 "function": {"name": "shell", "arguments": json!({"command": "echo step"}).to_string()}}]})
        })
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_delegate_call_keeps_within_max_cost_usd_its_children_sharing_what_is_left() {
    let barrier = Barrier::new(8, false);
    let server = KeyedServer::start(spending_script(barrier.clone())).await;
    let sb = Sandbox::new();
    // Every model call (100 prompt + 10 completion tokens) costs $0.011.
    sb.global_config(
        &json!({"stream": false, "context_window": 100000,
                "pricing": {"test-model": {"input": 100, "cached_input": 100, "output": 100}},
                "subagents": {"max_concurrency": 8, "max_iter": 60},
                "dangerous": {"classes": {"system_write": "allow"}}})
        .to_string(),
    );
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("ODEK_API_KEY", KEY)
        .args(["run", "--max-cost-usd", "0.5", "spend it"]);
    let run = tokio::task::spawn_blocking(move || cmd.output().expect("runs"));
    barrier.wait_all().await;
    // Each child's task file carries its share of what is left after the parent's first
    // call ($0.489): the shares never add up to more.
    let mut shares = Vec::new();
    for entry in std::fs::read_dir(sb.home.join("tasks"))
        .expect("tasks")
        .flatten()
    {
        let task: Value = serde_json::from_str(&read(entry.path())).expect("task json");
        shares.push(task["max_cost_usd"].as_f64().unwrap_or(0.0));
    }
    barrier.release.notify_waiters();
    let out = run.await.expect("join");
    assert_eq!(shares.len(), 8, "{shares:?}");
    assert!(
        shares.iter().all(|s| *s > 0.0) && shares.iter().sum::<f64>() <= 0.489 + 1e-9,
        "{shares:?}"
    );
    // The total stays near the budget: each child past its share by at most the call that
    // passed it and its closing summary, where the children alone would have made up to
    // 8 × 60 calls.
    let calls = server.requests().len();
    let spent = calls as f64 * 0.011;
    assert!(
        spent <= 0.5 + 16.0 * 0.011,
        "{calls} calls, ${spent:.3}: {}",
        show(&out)
    );
    assert!(matches!(out.status.code(), Some(0 | 4)), "{}", show(&out));
}

/// Issue 60, M5: a provider header's `${VAR}` is kept from every child's environment, so a
/// sub-agent gets the parent's resolved headers on its descriptor, beside the key: the
/// child's requests carry the header, and its commands see neither the variable nor the value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_sends_the_parents_provider_headers_without_their_variable() {
    let value = "gwhdr-child-0123456789abcdef";
    let answer: Answer = Arc::new(move |first: String, request: Value| {
        Box::pin(async move {
            match (first == "delegate it", results_in(&request)) {
                (true, 0) => tool_call(
                    "delegate_tasks",
                    json!({"tasks": [{"goal": "show the environment"}]}),
                ),
                (true, _) => json!({"role": "assistant", "content": "The child looked."}),
                (false, 0) => tool_call("shell", json!({"command": "env"})),
                (false, _) => json!({"role": "assistant", "content": "looked"}),
            }
        })
    });
    let server = KeyedServer::start(answer).await;
    let sb = Sandbox::new();
    sb.global_config(
        &json!({"stream": false, "context_window": 100000,
                "providers": {"gw": {"base_url": server.base_url(), "model": "test-model",
                    "headers": {"x-gw-auth": "${GW_HDR}"}}}})
        .to_string(),
    );
    let mut cmd = sb.odek(&server.base_url());
    cmd.env_remove("ODEK_BASE_URL")
        .env_remove("ODEK_MODEL")
        .env("ODEK_API_KEY", KEY)
        .env("GW_HDR", value)
        .args(["run", "--provider", "gw", "--yolo", "delegate it"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let heads = server.heads();
    assert_eq!(heads.len(), 4, "two requests each: {heads:?}");
    for head in &heads {
        assert!(
            head.to_ascii_lowercase()
                .contains(&format!("x-gw-auth: {value}")),
            "every request, the child's too, carries the header: {head}"
        );
    }
    let requests = server.requests();
    let child_env = requests
        .iter()
        .filter(|r| crate::support::keyed::first_user(r) != "delegate it")
        .flat_map(tool_results)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        child_env.contains("HOME="),
        "the child's command ran: {child_env}"
    );
    assert!(!child_env.contains("GW_HDR"), "{child_env}");
    assert!(!child_env.contains(value), "{child_env}");
}
