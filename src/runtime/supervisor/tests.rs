//! The supervisor against a scripted model server: approvals answered by id, expired and
//! cancelled (each closed with one frame), shutdown, a busy session, streamed frames.

use crate::protocol::{ApprovalAction, ApprovalReason, ApprovalResolved};
use std::sync::Mutex as StdMutex;

use serde_json::{Value, json};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate, matchers};

use super::*;
use crate::config::Config;
use crate::engine::NoopObserver;
use crate::runtime::{ModelSource, RuntimeOptions};

/// Answers a shell call needing approval, then `done`.
struct Script(StdMutex<Vec<Value>>);

impl Respond for Script {
    fn respond(&self, _request: &Request) -> ResponseTemplate {
        let message = self
            .0
            .lock()
            .expect("lock")
            .pop()
            .unwrap_or_else(|| json!({"role": "assistant", "content": "done"}));
        ResponseTemplate::new(200).set_body_json(json!({
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5}
        }))
    }
}

fn shell_call() -> Value {
    let args = json!({"command": "python3 -c 'print(1)'"}).to_string();
    json!({"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": args}}]})
}

struct Fixture {
    _server: MockServer,
    home: tempfile::TempDir,
    runtime: Arc<Runtime>,
    supervisor: Supervisor,
}

async fn fixture() -> Fixture {
    fixture_calling(shell_call()).await
}

/// A fixture whose model makes `first` its first answer.
async fn fixture_calling(first: Value) -> Fixture {
    let server = MockServer::start().await;
    Mock::given(matchers::method("POST"))
        .respond_with(Script(StdMutex::new(vec![first])))
        .mount(&server)
        .await;
    let home = tempfile::tempdir().expect("tempdir");
    let config = Config {
        base_url: format!("{}/v1", server.uri()),
        model: "m".into(),
        stream: false,
        sandbox: false,
        ..Config::default()
    };
    let redactor = Arc::new(Redactor::new());
    let runtime = Runtime::build(
        config,
        RuntimeOptions {
            home: home.path().to_path_buf(),
            cwd: home.path().to_path_buf(),
            model_source: ModelSource::Http,
            record: None,
            events: None,
            redactor: redactor.clone(),
        },
    )
    .expect("runtime");
    Fixture {
        _server: server,
        home,
        runtime: Arc::new(runtime),
        supervisor: Supervisor::new(Duration::from_secs(10), redactor),
    }
}

fn submission(f: &Fixture, approvals: Approvals) -> Submission {
    Submission {
        runtime: f.runtime.clone(),
        session: None,
        input: vec![Message::system("s"), Message::user("go")],
        approvals,
        output: Arc::new(NoopObserver),
        external: Vec::new(),
        origin: "cli",
        files: None,
        scope: Default::default(),
    }
}

async fn next_frame(frames: &mut mpsc::UnboundedReceiver<Arc<Frame>>) -> Arc<Frame> {
    tokio::time::timeout(Duration::from_secs(10), frames.recv())
        .await
        .expect("a frame in time")
        .expect("the supervisor lives")
}

fn requested(frame: &Frame) -> ApprovalRequested {
    match &frame.event {
        Event::ApprovalRequested(r) => r.clone(),
        other => panic!("not a request: {other:?}"),
    }
}

fn resolved(frame: &Frame) -> ApprovalResolved {
    match &frame.event {
        Event::ApprovalResolved(r) => r.clone(),
        other => panic!("not a resolution: {other:?}"),
    }
}

