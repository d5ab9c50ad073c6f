//! Two turns of different sessions at once through one runtime: plans, trust decisions and
//! event ids never mix.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate, matchers};

use super::*;
use crate::danger_policy::DangerClass;
use crate::engine::NoopObserver;
use crate::tools::approval::{ApprovalAnswer, ApprovalItem, Approver};

/// Answers the same way for every approval prompt, and counts them.
struct FixedApprover {
    answer: ApprovalAnswer,
    asked: AtomicUsize,
}

impl FixedApprover {
    fn new(answer: ApprovalAnswer) -> Arc<Self> {
        Arc::new(FixedApprover {
            answer,
            asked: AtomicUsize::new(0),
        })
    }
}

#[async_trait::async_trait]
impl Approver for FixedApprover {
    async fn ask(&self, _items: &[ApprovalItem], _cancel: &CancellationToken) -> ApprovalAnswer {
        self.asked.fetch_add(1, Ordering::SeqCst);
        self.answer
    }
}

/// Each conversation (`alpha` or `beta`, by its task) creates its own plan and runs a
/// command that needs approval, twice, then answers. Every answer is delayed, so the two
/// runs overlap.
struct Script {
    order: Mutex<Vec<&'static str>>,
}

impl Respond for Script {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let task = messages
            .iter()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .unwrap_or("");
        let (tag, steps) = if task.contains("alpha") {
            ("a", 2)
        } else {
            ("b", 3)
        };
        self.order.lock().expect("lock").push(tag);
        let results = messages.iter().filter(|m| m["role"] == "tool").count();
        let shell = json!({"command": "python3 -c 'print(1)'"});
        let calls = match results {
            0 => {
                let steps: Vec<Value> = (1..=steps)
                    .map(|i| json!({"id": format!("{tag}{i}"), "title": format!("{tag} step {i}")}))
                    .collect();
                vec![
                    ("plan", json!({"verb": "create", "steps": steps})),
                    ("shell", shell),
                ]
            }
            2 => vec![
                (
                    "plan",
                    json!({"verb": "complete", "step_id": format!("{tag}1")}),
                ),
                ("shell", shell),
            ],
            _ => Vec::new(),
        };
        let message = if calls.is_empty() {
            json!({"role": "assistant", "content": format!("done {tag}")})
        } else {
            let calls: Vec<Value> = calls
                .into_iter()
                .enumerate()
                .map(|(i, (name, args))| {
                    json!({"id": format!("{tag}_{results}_{i}"), "type": "function",
                           "function": {"name": name, "arguments": args.to_string()}})
                })
                .collect();
            json!({"role": "assistant", "content": "", "tool_calls": calls})
        };
        ResponseTemplate::new(200)
            .set_body_json(json!({
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5}
            }))
            .set_delay(std::time::Duration::from_millis(60))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_turns_of_two_sessions_never_share_plans_trust_or_event_ids() {
    let server = MockServer::start().await;
    let script = Arc::new(Script {
        order: Mutex::new(Vec::new()),
    });
    Mock::given(matchers::method("POST"))
        .and(matchers::path("/v1/chat/completions"))
        .respond_with(ScriptRef(script.clone()))
        .mount(&server)
        .await;
    let home = tempfile::tempdir().expect("tempdir");
    let cwd = home.path().join("work");
    std::fs::create_dir_all(&cwd).expect("work dir");
    let config = Config {
        base_url: format!("{}/v1", server.uri()),
        model: "m".into(),
        stream: false,
        ..Config::default()
    };
    let (events, lines) = crate::events::collecting_writer();
    let runtime = Runtime::build(
        config,
        RuntimeOptions {
            home: home.path().to_path_buf(),
            cwd,
            model_source: ModelSource::Http,
            record: None,
            events: Some(events.clone()),
            redactor: Arc::new(Redactor::new()),
        },
    )
    .expect("runtime");

    let alpha = runtime
        .new_session("alpha", vec![Message::system("sys")], "cli", "odek test")
        .expect("alpha");
    let beta = runtime
        .new_session("beta", vec![Message::system("sys")], "serve", "odek test")
        .expect("beta");
    let trusting = FixedApprover::new(ApprovalAnswer::TrustClasses);
    let denying = FixedApprover::new(ApprovalAnswer::Deny);
    let surface = |approver: &Arc<FixedApprover>| Surface {
        approver: Some(approver.clone() as Arc<dyn Approver>),
        output: Arc::new(NoopObserver),
        files: None,
        scope: Default::default(),
    };
    let turn_a = runtime
        .turn(Some(&alpha), surface(&trusting), "run-alpha")
        .expect("turn");
    let turn_b = runtime
        .turn(Some(&beta), surface(&denying), "run-beta")
        .expect("turn");
    let (a, b) = tokio::join!(
        turn_a.run(vec![Message::user("alpha task")], CancellationToken::new()),
        turn_b.run(vec![Message::user("beta task")], CancellationToken::new()),
    );
    let (a, b) = (a.expect("alpha runs"), b.expect("beta runs"));
    events.close();

    let order = script.order.lock().expect("lock").clone();
    assert!(
        order.windows(2).any(|w| w[0] != w[1])
            && order.iter().rposition(|t| *t == "a") > order.iter().position(|t| *t == "b"),
        "the two runs overlapped: {order:?}"
    );
    assert_eq!(a.run.result.as_deref().ok(), Some("done a"));
    assert_eq!(b.run.result.as_deref().ok(), Some("done b"));

    // Plans: each turn's own store, each session's own saved state.
    let ids = |p: &Option<crate::plan::PlanState>| -> Vec<String> {
        p.iter()
            .flat_map(|p| p.steps.iter().map(|s| s.id.clone()))
            .collect()
    };
    assert_eq!(ids(&a.run.plan), ["a1", "a2"]);
    assert_eq!(ids(&b.run.plan), ["b1", "b2", "b3"]);
    assert_eq!(ids(&alpha.plan()), ["a1", "a2"]);
    assert_eq!(
        ids(&runtime.sessions().load(beta.id()).expect("beta saved").plan),
        ["b1", "b2", "b3"]
    );

    // Trust: alpha trusted code execution once and was not asked again; beta, which
    // denied, was asked both times and trusts nothing.
    assert_eq!(trusting.asked.load(Ordering::SeqCst), 1);
    assert_eq!(denying.asked.load(Ordering::SeqCst), 2);
    assert_eq!(alpha.trust().classes(), [DangerClass::CodeExecution]);
    assert!(beta.trust().classes().is_empty());

    // Events: two runs, each stamped with its own run id and its own session only.
    let lines = lines.lock().expect("lock").clone();
    let mut runs: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for line in lines {
        let run = line["run_id"].as_str().unwrap_or("").to_string();
        runs.entry(run).or_default().push(line);
    }
    assert_eq!(runs.len(), 2, "{:?}", runs.keys());
    for events in runs.values() {
        let session = events[0]["session_id"]
            .as_str()
            .expect("session id")
            .to_string();
        assert!(
            events.iter().all(|e| e["session_id"] == session.as_str()),
            "one session per run"
        );
        let created: Vec<u64> = events
            .iter()
            .filter(|e| e["type"] == "plan_created")
            .filter_map(|e| e["data"]["steps"].as_u64())
            .collect();
        let expected = if session == alpha.id() { 2 } else { 3 };
        assert_eq!(created, [expected], "plan events of the run's own plan");
        let terminal = events
            .iter()
            .filter(|e| e["type"] == "run_completed" || e["type"] == "run_failed")
            .count();
        assert_eq!(terminal, 1);
    }
}

