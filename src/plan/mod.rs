//! TEMPORARY placeholder with the agreed API; replaced by the `plan` branch.
#![allow(missing_docs, dead_code)]
use serde::{Deserialize, Serialize};

pub const PLAN_MESSAGE_PREFIX: &str = "[Current plan:";
pub const ABSOLUTE_MAX_STEPS: usize = 50;
pub const TOOL_NAME: &str = "plan";
pub const TOOL_DESCRIPTION: &str = "Maintain your task plan.";
pub const SYSTEM_PROMPT_SENTENCE: &str = "For multi-step work, maintain a plan with the plan tool: create steps up front, keep statuses current, replan when blocked. The plan survives context trimming — trust it over your memory of earlier turns.";
pub fn tool_schema() -> serde_json::Value {
    serde_json::json!({"type":"object","properties":{"verb":{"enum":["create","update","complete","get"]}},"required":["verb"]})
}
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Pending,
    InProgress,
    Done,
    Blocked,
}
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanStep {
    pub id: String,
    pub title: String,
    pub status: StepStatus,
    pub note: String,
}
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanState {
    pub version: u64,
    pub steps: Vec<PlanStep>,
}
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanLimits {
    pub max_steps: usize,
    pub max_render_chars: usize,
}
impl Default for PlanLimits {
    fn default() -> Self {
        PlanLimits {
            max_steps: 12,
            max_render_chars: 2000,
        }
    }
}
pub enum PlanEvent {
    Created {
        steps: usize,
        version: u64,
    },
    Updated {
        steps: usize,
        done: usize,
        in_progress: usize,
        blocked: usize,
        pending: usize,
        version: u64,
    },
}
impl PlanEvent {
    pub fn kind(&self) -> &'static str {
        match self {
            PlanEvent::Created { .. } => "plan_created",
            PlanEvent::Updated { .. } => "plan_updated",
        }
    }
    pub fn payload(&self) -> serde_json::Value {
        serde_json::json!({})
    }
}
#[derive(Debug, thiserror::Error)]
#[error("plan: not available")]
pub struct PlanError;
#[derive(Debug, thiserror::Error)]
#[error("bad plan header")]
pub struct PlanParseError;
pub struct PlanStore {
    limits: PlanLimits,
    state: std::sync::Mutex<PlanState>,
}
impl PlanStore {
    pub fn new(limits: PlanLimits) -> Self {
        PlanStore {
            limits,
            state: Default::default(),
        }
    }
    pub fn limits(&self) -> PlanLimits {
        self.limits
    }
    pub fn set_on_change(&self, _f: Box<dyn Fn(&PlanEvent) + Send + Sync>) {}
    pub fn call(&self, _args_json: &str) -> Result<String, PlanError> {
        Err(PlanError)
    }
    pub fn snapshot(&self) -> PlanState {
        self.state.lock().map(|s| s.clone()).unwrap_or_default()
    }
    pub fn version(&self) -> u64 {
        0
    }
    pub fn restore(&self, _state: PlanState) {}
    pub fn reset(&self) {}
}
pub fn render(_state: &PlanState, _max_render_chars: usize) -> Option<String> {
    None
}
pub fn is_plan_message(role: &str, content: &str) -> bool {
    role == "system" && content.starts_with(PLAN_MESSAGE_PREFIX)
}
pub fn parse_plan_message(_content: &str, _cap: usize) -> Result<PlanState, PlanParseError> {
    Err(PlanParseError)
}
pub fn extract_plan<'a>(
    _messages: impl DoubleEndedIterator<Item = (&'a str, &'a str)>,
) -> Option<PlanState> {
    None
}
