use super::*;
use crate::llm::{
    ChatModel, ChatRequest, ChatResponse, DeltaSink, LlmError, Message, Role, ToolCall, Usage,
};
use crate::plan::PlanStore;
use crate::redact::Redactor;
use crate::tools::ToolRegistry;
use crate::tools::approval::Gate;
use crate::tools::danger::DangerPolicy;
use crate::tools::{Tool, ToolContext, ToolError};
use crate::transcript::TranscriptDelta;
use async_trait::async_trait;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Plays scripted assistant messages and records every request's messages.
struct Scripted {
    replies: Mutex<Vec<Message>>,
    seen: Mutex<Vec<Vec<Message>>>,
}

impl Scripted {
    fn new(replies: Vec<Message>) -> Arc<Self> {
        let mut r = replies;
        r.reverse();
        Arc::new(Scripted {
            replies: Mutex::new(r),
            seen: Mutex::new(Vec::new()),
        })
    }
}

#[async_trait]
impl ChatModel for Scripted {
    fn model_name(&self) -> &str {
        "scripted"
    }
    async fn complete(
        &self,
        req: &ChatRequest<'_>,
        _sink: Option<DeltaSink<'_>>,
    ) -> Result<ChatResponse, LlmError> {
        self.seen.lock().expect("lock").push(req.messages.to_vec());
        let next = self.replies.lock().expect("lock").pop();
        match next {
            Some(message) => Ok(ChatResponse {
                message,
                usage: Usage {
                    input_tokens: 10,
                    output_tokens: 5,
                    ..Default::default()
                },
                finish_reason: None,
            }),
            None => Err(LlmError::Protocol("script exhausted".into())),
        }
    }
}

/// Sleeps `ms` then echoes; panics on "boom"; fails on "fail".
struct Echo;

#[async_trait]
impl Tool for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "echo"
    }
    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({"type":"object","properties":{"text":{"type":"string"},"ms":{"type":"integer"}}})
    }
    async fn call(&self, args: &str, _ctx: &ToolContext) -> Result<String, ToolError> {
        let v: serde_json::Value =
            serde_json::from_str(args).map_err(|e| ToolError(e.to_string()))?;
        let text = v["text"].as_str().unwrap_or("").to_string();
        if let Some(ms) = v["ms"].as_u64() {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        match text.as_str() {
            "boom" => panic!("kaboom"),
            "fail" => Err(ToolError("it failed".into())),
            _ => Ok(text),
        }
    }
}

fn call(id: &str, args: &str) -> ToolCall {
    ToolCall::new(id, "echo", args)
}

fn with_calls(calls: Vec<ToolCall>) -> Message {
    let mut m = Message::assistant("");
    m.tool_calls = calls;
    m
}

fn engine(model: Arc<Scripted>, max_iterations: u32, budgets: Budgets) -> Engine {
    Engine::new(EngineParts {
        model,
        tools: Arc::new(ToolRegistry::new(vec![Arc::new(Echo)])),
        gate: Arc::new(Gate::new(
            DangerPolicy::default(),
            None,
            "config.json",
            Default::default(),
        )),
        plan: None,
        redactor: Arc::new(Redactor::new()),
        observer: Arc::new(NoopObserver),
        taint: Default::default(),
        turn_block: None,
        checkpoints: None,
        hooks: None,
        jobs: None,
        settings: EngineSettings {
            pricing: Default::default(),
            max_iterations,
            max_tool_parallel: 4,
            stream: false,
            budgets,
            cwd: std::env::temp_dir(),
            context_window: 0,
            compaction: crate::config::CompactionConfig {
                enabled: false,
                ..Default::default()
            },
            plan_placement: crate::plan::PlanPlacement::Tail,
            images: true,
        },
        files: None,
        notes: None,
    })
}

fn tool_contents(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| {
            crate::untrusted::unwrap(&m.content).map_or(m.content.clone(), |u| u.body.to_string())
        })
        .collect()
}

