//! Runs over HTTP: each prompt is one turn from the runtime, running in its own task; the
//! registry keeps its state for `GET /api/runs/{id}`, its cancellation, and the approvals it
//! is waiting for. The run's approver waits for `POST /api/runs/{id}/approvals/{aid}` (60 s,
//! then deny); its output sends the streamed answer to the browsers as `answer_delta`.

use std::collections::{HashMap, VecDeque};
use std::sync::mpsc::{SyncSender, sync_channel};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use serde::Serialize;
use serde_json::json;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::error::ApiError;
use super::hub::Hub;
use crate::engine::{EngineEvent, Observer, RunError};
use crate::llm::Delta;
use crate::redact::{Redactor, StreamRedactor};
use crate::runtime::TurnOutcome;
use crate::tools::approval::{ApprovalAnswer, ApprovalItem, Approver, RemoteWait, wait_for_answer};

/// Ended runs kept for `GET /api/runs/{id}`.
const ENDED_RUNS_KEPT: usize = 200;

/// How a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Still going.
    Running,
    /// Ended with an answer.
    Completed,
    /// Cancelled (`POST …/cancel`, or the server shutting down).
    Cancelled,
    /// An execution budget ran out.
    BudgetExceeded,
    /// Ended with an error.
    Failed,
}

/// A run's public state (`GET /api/runs/{id}`).
#[derive(Debug, Clone, Serialize)]
pub struct RunView {
    /// The run id (also on its events).
    pub run_id: String,
    /// Its session.
    pub session_id: String,
    /// How it stands.
    pub status: RunStatus,
    /// When it started (RFC 3339 UTC).
    pub started_at: String,
    /// When it ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    /// The final answer (or the partial summary at the iteration cap).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// True when `answer` is the partial summary made at the iteration cap.
    pub partial: bool,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The closing summary when a budget ended it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Model calls made.
    pub iterations: u32,
    /// Tool calls made.
    pub tool_calls: u64,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens served from the provider's cache.
    pub cached_tokens: u64,
    /// Approvals waiting for an answer.
    pub pending_approvals: usize,
}

/// One approval a run asked for.
#[derive(Debug, Clone, Serialize)]
pub struct ApprovalView {
    /// Its id within the run.
    pub approval_id: String,
    /// `pending`, `approved`, `denied`, `expired` (no answer in time) or `cancelled` (the run
    /// was cancelled or the server stopped while it waited).
    pub status: &'static str,
    /// The calls it covers.
    pub items: Vec<ApprovalItemView>,
}

/// One call of an approval.
#[derive(Debug, Clone, Serialize)]
pub struct ApprovalItemView {
    /// Tool name.
    pub tool: String,
    /// What it acts on.
    pub resource: String,
    /// Danger class.
    pub class: String,
    /// Why it has that class.
    pub reason: String,
}

struct Approval {
    view: ApprovalView,
    answer: Option<SyncSender<ApprovalAnswer>>,
}

/// A run in the registry.
pub struct RunEntry {
    run_id: String,
    session_id: String,
    cancel: CancellationToken,
    /// Where `approval_resolved` frames go.
    hub: Arc<Hub>,
    state: Mutex<RunView>,
    approvals: Mutex<Vec<Approval>>,
}

