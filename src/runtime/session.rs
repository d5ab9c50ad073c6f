//! [`SessionHandle`]: a session held for writing by this process, between and during turns.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::llm::Message;
use crate::plan::PlanState;
use crate::session::{Session, SessionWriter};
use crate::tools::approval::TrustSet;
use crate::tools::background::{JobLimits, Jobs};
use crate::tools::browser::BrowserSlot;

/// A session this process holds: its writer (and with it the session's lock, released when
/// the handle is dropped), the live transcript the next turn continues (unredacted, in step
/// with what is saved), the live plan state, and the classes the user trusted for the rest
/// of the session. One turn at a time.
pub struct SessionHandle {
    id: String,
    writer: Mutex<SessionWriter>,
    live: Mutex<Live>,
    trust: Arc<TrustSet>,
    running: AtomicBool,
    /// Whether a turn of this process has started it (the `SessionStart` hooks run before
    /// the first).
    started_here: AtomicBool,
    /// Run once when the handle goes (the `SessionEnd` hooks), with the turns saved and why.
    on_end: Mutex<Option<EndFn>>,
    /// Why the surface let the session go (`SessionEnd`'s `reason`).
    end_reason: Mutex<&'static str>,
    /// The background jobs its turns started (stopped when the handle goes).
    jobs: std::sync::OnceLock<Arc<Jobs>>,
    /// Its browser page (the browser ends when the handle goes).
    browser: std::sync::OnceLock<Arc<BrowserSlot>>,
    /// The model its turns ask since a switch (`None`: the runtime's configured model).
    model: Mutex<Option<crate::config::ModelRef>>,
}

/// What runs when a session's handle goes: given its saved turns and the reason.
pub(crate) type EndFn = Box<dyn FnOnce(u32, &'static str) + Send>;

/// The conversation as this process knows it (with the text redaction removes from disk).
pub(crate) struct Live {
    pub messages: Vec<Message>,
    pub plan: Option<PlanState>,
}

impl SessionHandle {
    pub(crate) fn new(
        writer: SessionWriter,
        messages: Vec<Message>,
        plan: Option<PlanState>,
    ) -> Self {
        SessionHandle {
            id: writer.id().to_string(),
            writer: Mutex::new(writer),
            live: Mutex::new(Live { messages, plan }),
            trust: Arc::new(TrustSet::default()),
            running: AtomicBool::new(false),
            started_here: AtomicBool::new(false),
            on_end: Mutex::new(None),
            end_reason: Mutex::new("other"),
            jobs: std::sync::OnceLock::new(),
            browser: std::sync::OnceLock::new(),
            model: Mutex::new(None),
        }
    }

    /// The model its turns ask since a switch (`None`: the runtime's configured model).
    pub fn current_model(&self) -> Option<crate::config::ModelRef> {
        self.model
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn set_model(&self, model: Option<crate::config::ModelRef>) {
        *self.model.lock().unwrap_or_else(PoisonError::into_inner) = model;
    }

    /// The background jobs of the session, when a turn has had the table.
    pub fn jobs(&self) -> Option<Arc<Jobs>> {
        self.jobs.get().cloned()
    }

    /// The session's job table, made on first use with `limits`.
    pub(crate) fn jobs_with(&self, limits: JobLimits) -> Arc<Jobs> {
        self.jobs
            .get_or_init(|| Arc::new(Jobs::new(limits)))
            .clone()
    }

    /// The session's browser slot, made on first use (its browser starts with the first
    /// action).
    pub(crate) fn browser_slot(&self) -> Arc<BrowserSlot> {
        self.browser.get_or_init(Arc::default).clone()
    }

    /// Sets what runs when the handle goes, unless something already is set.
    pub(crate) fn on_end_once(&self, end: EndFn) {
        let mut slot = self.on_end.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(end);
        }
    }

    /// Why the surface lets the session go, told to the `SessionEnd` hooks (`clear`,
    /// `prompt_input_exit`, `other`: Claude Code's reasons).
    pub fn set_end_reason(&self, reason: &'static str) {
        *self
            .end_reason
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = reason;
    }

    /// `startup` (a new session) or `resume` on the first turn of this process, else `None`:
    /// the `source` of the `SessionStart` hooks.
    pub(crate) fn first_start(&self) -> Option<&'static str> {
        if self.started_here.swap(true, Ordering::SeqCst) {
            return None;
        }
        let earlier = self.saved().turns;
        Some(if earlier == 0 { "startup" } else { "resume" })
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The session's metadata as saved (model, task, turns, tokens), without the transcript.
    pub fn saved(&self) -> Session {
        self.writer().session().metadata()
    }

    /// True once the session has a file on disk.
    pub fn is_saved(&self) -> bool {
        self.writer().is_saved()
    }

    /// The live plan: the state the last turn left (or the saved state before any turn).
    pub fn plan(&self) -> Option<PlanState> {
        self.live().plan.clone()
    }

    /// Names the session by its task (a REPL session is named by its first input).
    pub fn set_task(&self, task: &str) {
        self.writer().set_task(task);
    }

    /// The classes trusted for the rest of this session.
    pub fn trust(&self) -> &Arc<TrustSet> {
        &self.trust
    }

    pub(crate) fn writer(&self) -> MutexGuard<'_, SessionWriter> {
        self.writer.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn live(&self) -> MutexGuard<'_, Live> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks a turn as running; false when one already is.
    pub(crate) fn start_turn(&self) -> bool {
        !self.running.swap(true, Ordering::SeqCst)
    }

    pub(crate) fn end_turn(&self) {
        self.running.store(false, Ordering::SeqCst);
    }
}

impl Drop for SessionHandle {
    fn drop(&mut self) {
        let end = self
            .on_end
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(end) = end {
            let reason = *self
                .end_reason
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner);
            end(self.saved().turns, reason);
        }
    }
}