/// Lets the test keep a handle on the script it mounts.
struct ScriptRef(Arc<Script>);

impl Respond for ScriptRef {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        self.0.respond(request)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_runs_one_turn_at_a_time() {
    let home = tempfile::tempdir().expect("tempdir");
    let config = Config {
        base_url: "http://127.0.0.1:9/v1".into(),
        ..Config::default()
    };
    let runtime = Runtime::build(
        config,
        RuntimeOptions {
            home: home.path().to_path_buf(),
            cwd: home.path().to_path_buf(),
            model_source: ModelSource::Http,
            record: None,
            events: None,
            redactor: Arc::new(Redactor::new()),
        },
    )
    .expect("runtime");
    let session = runtime
        .new_session("t", vec![Message::system("s")], "cli", "odek test")
        .expect("session");
    assert!(session.start_turn());
    let turn = runtime
        .turn(
            Some(&session),
            Surface {
                approver: None,
                output: Arc::new(NoopObserver),
                files: None,
                scope: Default::default(),
            },
            "run-1",
        )
        .expect("turn");
    let refused = turn
        .run(vec![Message::user("x")], CancellationToken::new())
        .await;
    assert!(matches!(refused, Err(RuntimeError::TurnInProgress(_))));
    let other = runtime.open_session(session.id(), "odek other");
    assert!(
        matches!(other, Err(RuntimeError::Session(SessionError::Busy { .. }))),
        "a second writer of the same session is refused"
    );
}

#[test]
fn the_redactor_learns_the_secrets_of_mcp_servers() {
    let mut config = Config::default();
    let server: crate::config::McpServerConfig = crate::config::McpServerConfig {
        command: None,
        args: Vec::new(),
        env: BTreeMap::from([(
            "GITHUB_TOKEN".to_string(),
            "ghp_0123456789abcdef".to_string(),
        )]),
        url: Some("https://mcp.example.com/mcp".into()),
        headers: BTreeMap::from([(
            "Authorization".to_string(),
            "Bearer tok-0123456789abcdef".to_string(),
        )]),
        timeout_seconds: 30,
        auto_approve: Vec::new(),
        disabled: false,
    };
    config.mcp_servers.insert("web".into(), server);
    let redactor = build_redactor(&config);
    let said = redactor.redact("token tok-0123456789abcdef and ghp_0123456789abcdef");
    assert!(!said.contains("tok-0123456789abcdef"), "{said}");
    assert!(!said.contains("ghp_0123456789abcdef"), "{said}");
}