impl RunEntry {
    fn state(&self) -> MutexGuard<'_, RunView> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn approvals(&self) -> MutexGuard<'_, Vec<Approval>> {
        self.approvals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The run's public state.
    pub fn view(&self) -> RunView {
        let mut view = self.state().clone();
        view.pending_approvals = self
            .approvals()
            .iter()
            .filter(|a| a.view.status == "pending")
            .count();
        view
    }

    /// Every approval the run asked for, oldest first.
    pub fn approval_views(&self) -> Vec<ApprovalView> {
        self.approvals().iter().map(|a| a.view.clone()).collect()
    }

    fn is_running(&self) -> bool {
        self.state().status == RunStatus::Running
    }

    /// Records a new approval and returns its id (random, so one cannot be guessed from
    /// another) and where its answer arrives.
    fn add_approval(
        &self,
        items: &[ApprovalItem],
    ) -> (String, std::sync::mpsc::Receiver<ApprovalAnswer>) {
        let (tx, rx) = sync_channel(1);
        let approval_id = format!("a{}", crate::random::hex_id::<8>());
        self.approvals().push(Approval {
            view: ApprovalView {
                approval_id: approval_id.clone(),
                status: "pending",
                items: items
                    .iter()
                    .map(|i| ApprovalItemView {
                        tool: i.tool.clone(),
                        resource: i.resource.clone(),
                        class: i.class.to_string(),
                        reason: i.reason.clone(),
                    })
                    .collect(),
            },
            answer: Some(tx),
        });
        (approval_id, rx)
    }

    /// Answers approval `approval_id`: 404 when there is none, 409 when it was answered or
    /// expired already.
    pub fn answer(&self, approval_id: &str, approve: bool) -> Result<(), ApiError> {
        let mut approvals = self.approvals();
        let approval = approvals
            .iter_mut()
            .find(|a| a.view.approval_id == approval_id)
            .ok_or_else(|| ApiError::not_found(format!("no approval {approval_id} in this run")))?;
        if approval.answer.is_none() {
            return Err(ApiError::conflict(format!(
                "approval {approval_id} is already {}",
                approval.view.status
            )));
        }
        let (answer, status) = if approve {
            (ApprovalAnswer::Approve, Resolution::Approved)
        } else {
            (ApprovalAnswer::Deny, Resolution::Denied)
        };
        self.resolve(approval, status, answer);
        Ok(())
    }

    /// Closes a pending approval the same way whoever closes it: its status is set, the
    /// waiting approver gets `answer`, and the browsers get one `approval_resolved` frame.
    fn resolve(&self, approval: &mut Approval, how: Resolution, answer: ApprovalAnswer) {
        let Some(tx) = approval.answer.take() else {
            return;
        };
        approval.view.status = how.status();
        // The approver may have given up a moment ago; the status above stands either way.
        let _ = tx.send(answer);
        self.hub.publish_browser(
            "approval_resolved",
            &self.run_id,
            &self.session_id,
            &json!({
                "run_id": self.run_id,
                "approval_id": approval.view.approval_id,
                "action": how.action(),
                "reason": how.reason(),
            }),
        );
    }

    /// Closes approval `approval_id` if it is still pending; true when it was.
    fn close(&self, approval_id: &str, how: Resolution, answer: ApprovalAnswer) -> bool {
        let mut approvals = self.approvals();
        match approvals
            .iter_mut()
            .find(|a| a.view.approval_id == approval_id && a.answer.is_some())
        {
            Some(approval) => {
                self.resolve(approval, how, answer);
                true
            }
            None => false,
        }
    }

    /// Closes every pending approval as cancelled (the run is being cancelled).
    fn cancel_approvals(&self) {
        let mut approvals = self.approvals();
        for approval in approvals.iter_mut() {
            self.resolve(approval, Resolution::Cancelled, ApprovalAnswer::Cancelled);
        }
    }

    /// Asks the run to stop; false when it has ended already. Its pending approvals are
    /// closed at once (the browsers hear so before the run has wound down).
    pub fn cancel(&self) -> bool {
        if !self.is_running() {
            return false;
        }
        self.cancel.cancel();
        self.cancel_approvals();
        true
    }

    /// Records how the run ended; every text of it passes through `redactor` first, as
    /// the session and the events do.
    pub fn finish(&self, outcome: Result<TurnOutcome, ApiError>, redactor: &Redactor) {
        self.record(outcome);
        let mut guard = self.state();
        let state = &mut *guard;
        for text in [&mut state.answer, &mut state.error, &mut state.summary]
            .into_iter()
            .flatten()
        {
            if let std::borrow::Cow::Owned(clean) = redactor.redact(text) {
                *text = clean;
            }
        }
    }

    fn record(&self, outcome: Result<TurnOutcome, ApiError>) {
        let mut state = self.state();
        state.ended_at = Some(crate::session::now_rfc3339());
        let outcome = match outcome {
            Ok(o) => o,
            Err(e) => {
                state.status = RunStatus::Failed;
                state.error = Some(e.message);
                return;
            }
        };
        state.iterations = outcome.iterations;
        state.tool_calls = outcome.tool_calls;
        state.input_tokens = outcome.usage.input_tokens;
        state.output_tokens = outcome.usage.output_tokens;
        state.cached_tokens = outcome.usage.cache_read_tokens;
        state.partial = outcome.partial;
        state.summary = outcome.summary;
        (state.status, state.answer, state.error) = match outcome.result {
            Ok(answer) => (RunStatus::Completed, Some(answer), None),
            Err(RunError::Cancelled) => (RunStatus::Cancelled, None, Some("cancelled".into())),
            Err(e @ RunError::Budget { .. }) => {
                (RunStatus::BudgetExceeded, None, Some(e.to_string()))
            }
            Err(e) => (RunStatus::Failed, None, Some(e.to_string())),
        };
        if let Some(Err(e)) = &outcome.saved {
            eprintln!(
                "odek serve: run {}: the session could not be saved: {e}",
                self.run_id
            );
            let e = e.message_without_paths();
            state.error = Some(match state.error.take() {
                Some(first) => format!("{first}; the session could not be saved: {e}"),
                None => format!("the session could not be saved: {e}"),
            });
        }
    }
}

/// Binds a run's approver and output to its registry entry, which exists only once the turn
/// (and with it the run id) has been made.
pub type RunLink = Arc<OnceLock<Arc<RunEntry>>>;

/// Every run of this server: the running ones and the last ended ones.
#[derive(Default)]
pub struct Runs {
    inner: Mutex<RunsInner>,
}

#[derive(Default)]
struct RunsInner {
    by_id: HashMap<String, Arc<RunEntry>>,
    /// Session id → its running run.
    running: HashMap<String, String>,
    ended: VecDeque<String>,
    tasks: Vec<JoinHandle<()>>,
}

impl Runs {
    fn inner(&self) -> MutexGuard<'_, RunsInner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a new running run of `session_id`.
    pub fn register(
        &self,
        run_id: &str,
        session_id: &str,
        cancel: CancellationToken,
        hub: Arc<Hub>,
    ) -> Arc<RunEntry> {
        let entry = Arc::new(RunEntry {
            run_id: run_id.to_string(),
            session_id: session_id.to_string(),
            cancel,
            hub,
            state: Mutex::new(RunView {
                run_id: run_id.to_string(),
                session_id: session_id.to_string(),
                status: RunStatus::Running,
                started_at: crate::session::now_rfc3339(),
                ended_at: None,
                answer: None,
                partial: false,
                error: None,
                summary: None,
                iterations: 0,
                tool_calls: 0,
                input_tokens: 0,
                output_tokens: 0,
                cached_tokens: 0,
                pending_approvals: 0,
            }),
            approvals: Mutex::new(Vec::new()),
        });
        let mut inner = self.inner();
        inner.by_id.insert(run_id.to_string(), entry.clone());
        inner
            .running
            .insert(session_id.to_string(), run_id.to_string());
        drop(inner);
        entry
    }

