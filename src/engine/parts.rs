//! The engine and the parts it is built from, and the state one run holds.

use std::sync::Arc;
use std::time::Instant;

use super::context;
use super::hints::HintTracker;
use super::observer::Observer;
use super::outcome::AnswerCut;
use super::settings::EngineSettings;
use crate::llm::{ChatModel, Message, Usage};
use crate::plan::PlanStore;
use crate::redact::Redactor;
use crate::tools::ToolRegistry;
use crate::tools::approval::Gate;

/// The loop with everything it drives.
pub struct Engine {
    pub(super) model: Arc<dyn ChatModel>,
    pub(super) tools: Arc<ToolRegistry>,
    pub(super) gate: Arc<Gate>,
    pub(super) plan: Option<Arc<PlanStore>>,
    pub(super) redactor: Arc<Redactor>,
    pub(super) observer: Arc<dyn Observer>,
    pub(super) settings: EngineSettings,
    pub(super) taint: Arc<crate::tools::Taint>,
    pub(super) turn_block: Option<Message>,
    pub(super) checkpoints: Option<Arc<crate::checkpoint::Checkpoints>>,
    pub(super) hooks: Option<crate::hooks::HookRun>,
    pub(super) jobs: Option<Arc<crate::tools::background::Jobs>>,
    pub(super) files: Option<Arc<dyn crate::tools::EditorFiles>>,
    pub(super) notes: Option<Arc<dyn ResultNotes>>,
    /// Where the run takes steer messages from (none: nobody can steer it).
    pub(super) steering: Option<Arc<dyn super::Steering>>,
}

/// What the engine adds after a tool's result, outside its untrusted wrapper (as the hooks'
/// words): the project instructions of a folder a read reached (`instructions::Nested`).
pub trait ResultNotes: Send + Sync {
    /// Told the conversation when a run starts: what it already holds is not added again.
    fn seen(&self, messages: &[Message]);
    /// True when a call of `tool` with `args` may get a note: checked first, on the calling
    /// thread, so it reads no file (a call it rules out costs no hand-off to a blocking
    /// thread).
    fn applies_to(&self, _tool: &str, _args: &serde_json::Value) -> bool {
        true
    }
    /// What to add to the result of a call of `tool` with `args` that succeeded (it may read
    /// files: the engine calls it off the async threads).
    fn note(&self, tool: &str, args: &serde_json::Value) -> Option<String>;
}

/// The parts an engine is built from (see `runtime::Runtime::turn`).
pub struct EngineParts {
    /// The model.
    pub model: Arc<dyn ChatModel>,
    /// The tools.
    pub tools: Arc<ToolRegistry>,
    /// The approval gate.
    pub gate: Arc<Gate>,
    /// The plan store shared with the `plan` tool; `None` = planning off.
    pub plan: Option<Arc<PlanStore>>,
    /// Secret redaction for tool output.
    pub redactor: Arc<Redactor>,
    /// Who hears about the run.
    pub observer: Arc<dyn Observer>,
    /// Settings.
    pub settings: EngineSettings,
    /// Marked when a tool brings in external content (shared with the `memory` tool).
    pub taint: Arc<crate::tools::Taint>,
    /// The turn's frozen block — the skills listing and the memory facts — sent right after
    /// the system prompt in every request and never kept in the transcript (see
    /// `skills::block`, `memory::block`).
    pub turn_block: Option<String>,
    /// The session's checkpoints, taken by the file tools (none: nothing to rewind to).
    pub checkpoints: Option<Arc<crate::checkpoint::Checkpoints>>,
    /// The user's hooks around tool calls (none: no hooks configured).
    pub hooks: Option<crate::hooks::HookRun>,
    /// The session's background jobs: the notice of each that ended goes into the next
    /// model request.
    pub jobs: Option<Arc<crate::tools::background::Jobs>>,
    /// The editor's files, when the surface offers them (the file tools go through it).
    pub files: Option<Arc<dyn crate::tools::EditorFiles>>,
    /// What is added after a successful tool result (the nested project instructions);
    /// none: nothing.
    pub notes: Option<Arc<dyn ResultNotes>>,
}

/// What one run holds while it goes: the transcript, counts, usage and hint trackers.
pub(super) struct RunState {
    pub(super) ctx: context::Context,
    /// Plan version of the last save (`None` = no plan state saved yet).
    pub(super) saved_plan_version: Option<u64>,
    pub(super) usage: Usage,
    pub(super) tool_calls: u64,
    pub(super) iterations: u32,
    pub(super) hints: HintTracker,
    pub(super) started: Instant,
    pub(super) partial: bool,
    pub(super) plan_bytes_sent: u64,
    /// Final answers a `Stop` hook refused in this run.
    pub(super) stop_refusals: u32,
    /// How the last final answer was cut, if it was.
    pub(super) answer_cut: Option<AnswerCut>,
    /// An automatic summary was tried and could not help (not tried again this run).
    pub(super) summary_spent: bool,
    /// Dollars the run's calls cost, each at the price of the model that answered it.
    pub(super) spent_usd: f64,
    /// A call whose model has no known price: the run's cost is unknown.
    pub(super) unpriced: bool,
}

impl RunState {
    /// Adds a call's tokens to the run, and its cost at `price`.
    pub(super) fn charge(&mut self, usage: &Usage, price: Option<crate::llm::pricing::Price>) {
        self.usage.add(usage);
        match price {
            Some(price) => self.spent_usd += price.cost_usd(usage),
            None => self.unpriced = true,
        }
    }

    /// The run's cost, when every call's price is known.
    pub(super) fn cost_usd(&self) -> Option<f64> {
        (!self.unpriced).then_some(self.spent_usd)
    }
}

impl Engine {
    /// Assembles an engine.
    pub fn new(parts: EngineParts) -> Self {
        Engine {
            model: parts.model,
            tools: parts.tools,
            gate: parts.gate,
            plan: parts.plan,
            redactor: parts.redactor,
            observer: parts.observer,
            settings: parts.settings,
            taint: parts.taint,
            turn_block: parts.turn_block.map(Message::system),
            checkpoints: parts.checkpoints,
            hooks: parts.hooks,
            jobs: parts.jobs,
            files: parts.files,
            notes: parts.notes,
            steering: None,
        }
    }

    /// Sets where this engine's run takes steer messages from.
    pub fn set_steering(&mut self, steering: Arc<dyn super::Steering>) {
        self.steering = Some(steering);
    }

    /// The plan store, when planning is on.
    pub fn plan_store(&self) -> Option<&Arc<PlanStore>> {
        self.plan.as_ref()
    }
}