#[tokio::test]
async fn parallel_results_come_back_in_call_order() {
    let model = Scripted::new(vec![
        with_calls(vec![
            call("a", r#"{"text":"first","ms":120}"#),
            call("b", r#"{"text":"second","ms":10}"#),
            call("c", r#"{"text":"third","ms":60}"#),
            call("d", r#"{"text":"fourth","ms":1}"#),
        ]),
        Message::assistant("done"),
    ]);
    let e = engine(model.clone(), 5, Budgets::default());
    let out = e
        .run(
            Conversation::new(vec![Message::user("go")]),
            None,
            CancellationToken::new(),
        )
        .await;
    assert_eq!(out.result.expect("answer"), "done");
    assert_eq!(
        tool_contents(&out.messages),
        vec!["first", "second", "third", "fourth"]
    );
    let ids: Vec<_> = out
        .messages
        .iter()
        .filter_map(|m| m.tool_call_id.clone())
        .collect();
    assert_eq!(ids, vec!["a", "b", "c", "d"]);
}

#[tokio::test]
async fn failures_become_results_and_the_run_goes_on() {
    let model = Scripted::new(vec![
        with_calls(vec![
            ToolCall::new("1", "nope", "{}"),
            call("2", "{not json"),
            call("3", r#"{"text":"boom"}"#),
            call("4", r#"{"text":"fail"}"#),
        ]),
        Message::assistant("recovered"),
    ]);
    let out = engine(model, 5, Budgets::default())
        .run(
            Conversation::new(vec![Message::user("go")]),
            None,
            CancellationToken::new(),
        )
        .await;
    assert_eq!(out.result.expect("answer"), "recovered");
    let results = tool_contents(&out.messages);
    assert_eq!(
        results[0],
        "error: tool \"nope\" not found; available tools: echo"
    );
    assert!(results[1].starts_with("error: "), "{}", results[1]);
    assert_eq!(results[2], "error: tool \"echo\" panicked: kaboom");
    assert_eq!(results[3], "error: it failed");
}

#[tokio::test]
async fn every_result_is_wrapped_with_a_fresh_nonce() {
    let model = Scripted::new(vec![
        with_calls(vec![
            call("a", r#"{"text":"x"}"#),
            call("b", r#"{"text":"x"}"#),
        ]),
        Message::assistant("ok"),
    ]);
    let out = engine(model, 5, Budgets::default())
        .run(
            Conversation::new(vec![Message::user("go")]),
            None,
            CancellationToken::new(),
        )
        .await;
    let wrapped: Vec<_> = out
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| {
            crate::untrusted::unwrap(&m.content)
                .expect("wrapped")
                .nonce
                .to_string()
        })
        .collect();
    assert_eq!(wrapped.len(), 2);
    assert_ne!(wrapped[0], wrapped[1]);
}

#[tokio::test]
async fn missing_call_ids_are_assigned() {
    let model = Scripted::new(vec![
        with_calls(vec![call("", r#"{"text":"x"}"#)]),
        Message::assistant("ok"),
    ]);
    let out = engine(model, 5, Budgets::default())
        .run(
            Conversation::new(vec![Message::user("go")]),
            None,
            CancellationToken::new(),
        )
        .await;
    assert_eq!(out.messages[1].tool_calls[0].id, "call_1_0");
    assert_eq!(out.messages[2].tool_call_id.as_deref(), Some("call_1_0"));
}

#[tokio::test]
async fn error_hint_after_three_failures() {
    let fail = || with_calls(vec![call("", r#"{"text":"fail"}"#)]);
    let model = Scripted::new(vec![fail(), fail(), fail(), Message::assistant("ok")]);
    let out = engine(model, 10, Budgets::default())
        .run(
            Conversation::new(vec![Message::user("go")]),
            None,
            CancellationToken::new(),
        )
        .await;
    let hints: Vec<_> = out
        .messages
        .iter()
        .filter(|m| m.role == Role::System && m.content.starts_with("⚠️"))
        .collect();
    assert_eq!(hints.len(), 1);
    assert!(hints[0].content.contains("Tool \"echo\" keeps failing"));
}

#[tokio::test]
async fn max_iterations_makes_a_partial_summary() {
    let loop_call = || with_calls(vec![call("", r#"{"text":"again"}"#)]);
    let model = Scripted::new(vec![
        loop_call(),
        loop_call(),
        Message::assistant("we got halfway"),
    ]);
    let out = engine(model.clone(), 2, Budgets::default())
        .run(
            Conversation::new(vec![Message::user("go")]),
            None,
            CancellationToken::new(),
        )
        .await;
    let answer = out.result.expect("summary");
    assert!(out.partial);
    assert_eq!(
        answer,
        "[Iteration budget reached — partial summary]\n\nwe got halfway"
    );
    let last_request = model
        .seen
        .lock()
        .expect("lock")
        .last()
        .cloned()
        .expect("request");
    assert_eq!(
        last_request.len(),
        2,
        "the summary call sees an excerpt, not the tools"
    );
}

#[tokio::test]
async fn max_iterations_without_summary_is_an_error() {
    let loop_call = || with_calls(vec![call("", r#"{"text":"again"}"#)]);
    let model = Scripted::new(vec![loop_call(), loop_call()]);
    let out = engine(model, 2, Budgets::default())
        .run(
            Conversation::new(vec![Message::user("go")]),
            None,
            CancellationToken::new(),
        )
        .await;
    assert_eq!(
        out.result.expect_err("fails").to_string(),
        "reached max iterations (2) without final answer"
    );
}

#[tokio::test]
async fn tool_call_budget_stops_the_run() {
    let two = || {
        with_calls(vec![
            call("", r#"{"text":"a"}"#),
            call("", r#"{"text":"b"}"#),
        ])
    };
    let model = Scripted::new(vec![two(), two(), Message::assistant("never")]);
    let budgets = Budgets {
        max_tool_calls: 3,
        ..Default::default()
    };
    let out = engine(model, 10, budgets)
        .run(
            Conversation::new(vec![Message::user("go")]),
            None,
            CancellationToken::new(),
        )
        .await;
    let err = out.result.expect_err("budget");
    assert_eq!(
        err.to_string(),
        "execution budget exceeded: tool_calls observed 4 (limit 3)"
    );
    assert_eq!(err.error_class(), "execution_budget");
    let summary = out.summary.expect("a closing summary");
    assert_eq!(
        summary,
        "[Execution budget reached — partial summary]\n\nnever"
    );
    let n = out.messages.len();
    assert_eq!(
        out.messages[n - 1].content,
        summary,
        "the summary ends the transcript"
    );
    assert_eq!(
        out.messages[n - 2].role,
        Role::Tool,
        "no dangling tool calls"
    );
}

#[tokio::test]
async fn cancellation_stops_a_slow_tool_and_answers_every_call() {
    let model = Scripted::new(vec![with_calls(vec![call(
        "x",
        r#"{"text":"slow","ms":30000}"#,
    )])]);
    let e = engine(model, 5, Budgets::default());
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        c2.cancel();
    });
    let out = tokio::time::timeout(
        Duration::from_secs(5),
        e.run(Conversation::new(vec![Message::user("go")]), None, cancel),
    )
    .await
    .expect("returns promptly");
    assert!(matches!(out.result, Err(RunError::Cancelled)));
}

#[tokio::test]
async fn persist_sees_every_batch_and_the_answer() {
    let model = Scripted::new(vec![
        with_calls(vec![call("", r#"{"text":"a"}"#)]),
        Message::assistant("fin"),
    ]);
    let lens = Arc::new(Mutex::new(Vec::new()));
    let mirror = Arc::new(Mutex::new(Vec::new()));
    let (l2, m2) = (lens.clone(), mirror.clone());
    let persist: PersistFn = Arc::new(move |delta: TranscriptDelta| {
        let mut saved = m2.lock().expect("lock");
        crate::transcript::apply_all(&mut saved, delta.edits).map_err(|e| e.to_string())?;
        assert_eq!(saved.len(), delta.len);
        l2.lock().expect("lock").push(delta.len);
        Ok(())
    });
    let out = engine(model, 5, Budgets::default())
        .run(
            Conversation::new(vec![Message::user("go")]),
            Some(persist),
            CancellationToken::new(),
        )
        .await;
    assert!(out.result.is_ok());
    // The unsaved input when the run starts, then every batch and the answer.
    assert_eq!(*lens.lock().expect("lock"), vec![1, 3, 4]);
    assert_eq!(
        *mirror.lock().expect("lock"),
        out.messages,
        "the edits rebuild the run"
    );
}

#[tokio::test]
async fn a_conversation_saved_up_to_its_end_saves_nothing_at_the_start() {
    let model = Scripted::new(vec![Message::assistant("fin")]);
    let deltas = Arc::new(Mutex::new(Vec::new()));
    let d2 = deltas.clone();
    let persist: PersistFn = Arc::new(move |delta: TranscriptDelta| {
        d2.lock().expect("lock").push(delta);
        Ok(())
    });
    let history = vec![Message::system("s"), Message::user("go")];
    let conversation = Conversation {
        saved_len: history.len(),
        messages: history,
        saved_plan: None,
        session_start: None,
    };
    let out = engine(model, 5, Budgets::default())
        .run(conversation, Some(persist), CancellationToken::new())
        .await;
    assert!(out.result.is_ok());
    let deltas = deltas.lock().expect("lock");
    assert_eq!(deltas.len(), 1, "only the answer: {deltas:?}");
    assert_eq!(
        deltas[0].edits,
        vec![crate::transcript::Edit::Append {
            message: Message::assistant("fin")
        }]
    );
}

#[test]
fn unanswered_trailing_calls_are_dropped() {
    let mut ctx = context::Context::new(
        vec![Message::user("u"), with_calls(vec![call("a", "{}")])],
        None,
    );
    ctx.track_edits(2);
    ctx.drop_unanswered_tool_calls();
    assert_eq!(ctx.len(), 1);
    assert_eq!(
        ctx.take_edits(),
        vec![crate::transcript::Edit::Remove { start: 1, end: 2 }]
    );
}

fn plan_engine(
    model: Arc<Scripted>,
    approver: Option<Arc<dyn crate::tools::approval::Approver>>,
) -> (Engine, Arc<PlanStore>) {
    plan_engine_placing(model, approver, crate::plan::PlanPlacement::Tail)
}

fn plan_engine_placing(
    model: Arc<Scripted>,
    approver: Option<Arc<dyn crate::tools::approval::Approver>>,
    plan_placement: crate::plan::PlanPlacement,
) -> (Engine, Arc<PlanStore>) {
    let store = Arc::new(PlanStore::new(crate::plan::PlanLimits::default()));
    let tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(Echo),
        Arc::new(crate::tools::PlanTool::new(store.clone())),
    ];
    let e = Engine::new(EngineParts {
        model,
        tools: Arc::new(ToolRegistry::new(tools)),
        gate: Arc::new(Gate::new(
            DangerPolicy::default(),
            approver,
            "config.json",
            Default::default(),
        )),
        plan: Some(store.clone()),
        redactor: Arc::new(Redactor::new()),
        observer: Arc::new(NoopObserver),
        taint: Default::default(),
        turn_block: None,
        checkpoints: None,
        hooks: None,
        jobs: None,
        settings: EngineSettings {
            pricing: Default::default(),
            max_iterations: 10,
            max_tool_parallel: 4,
            stream: false,
            budgets: Budgets::default(),
            cwd: std::env::temp_dir(),
            context_window: 0,
            compaction: crate::config::CompactionConfig {
                enabled: false,
                ..Default::default()
            },
            plan_placement,
            images: true,
        },
        files: None,
        notes: None,
    });
    (e, store)
}

fn plan_call(args: serde_json::Value) -> ToolCall {
    ToolCall::new("", "plan", args.to_string())
}

#[tokio::test]
async fn plan_lifecycle_keeps_the_plan_in_the_protected_head() {
    use crate::plan::PlanPlacement;
    for placement in [PlanPlacement::Head, PlanPlacement::Tail] {
        plan_lifecycle(placement).await;
    }
}

/// The plan message in the saved transcript sits right after the task either way; requests
/// carry it there (`Head`) or as their last message (`Tail`), exactly once.
async fn plan_lifecycle(placement: crate::plan::PlanPlacement) {
    let model = Scripted::new(vec![
        with_calls(vec![plan_call(
            serde_json::json!({"verb": "create", "steps": [
            {"id": "s1", "title": "look around"}, {"id": "s2", "title": "report"}]}),
        )]),
        with_calls(vec![
            plan_call(
                serde_json::json!({"verb": "update", "updates": [{"id": "s1", "status": "in_progress"}]}),
            ),
            call("", r#"{"text":"working"}"#),
        ]),
        with_calls(vec![plan_call(
            serde_json::json!({"verb": "complete", "step_id": "s1"}),
        )]),
        with_calls(vec![plan_call(
            serde_json::json!({"verb": "complete", "step_id": "s2"}),
        )]),
        Message::assistant("all done"),
    ]);
    let (e, store) = plan_engine_placing(model.clone(), None, placement);
    let out = e
        .run(
            Conversation::new(vec![Message::system("sys"), Message::user("task")]),
            None,
            CancellationToken::new(),
        )
        .await;
    assert_eq!(out.result.expect("answer"), "all done");
    assert_eq!(store.version(), 4);
    let seen = model.seen.lock().expect("lock").clone();
    assert!(
        !seen[0]
            .iter()
            .any(|m| m.content.starts_with("[Current plan:")),
        "no plan before create"
    );
    let expected_headers = [
        "[Current plan: v1 — 0/2 done, 0 blocked.",
        "[Current plan: v2 — 0/2 done, 0 blocked.",
        "[Current plan: v3 — 1/2 done, 0 blocked.",
        "[Current plan: v4 — all 2 steps complete.]",
    ];
    let is_plan = |m: &Message| m.role == Role::System && m.content.starts_with("[Current plan:");
    for (request, header) in seen[1..].iter().zip(expected_headers) {
        assert_eq!(request[0].content, "sys");
        assert_eq!(request[1].content, "task");
        let at = match placement {
            crate::plan::PlanPlacement::Head => 2,
            crate::plan::PlanPlacement::Tail => request.len() - 1,
        };
        assert!(is_plan(&request[at]), "{placement:?}: plan at {at}");
        assert!(
            request[at].content.starts_with(header),
            "{}",
            request[at].content
        );
        let plans = request.iter().filter(|m| is_plan(m)).count();
        assert_eq!(plans, 1, "exactly one plan message");
    }
    assert!(
        is_plan(&out.messages[2]),
        "the transcript keeps the seed's layout"
    );
    let plan_results: Vec<&Message> = out
        .messages
        .iter()
        .filter(|m| m.name.as_deref() == Some("plan"))
        .collect();
    assert!(
        plan_results
            .iter()
            .all(|m| m.content.starts_with("[Current plan:")),
        "plan output is not wrapped"
    );
}

struct DenyAll;

#[async_trait::async_trait]
impl crate::tools::approval::Approver for DenyAll {
    async fn ask(
        &self,
        _items: &[crate::tools::approval::ApprovalItem],
        _cancel: &CancellationToken,
    ) -> crate::tools::approval::ApprovalAnswer {
        panic!("the plan tool must never ask for approval")
    }
}

#[tokio::test]
async fn plan_calls_never_prompt_even_in_a_batch() {
    let model = Scripted::new(vec![
        with_calls(vec![
            plan_call(serde_json::json!({"verb": "create", "steps": [{"id": "a", "title": "x"}]})),
            plan_call(serde_json::json!({"verb": "get"})),
        ]),
        Message::assistant("ok"),
    ]);
    let (e, store) = plan_engine(model, Some(Arc::new(DenyAll)));
    let out = e
        .run(
            Conversation::new(vec![Message::user("t")]),
            None,
            CancellationToken::new(),
        )
        .await;
    assert!(out.result.is_ok());
    assert_eq!(store.version(), 1);
}

#[tokio::test]
async fn a_resumed_run_restores_the_plan_before_the_first_request() {
    let model = Scripted::new(vec![
        with_calls(vec![plan_call(
            serde_json::json!({"verb": "create", "steps": [{"id": "a", "title": "x"}, {"id": "b", "title": "y"}]}),
        )]),
        Message::assistant("first"),
    ]);
    let (e, _) = plan_engine(model, None);
    let first = e
        .run(
            Conversation::new(vec![Message::user("t")]),
            None,
            CancellationToken::new(),
        )
        .await;
    let mut history = first.messages;
    history.push(Message::user("continue"));
    let model2 = Scripted::new(vec![
        with_calls(vec![plan_call(
            serde_json::json!({"verb": "complete", "step_id": "a"}),
        )]),
        Message::assistant("second"),
    ]);
    let (e2, store2) = plan_engine(model2.clone(), None);
    let out = e2
        .run(Conversation::new(history), None, CancellationToken::new())
        .await;
    assert!(out.result.is_ok());
    assert_eq!(store2.version(), 2, "continued from the restored v1");
    let first_request = model2.seen.lock().expect("lock")[0].clone();
    assert!(
        first_request
            .iter()
            .any(|m| m.content.starts_with("[Current plan: v1 — 0/2 done"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn plan_calls_in_one_batch_apply_in_call_order() {
    for _ in 0..25 {
        let model = Scripted::new(vec![
            with_calls(vec![
                call("", r#"{"text":"slow","ms":5}"#),
                plan_call(
                    serde_json::json!({"verb": "create", "steps": [{"id": "s1", "title": "x"}, {"id": "s2", "title": "y"}]}),
                ),
                call("", r#"{"text":"fast"}"#),
                plan_call(
                    serde_json::json!({"verb": "update", "updates": [{"id": "s1", "status": "in_progress"}]}),
                ),
                plan_call(serde_json::json!({"verb": "complete", "step_id": "s1"})),
            ]),
            Message::assistant("ok"),
        ]);
        let (e, store) = plan_engine(model, None);
        let out = e
            .run(
                Conversation::new(vec![Message::user("t")]),
                None,
                CancellationToken::new(),
            )
            .await;
        assert!(out.result.is_ok());
        assert_eq!(
            store.version(),
            3,
            "create, then update, then complete — never out of order"
        );
        let results: Vec<&Message> = out
            .messages
            .iter()
            .filter(|m| m.role == Role::Tool)
            .collect();
        assert!(
            results
                .iter()
                .all(|m| !m.content.contains("unknown step id"))
        );
    }
}

/// An `echo` that counts as external content (as `web_fetch` does).
struct Outside;

#[async_trait]
impl Tool for Outside {
    fn name(&self) -> &str {
        "outside"
    }
    fn description(&self) -> &str {
        "outside"
    }
    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({"type":"object"})
    }
    fn external(&self) -> bool {
        true
    }
    async fn call(&self, _args: &str, _ctx: &ToolContext) -> Result<String, ToolError> {
        Ok("a page".into())
    }
}

#[tokio::test]
async fn the_memory_block_follows_the_system_prompt_in_every_request_and_is_never_kept() {
    let model = Scripted::new(vec![
        with_calls(vec![ToolCall::new("c1", "outside", "{}")]),
        Message::assistant("done"),
    ]);
    let mut e = engine(model.clone(), 5, Budgets::default());
    e.turn_block = Some(Message::system("[Memory: test]"));
    e.tools = Arc::new(ToolRegistry::new(vec![Arc::new(Echo), Arc::new(Outside)]));
    let taint = e.taint.clone();
    assert!(!taint.is_external());
    let out = e
        .run(
            Conversation::new(vec![Message::system("sys"), Message::user("go")]),
            None,
            CancellationToken::new(),
        )
        .await;
    assert_eq!(out.result.expect("answer"), "done");
    let seen = model.seen.lock().expect("lock");
    assert_eq!(seen.len(), 2);
    for request in seen.iter() {
        assert_eq!(request[0].content, "sys");
        assert_eq!(request[1].content, "[Memory: test]");
        assert_eq!(request[2].content, "go");
    }
    assert_eq!(
        seen[0][..3],
        seen[1][..3],
        "the block does not change within the turn"
    );
    assert!(
        out.messages.iter().all(|m| m.content != "[Memory: test]"),
        "the transcript never keeps the block"
    );
    assert_eq!(
        taint.sources(),
        ["outside"],
        "an external tool taints the turn"
    );
}

#[test]
fn a_final_answers_finish_reason_says_how_it_was_cut() {
    assert_eq!(AnswerCut::of(Some("length")), Some(AnswerCut::Length));
    assert_eq!(
        AnswerCut::of(Some("content_filter")),
        Some(AnswerCut::Refusal)
    );
    assert_eq!(AnswerCut::of(Some("stop")), None);
    assert_eq!(AnswerCut::of(None), None);
}

/// Attaches one image to its result ("fail": attaches, then fails).
struct Camera;

#[async_trait]
impl Tool for Camera {
    fn name(&self) -> &str {
        "camera"
    }
    fn description(&self) -> &str {
        "camera"
    }
    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({"type":"object"})
    }
    async fn call(&self, args: &str, ctx: &ToolContext) -> Result<String, ToolError> {
        let image = crate::llm::ImagePart::from_bytes("image/jpeg", args.as_bytes());
        assert!(ctx.attach_image(image), "a run takes images");
        match args.contains("fail") {
            true => Err(ToolError::new("it failed")),
            false => Ok("shot".into()),
        }
    }
}

#[tokio::test]
async fn a_tools_images_go_on_its_result_and_the_estimate_counts_the_newest_only() {
    let model = Scripted::new(vec![
        with_calls(vec![
            ToolCall::new("c1", "camera", "{}"),
            ToolCall::new("c2", "camera", r#"{"fail":1}"#),
        ]),
        with_calls(vec![ToolCall::new("c3", "camera", r#"{"n":3}"#)]),
        Message::assistant("done"),
    ]);
    let mut e = engine(model.clone(), 5, Budgets::default());
    e.tools = Arc::new(ToolRegistry::new(vec![Arc::new(Camera)]));
    let out = e
        .run(
            Conversation::new(vec![Message::system("sys"), Message::user("go")]),
            None,
            CancellationToken::new(),
        )
        .await;
    assert_eq!(out.result.expect("answer"), "done");
    let images: Vec<usize> = out
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.images.len())
        .collect();
    assert_eq!(images, [1, 0, 1], "a failed call's images are dropped");
    // Both images stay in the transcript; a request sends the newest batch's only.
    let estimate = |messages: Vec<Message>| context::Context::new(messages, None).estimate(&[]);
    let all = out.messages.clone();
    let mut without_old = all.clone();
    let first = without_old.iter().position(|m| !m.images.is_empty());
    without_old[first.expect("an image")].images.clear();
    assert_eq!(estimate(all), estimate(without_old));
    let seen = model.seen.lock().expect("lock");
    assert_eq!(seen[1].iter().map(|m| m.images.len()).sum::<usize>(), 1);
    let last = crate::llm::RequestMessages::new(&seen[2]);
    let sent = serde_json::to_string(&last).expect("json");
    assert_eq!(
        sent.matches("data:image/jpeg").count(),
        1,
        "only the newest"
    );
    assert!(sent.contains("[1 image(s) omitted: only the newest are sent]"));
}