    /// Keeps the task of a run so shutdown can wait for it.
    pub fn track(&self, task: JoinHandle<()>) {
        let mut inner = self.inner();
        inner.tasks.retain(|t| !t.is_finished());
        inner.tasks.push(task);
    }

    /// Moves a run to the ended ones (the oldest ended runs are forgotten).
    pub fn ended(&self, entry: &RunEntry) {
        let mut inner = self.inner();
        inner.running.remove(&entry.session_id);
        inner.ended.push_back(entry.run_id.clone());
        while inner.ended.len() > ENDED_RUNS_KEPT {
            if let Some(old) = inner.ended.pop_front() {
                inner.by_id.remove(&old);
            }
        }
    }

    /// A run by id.
    pub fn get(&self, run_id: &str) -> Result<Arc<RunEntry>, ApiError> {
        self.inner()
            .by_id
            .get(run_id)
            .cloned()
            .ok_or_else(|| ApiError::not_found(format!("no run {run_id}")))
    }

    /// Every known run, newest first.
    pub fn views(&self) -> Vec<RunView> {
        let entries: Vec<Arc<RunEntry>> = self.inner().by_id.values().cloned().collect();
        let mut views: Vec<RunView> = entries.iter().map(|e| e.view()).collect();
        views.sort_by(|a, b| b.started_at.cmp(&a.started_at));
        views
    }

    /// The running run of `session_id`, if any.
    pub fn running_in(&self, session_id: &str) -> Option<String> {
        self.inner().running.get(session_id).cloned()
    }

    /// Number of running runs.
    pub fn running(&self) -> usize {
        self.inner().running.len()
    }

