use super::*;

/// One event of every variant.
fn samples() -> Vec<Event> {
    let remaining = Some(Remaining {
        steps: 5,
        pending: 2,
        in_progress: 1,
        blocked: 0,
    });
    vec![
        Event::RunStarted(RunStarted {
            model: "m".into(),
            max_iterations: 90,
            sandbox: true,
        }),
        Event::IterationCompleted(IterationCompleted {
            input_tokens: 1,
            output_tokens: 2,
            cached_tokens: 3,
            tools_called: 4,
        }),
        Event::ToolCallStarted(ToolCallStarted {
            call_id: "c".into(),
            args_sha256: "ab".into(),
            args_bytes: 2,
            args_summary: Some(serde_json::json!({"argv0": "ls", "class": "safe"})),
            args: None,
        }),
        Event::ToolCallCompleted(ToolCallCompleted {
            call_id: "c".into(),
            duration_ms: 5,
            result_bytes: 6,
            artifact_count: 0,
        }),
        Event::ToolCallFailed(ToolCallFailed {
            call_id: "c".into(),
            duration_ms: 5,
            error_class: "tool_error".into(),
        }),
        Event::SessionSaved(SessionSaved { message_count: 7 }),
        Event::ContextTrimmed(ContextTrimmed {
            mode: "survival".into(),
            dropped_groups: 1,
            truncated_results: 2,
            shortened_attachments: 1,
            reason: Some(
                "llama.cpp wording \"exceed_context_size_error\": 9 tokens sent, 4 available"
                    .into(),
            ),
        }),
        Event::BudgetExceeded(BudgetExceeded {
            limit_name: "tool_calls".into(),
            observed: 3,
            limit: 2,
        }),
        Event::PlanCreated(PlanCreated {
            steps: 4,
            version: 1,
        }),
        Event::PlanUpdated(PlanUpdated {
            steps: 4,
            done: 1,
            in_progress: 1,
            blocked: 0,
            pending: 2,
            version: 2,
        }),
        Event::PlanBlocked(PlanBlocked {
            steps: 4,
            blocked: 2,
            version: 9,
        }),
        Event::SubagentStarted(SubagentStarted {
            call_id: "call_3".into(),
            index: 1,
            total: 3,
        }),
        Event::SubagentFinished(SubagentFinished {
            call_id: "call_3".into(),
            index: 1,
            total: 3,
            status: "ok".into(),
            iterations: 4,
            tool_calls: 3,
            input_tokens: 5200,
            output_tokens: 300,
            duration_ms: 8120,
        }),
        Event::Checkpoint(CheckpointTaken {
            call_id: "call_4".into(),
            number: 3,
            files: vec![CheckpointFile {
                path: "/w/a.txt".into(),
                change: "changed".into(),
            }],
            not_covered: Vec::new(),
        }),
        Event::Rewound(Rewound {
            to: 3,
            checkpoint: 4,
            files: vec![CheckpointFile {
                path: "/w/a.txt".into(),
                change: "restore".into(),
            }],
            forced: false,
            not_covered: vec!["/w/big.bin: 20000000 bytes, over checkpoints.max_file_mb".into()],
        }),
        Event::Hook(HookRan {
            event: "PreToolUse".into(),
            command: "~/.odek/guard.sh".into(),
            decision: "deny".into(),
            duration_ms: 12,
        }),
        Event::BackgroundFinished(BackgroundFinished {
            job: 2,
            command: "npm run dev".into(),
            status: "exited with status 1".into(),
            exit_code: Some(1),
            duration_ms: 4200,
        }),
        Event::ModelFallback(crate::protocol::ModelFallback {
            from: "deepseek-chat".into(),
            to: "anthropic:claude-sonnet-4-5".into(),
            reason: "429 Too Many Requests".into(),
        }),
        Event::UserSteer(crate::protocol::UserSteer {
            text: "use the staging database".into(),
        }),
        Event::CompactionStarted(crate::protocol::CompactionStarted {
            trigger: "manual".into(),
            tokens: 9000,
        }),
        Event::Compacted(crate::protocol::Compacted {
            mode: "summary".into(),
            trigger: "manual".into(),
            before_tokens: 9000,
            after_tokens: 1200,
            removed_messages: 14,
        }),
        Event::RunCompleted(RunCompleted {
            duration_ms: 1,
            input_tokens: 2,
            output_tokens: 3,
            cached_tokens: 0,
            answer: "a".into(),
            remaining,
            cost_usd: None,
        }),
        Event::RunFailed(RunFailed {
            duration_ms: Some(1),
            error_class: "error".into(),
            error: "e".into(),
            http_status: Some(500),
            remaining,
            cost_usd: None,
        }),
        Event::AnswerDelta(AnswerDelta {
            run_id: "r".into(),
            text: "t".into(),
            restart: false,
        }),
        Event::ApprovalRequested(ApprovalRequested {
            run_id: "r".into(),
            approval_id: "a".into(),
            tool: "shell".into(),
            resource: "ls".into(),
            class: "safe".into(),
            items: Vec::new(),
        }),
        Event::ApprovalResolved(ApprovalResolved {
            run_id: "r".into(),
            approval_id: "a".into(),
            action: ApprovalAction::Deny,
            reason: ApprovalReason::Expired,
        }),
        Event::ClarifyRequested(ClarifyRequested {
            run_id: "r1".into(),
            question_id: "q1".into(),
            question: "Which database?".into(),
            options: vec!["SQLite".into(), "Postgres".into()],
        }),
        Event::ClarifyResolved(ClarifyResolved {
            run_id: "r1".into(),
            question_id: "q1".into(),
            reason: ApprovalReason::Answered,
        }),
    ]
}