/// The text of the tool result the model got.
fn tool_result(outcome: &TurnOutcome) -> String {
    outcome
        .run
        .messages
        .iter()
        .find(|m| m.role == crate::llm::Role::Tool)
        .map(|m| m.content.clone())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_approval_is_answered_by_its_random_id_and_closed_with_one_frame() {
    let f = fixture().await;
    let mut frames = f.supervisor.subscribe();
    let handle = f
        .supervisor
        .submit(submission(
            &f,
            Approvals::Remote {
                approval: Duration::from_secs(30),
                question: Duration::from_secs(30),
            },
        ))
        .expect("submitted");
    let asked = requested(&*next_frame(&mut frames).await);
    assert_eq!(asked.run_id, handle.run_id);
    assert_eq!(asked.tool, "shell");
    assert_eq!(asked.class, "code_execution");
    assert!(asked.approval_id.starts_with('a') && asked.approval_id.len() == 17);
    let run = f.supervisor.run(&handle.run_id).expect("run");
    assert_eq!(run.view().pending_approvals, 1);
    assert!(matches!(
        f.supervisor.answer("a0000000000000000", true),
        Err(SupervisorError::NoApproval(_))
    ));
    f.supervisor
        .answer(&asked.approval_id, true)
        .expect("answered");
    let closed = resolved(&*next_frame(&mut frames).await);
    assert_eq!(closed.action, ApprovalAction::Approve);
    assert_eq!(closed.reason, ApprovalReason::Answered);
    let outcome = handle.outcome().await.expect("ran");
    assert_eq!(outcome.run.result.as_deref().ok(), Some("done"));
    assert!(tool_result(&outcome).contains("exit code: 0") || tool_result(&outcome).contains('1'));
    assert!(matches!(
        run.answer(&asked.approval_id, false),
        Err(SupervisorError::ApprovalClosed {
            status: "approved",
            ..
        })
    ));
    assert_eq!(run.view().status, RunStatus::Completed);
    assert!(frames.try_recv().is_err(), "one frame per approval");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_approval_expires_and_the_model_is_told_so() {
    let f = fixture().await;
    let mut frames = f.supervisor.subscribe();
    let handle = f
        .supervisor
        .submit(submission(
            &f,
            Approvals::Remote {
                approval: Duration::from_millis(50),
                question: Duration::from_millis(50),
            },
        ))
        .expect("submitted");
    let asked = requested(&*next_frame(&mut frames).await);
    let closed = resolved(&*next_frame(&mut frames).await);
    assert_eq!(closed.approval_id, asked.approval_id);
    assert_eq!(
        (closed.action, closed.reason),
        (ApprovalAction::Deny, ApprovalReason::Expired)
    );
    let outcome = handle.outcome().await.expect("ran");
    let result = tool_result(&outcome);
    assert!(result.contains("expired with no answer"), "{result}");
    let views = f
        .supervisor
        .run(&asked.run_id)
        .expect("run")
        .approval_views();
    assert_eq!(views[0].status, ApprovalStatus::Expired);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_cancels_running_turns_closes_their_approvals_and_refuses_new_ones() {
    let f = fixture().await;
    let mut frames = f.supervisor.subscribe();
    let handle = f
        .supervisor
        .submit(submission(
            &f,
            Approvals::Remote {
                approval: Duration::from_secs(60),
                question: Duration::from_secs(60),
            },
        ))
        .expect("submitted");
    let asked = requested(&*next_frame(&mut frames).await);
    let run_id = handle.run_id.clone();
    assert_eq!(f.supervisor.running(), 1);
    assert_eq!(f.supervisor.shutdown().await, 1);
    let closed = resolved(&*next_frame(&mut frames).await);
    assert_eq!(closed.approval_id, asked.approval_id);
    assert_eq!(closed.reason, ApprovalReason::Cancelled);
    let outcome = handle.outcome().await.expect("ran");
    assert!(matches!(outcome.run.result, Err(RunError::Cancelled)));
    assert_eq!(f.supervisor.running(), 0);
    assert!(matches!(
        f.supervisor.submit(submission(&f, Approvals::Nobody)),
        Err(SupervisorError::ShuttingDown)
    ));
    let view = f.supervisor.run(&run_id).expect("kept").view();
    assert_eq!(view.status, RunStatus::Cancelled);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_running_a_turn_refuses_a_second_one() {
    let f = fixture().await;
    let session = f
        .runtime
        .new_session("t", vec![Message::system("s")], "cli", "odek test")
        .expect("session");
    let first = f
        .supervisor
        .submit(Submission {
            session: Some(session.clone()),
            input: vec![Message::user("go")],
            ..submission(
                &f,
                Approvals::Remote {
                    approval: Duration::from_secs(60),
                    question: Duration::from_secs(60),
                },
            )
        })
        .expect("first");
    assert_eq!(
        f.supervisor.running_in(session.id()),
        Some(first.run_id.clone())
    );
    let second = f.supervisor.submit(Submission {
        session: Some(session.clone()),
        ..submission(&f, Approvals::Nobody)
    });
    assert!(matches!(
        second,
        Err(SupervisorError::Runtime(RuntimeError::TurnInProgress(_)))
    ));
    f.supervisor.cancel(&first.run_id).expect("cancel");
    let outcome = first.outcome().await.expect("ran");
    assert!(matches!(outcome.run.result, Err(RunError::Cancelled)));
    assert_eq!(f.supervisor.running_in(session.id()), None);
    drop(f.home);
}

#[test]
fn streamed_text_becomes_answer_delta_frames_redacted_as_a_stream() {
    let mut redactor = Redactor::new();
    redactor.add_secret("sk-live-0123456789abcdefghij");
    let supervisor = Supervisor::new(Duration::from_secs(1), Arc::new(redactor));
    let mut frames = supervisor.subscribe();
    let slot = supervisor.register("r1", "s1", "cli").expect("registered");
    let output = FrameOutput {
        slot,
        stream: Mutex::new(StreamRedactor::new(supervisor.inner.redactor.clone())),
    };
    for piece in ["the key: sk-live-01234", "56789abcdefghij", " is secret"] {
        output.on_event(&EngineEvent::Delta {
            iteration: 1,
            delta: Delta::Content(piece),
        });
    }
    let message = Message::assistant("x");
    output.on_event(&EngineEvent::ModelCallFinished {
        iteration: 1,
        message: &message,
        usage: &crate::llm::Usage::default(),
        streamed: true,
    });
    let mut text = String::new();
    while let Ok(frame) = frames.try_recv() {
        match &frame.event {
            Event::AnswerDelta(d) => text.push_str(&d.text),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(text, "the key: [REDACTED] is secret");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_question_expires_with_one_frame_and_the_model_decides_alone() {
    let args = json!({"question": "Which port?", "options": ["80", "8080"]}).to_string();
    let f = fixture_calling(json!({"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "clarify", "arguments": args}}]}))
    .await;
    let mut frames = f.supervisor.subscribe();
    let handle = f
        .supervisor
        .submit(submission(
            &f,
            Approvals::Remote {
                approval: Duration::from_secs(30),
                question: Duration::from_millis(50),
            },
        ))
        .expect("submitted");
    let asked = match &next_frame(&mut frames).await.event {
        Event::ClarifyRequested(q) => q.clone(),
        other => panic!("not a question: {other:?}"),
    };
    assert_eq!(asked.options, ["80", "8080"]);
    assert!(asked.question_id.starts_with('q') && asked.question_id.len() == 17);
    match &next_frame(&mut frames).await.event {
        Event::ClarifyResolved(closed) => {
            assert_eq!(closed.question_id, asked.question_id);
            assert_eq!(closed.reason, ApprovalReason::Expired);
        }
        other => panic!("not a resolution: {other:?}"),
    }
    let run = f.supervisor.run(&handle.run_id).expect("run");
    let outcome = handle.outcome().await.expect("ran");
    // The user's words (or their absence) are not wrapped as untrusted.
    assert_eq!(tool_result(&outcome), crate::tools::EXPIRED_ANSWER);
    assert_eq!(run.question_views()[0].status, QuestionStatus::Expired);
    assert!(matches!(
        f.supervisor.answer_question(&asked.question_id, "80"),
        Err(SupervisorError::NoQuestion(_) | SupervisorError::QuestionClosed { .. })
    ));
}