    /// Cancels every running run and waits for their tasks (each saves its session and
    /// writes its terminal event) for up to `wait`.
    pub async fn cancel_all(&self, wait: Duration) {
        let (entries, tasks) = {
            let mut inner = self.inner();
            let entries: Vec<Arc<RunEntry>> = inner.by_id.values().cloned().collect();
            (entries, std::mem::take(&mut inner.tasks))
        };
        entries.iter().for_each(|e| {
            e.cancel();
        });
        let all = futures_util::future::join_all(tasks);
        let _ = tokio::time::timeout(wait, all).await;
    }
}

/// Asks the browser (through the event stream and the approvals endpoints) about dangerous
/// calls; unanswered after [`crate::tools::approval::REMOTE_APPROVAL_TIMEOUT`] they are denied.
pub struct HttpApprover {
    /// The run.
    pub link: RunLink,
    /// Where `approval_requested` / `approval_resolved` go.
    pub hub: Arc<Hub>,
    /// How long to wait for an answer.
    pub timeout: Duration,
}

impl Approver for HttpApprover {
    fn ask(&self, items: &[ApprovalItem], cancel: &CancellationToken) -> ApprovalAnswer {
        let Some(entry) = self.link.get() else {
            return ApprovalAnswer::Deny;
        };
        let (approval_id, answers) = entry.add_approval(items);
        let (run_id, session_id) = (entry.run_id.as_str(), entry.session_id.as_str());
        let first = items.first();
        self.hub.publish_browser(
            "approval_requested",
            run_id,
            session_id,
            &json!({
                "run_id": run_id,
                "approval_id": approval_id,
                "tool": first.map(|i| i.tool.as_str()),
                "resource": first.map(|i| i.resource.as_str()),
                "class": first.map(|i| i.class.to_string()),
                "items": entry.approval_views().last().map(|a| a.items.clone()),
            }),
        );
        // Whoever closes the approval (an answer, the timeout, a cancel) sends the
        // `approval_resolved` frame.
        match wait_for_answer(&answers, cancel, self.timeout, || {
            entry.close(&approval_id, Resolution::Expired, ApprovalAnswer::Expired)
        }) {
            RemoteWait::Answered(answer) => answer,
            RemoteWait::Cancelled => {
                entry.close(
                    &approval_id,
                    Resolution::Cancelled,
                    ApprovalAnswer::Cancelled,
                );
                ApprovalAnswer::Cancelled
            }
            RemoteWait::TimedOut => ApprovalAnswer::Expired,
        }
    }
}

/// How an approval was closed.
#[derive(Debug, Clone, Copy)]
enum Resolution {
    Approved,
    Denied,
    Expired,
    Cancelled,
}

impl Resolution {
    /// The approval's status in `GET …/approvals`.
    fn status(self) -> &'static str {
        match self {
            Resolution::Approved => "approved",
            Resolution::Denied => "denied",
            Resolution::Expired => "expired",
            Resolution::Cancelled => "cancelled",
        }
    }

    /// The frame's `action`: whether the calls run.
    fn action(self) -> &'static str {
        match self {
            Resolution::Approved => "approve",
            _ => "deny",
        }
    }

    /// The frame's `reason`: who closed it.
    fn reason(self) -> &'static str {
        match self {
            Resolution::Approved | Resolution::Denied => "answered",
            Resolution::Expired => "expired",
            Resolution::Cancelled => "cancelled",
        }
    }
}

/// The run's output for browsers: streamed answer text as `answer_delta` frames, redacted
/// as a stream (a secret split across deltas is held back until it can be recognised, so
/// no concatenation of frames gives it back).
pub struct HttpOutput {
    /// The run.
    pub link: RunLink,
    /// Where the frames go.
    pub hub: Arc<Hub>,
    /// The answer text not let out yet.
    pub stream: Mutex<StreamRedactor>,
}

impl HttpOutput {
    /// The output of the run `link` will name.
    pub fn new(link: RunLink, hub: Arc<Hub>, redactor: Arc<Redactor>) -> Self {
        HttpOutput {
            link,
            hub,
            stream: Mutex::new(StreamRedactor::new(redactor)),
        }
    }

    fn stream(&self) -> MutexGuard<'_, StreamRedactor> {
        self.stream.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn send(&self, text: &str, restart: bool) {
        if text.is_empty() && !restart {
            return;
        }
        let Some(entry) = self.link.get() else {
            return;
        };
        let mut frame = json!({"run_id": entry.run_id, "text": text});
        if restart {
            frame["restart"] = serde_json::Value::Bool(true);
        }
        self.hub
            .publish_browser("answer_delta", &entry.run_id, &entry.session_id, &frame);
    }
}