#[test]
fn every_variant_is_listed_once_under_its_serde_name_and_reads_back() {
    let samples = samples();
    assert_eq!(samples.len(), EVENT_TYPES.len());
    for (event, listed) in samples.iter().zip(EVENT_TYPES) {
        let value = serde_json::to_value(event).expect("serialize");
        assert_eq!(value["type"], listed);
        assert_eq!(event.kind(), listed);
        let back: Event = serde_json::from_value(value).expect("deserialize");
        assert_eq!(&back, event);
    }
    let mut unique = EVENT_TYPES.to_vec();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), EVENT_TYPES.len());
    let frames: Vec<&str> = samples
        .iter()
        .filter(|e| e.is_browser_frame())
        .map(Event::kind)
        .collect();
    assert_eq!(frames, BROWSER_FRAMES);
}

#[test]
fn the_envelope_keeps_the_documented_order_and_bytes() {
    let event = Event::ToolCallCompleted(ToolCallCompleted {
        call_id: "call_1".into(),
        duration_ms: 5120,
        result_bytes: 1804,
        artifact_count: 0,
    });
    let stamp = Stamp {
        run_id: "9f1c",
        session_id: Some("20261130-4f"),
        iteration: Some(1),
        tool: Some("shell"),
        timestamp: "2026-11-30T02:26:41.454925951Z",
    };
    let line = envelope(event.kind(), &stamp, event.data()).to_string();
    assert_eq!(
        line,
        r#"{"schema":"odek.event/v1","type":"tool_call_completed","run_id":"9f1c","session_id":"20261130-4f","iteration":1,"tool":"shell","timestamp":"2026-11-30T02:26:41.454925951Z","data":{"call_id":"call_1","duration_ms":5120,"result_bytes":1804,"artifact_count":0}}"#
    );
    let read: Line = serde_json::from_str(&line).expect("a line reads back");
    assert_eq!(read.event, event);
    assert_eq!(read.tool.as_deref(), Some("shell"));
    let aborted = Event::RunFailed(RunFailed {
        duration_ms: None,
        error_class: "context_canceled".into(),
        error: "interrupted".into(),
        http_status: None,
        remaining: None,
        cost_usd: None,
    });
    assert_eq!(
        aborted.data().to_string(),
        r#"{"error_class":"context_canceled","error":"interrupted"}"#
    );
}

#[test]
fn the_web_ui_subscribes_to_exactly_these_types() {
    let stream = include_str!("../../ui/js/stream.js");
    let start = stream
        .find("EVENT_TYPES = Object.freeze([")
        .expect("the UI's list");
    let list = &stream[start..];
    let list = &list[list.find('[').expect("[") + 1..list.find("])").expect("])")];
    let ui: Vec<&str> = list
        .split(',')
        .map(|item| item.trim().trim_matches('\''))
        .filter(|item| !item.is_empty())
        .collect();
    assert_eq!(ui, EVENT_TYPES);
}

#[test]
fn docs_events_documents_exactly_these_types() {
    let doc = include_str!("../../docs/EVENTS.md");
    let documented: Vec<&str> = doc
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split_once("` |").map(|(kind, _)| kind))
        .filter(|kind| kind.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .filter(|kind| {
            !matches!(
                *kind,
                "schema"
                    | "type"
                    | "run_id"
                    | "session_id"
                    | "iteration"
                    | "tool"
                    | "timestamp"
                    | "data"
            )
        })
        .collect();
    assert_eq!(documented, EVENT_TYPES, "the type tables of docs/EVENTS.md");
}

#[test]
fn a_handover_reads_as_json_or_as_a_bare_key() {
    use crate::protocol::subagent::Handover;
    let bare = Handover::parse("  sk-bare-key\n").unwrap();
    assert_eq!(bare.api_key.as_deref(), Some("sk-bare-key"));
    assert!(bare.headers.is_empty());
    let mut headers = std::collections::BTreeMap::new();
    headers.insert(
        "gw".to_string(),
        [("x-gw-auth".to_string(), "v".to_string())].into(),
    );
    let full = Handover {
        api_key: None,
        headers,
        keys: [("anthropic".to_string(), "sk-fallback".to_string())].into(),
    };
    let text = serde_json::to_string(&full).unwrap();
    assert_eq!(Handover::parse(&text).unwrap(), full);
    assert!(Handover::parse("").unwrap().is_empty());
    assert!(
        Handover::parse("{\"key\": 1}").is_err(),
        "unknown fields refused"
    );
}
