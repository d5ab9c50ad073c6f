//! The `plan` tool: a thin adapter from the tool interface to the shared [`PlanStore`].

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolError};
use crate::plan::{self, PlanStore};

/// The model's handle on the plan. Always safe: it changes engine memory only, so it never
/// asks for approval, alone or in a batch.
pub struct PlanTool {
    store: Arc<PlanStore>,
}

impl PlanTool {
    /// A plan tool over the runtime's one store.
    pub fn new(store: Arc<PlanStore>) -> Self {
        PlanTool { store }
    }
}

#[async_trait]
impl Tool for PlanTool {
    fn name(&self) -> &str {
        plan::TOOL_NAME
    }

    fn description(&self) -> &str {
        plan::TOOL_DESCRIPTION
    }

    fn parameters(&self) -> Value {
        plan::tool_schema()
    }

    /// Plan output is the engine's own render of validated state; it is not wrapped here
    /// (the protected plan message wraps the model-derived lines itself).
    fn untrusted_source(&self, _args: &Value) -> Option<String> {
        None
    }

    fn runs_in_call_order(&self) -> bool {
        true
    }

    fn invalid_arguments(&self, reason: &serde_json::Error) -> Option<String> {
        Some(plan::PlanError::ParseArgs(reason.to_string()).to_string())
    }

    fn summary(&self, args: &Value) -> String {
        let verb = args.get("verb").and_then(Value::as_str).unwrap_or("?");
        match args.get("step_id").and_then(Value::as_str) {
            Some(id) => format!("{verb} {id}"),
            None => verb.to_string(),
        }
    }

    fn event_summary(&self, args: &Value) -> Option<Value> {
        let verb = args.get("verb").and_then(Value::as_str).unwrap_or("");
        Some(json!({"verb": verb}))
    }

    async fn call(&self, args: &str, _ctx: &ToolContext) -> Result<String, ToolError> {
        self.store.call(args).map_err(|e| ToolError(e.to_string()))
    }
}