impl Observer for HttpOutput {
    fn on_event(&self, event: &EngineEvent<'_>) {
        match event {
            EngineEvent::Delta {
                delta: Delta::Content(text),
                ..
            } => {
                let out = self.stream().push(text);
                self.send(&out, false);
            }
            EngineEvent::Delta {
                delta: Delta::Restart,
                ..
            } => {
                self.stream().reset();
                self.send("", true);
            }
            EngineEvent::ModelCallFinished { .. } | EngineEvent::RunFinished { .. } => {
                let out = self.stream().finish();
                self.send(&out, false);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::DangerClass;

    fn linked(runs: &Runs, hub: &Arc<Hub>) -> (RunLink, Arc<RunEntry>) {
        let entry = runs.register("r1", "s1", CancellationToken::new(), hub.clone());
        let link: RunLink = Arc::new(OnceLock::new());
        let _ = link.set(entry.clone());
        (link, entry)
    }

    fn item() -> ApprovalItem {
        ApprovalItem {
            tool: "shell".into(),
            resource: "rm -rf build".into(),
            class: DangerClass::Destructive,
            reason: "deletes files".into(),
        }
    }

    fn hub() -> Arc<Hub> {
        Hub::new(Arc::new(crate::redact::Redactor::new()))
    }

    fn frames(
        live: &mut tokio::sync::broadcast::Receiver<Arc<super::super::hub::Frame>>,
    ) -> Vec<(String, serde_json::Value)> {
        std::iter::from_fn(|| live.try_recv().ok())
            .map(|f| (f.kind.clone(), serde_json::from_str(&f.data).expect("json")))
            .collect()
    }

    #[test]
    fn an_unanswered_approval_expires_once_with_one_frame() {
        let runs = Runs::default();
        let hub = hub();
        let (link, entry) = linked(&runs, &hub);
        let (_, mut live) = hub.subscribe(None);
        let approver = HttpApprover {
            link,
            hub: hub.clone(),
            timeout: Duration::from_millis(50),
        };
        let answer = approver.ask(&[item()], &CancellationToken::new());
        assert_eq!(answer, ApprovalAnswer::Expired);
        let view = &entry.approval_views()[0];
        assert_eq!(view.status, "expired");
        let conflict = entry.answer(&view.approval_id, true).expect_err("too late");
        assert_eq!(conflict.status, axum::http::StatusCode::CONFLICT);
        let seen = frames(&mut live);
        let kinds: Vec<&str> = seen.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(kinds, ["approval_requested", "approval_resolved"]);
        assert_eq!(seen[1].1["action"], "deny");
        assert_eq!(seen[1].1["reason"], "expired");
    }

    #[test]
    fn an_answer_from_another_thread_reaches_the_waiting_approver() {
        let runs = Runs::default();
        let hub = hub();
        let (link, entry) = linked(&runs, &hub);
        let approver = HttpApprover {
            link,
            hub,
            timeout: Duration::from_secs(10),
        };
        let answering = entry.clone();
        let t = std::thread::spawn(move || {
            let id = loop {
                if let Some(view) = answering.approval_views().first() {
                    break view.approval_id.clone();
                }
                std::thread::sleep(Duration::from_millis(5));
            };
            answering.answer(&id, true)
        });
        assert_eq!(
            approver.ask(&[item()], &CancellationToken::new()),
            ApprovalAnswer::Approve
        );
        assert!(t.join().expect("thread").is_ok());
        assert_eq!(entry.approval_views()[0].status, "approved");
        assert!(entry.answer("a1", true).is_err());
    }

    #[test]
    fn cancelling_a_run_closes_its_pending_approval_with_a_frame_at_once() {
        let runs = Runs::default();
        let hub = hub();
        let (_link, entry) = linked(&runs, &hub);
        let (_, mut live) = hub.subscribe(None);
        let (id, answers) = entry.add_approval(&[item()]);
        assert!(entry.cancel());
        assert_eq!(answers.try_recv(), Ok(ApprovalAnswer::Cancelled));
        assert_eq!(entry.approval_views()[0].status, "cancelled");
        let seen = frames(&mut live);
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert_eq!(seen[0].0, "approval_resolved");
        assert_eq!(seen[0].1["approval_id"], id.as_str());
        assert_eq!(seen[0].1["reason"], "cancelled");
        let (other, _) = entry.add_approval(&[item()]);
        assert_ne!(id, other);
        assert_eq!(id.len(), 17);
    }

    #[test]
    fn a_finished_run_keeps_its_texts_redacted() {
        let runs = Runs::default();
        let (_link, entry) = linked(&runs, &hub());
        let mut redactor = crate::redact::Redactor::new();
        redactor.add_secret("sk-live-0123456789abcdef");
        entry.finish(
            Err(ApiError::internal(
                "the key sk-live-0123456789abcdef leaked",
            )),
            &redactor,
        );
        let view = entry.view();
        assert_eq!(view.error.as_deref(), Some("the key [REDACTED] leaked"));
    }
}
