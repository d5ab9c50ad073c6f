//! The `plan` tool: what the model is told about it (name, description, JSON schema, and the
//! system-prompt sentence that points it at the tool), and a thin adapter from the tool
//! interface to the shared [`PlanStore`].

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolError};
use crate::plan::{self, PlanStore};

/// The tool's registered name (reserved even when planning is disabled).
pub const TOOL_NAME: &str = super::catalog::PLAN.name;

/// The tool description shown to the model.
pub const TOOL_DESCRIPTION: &str = "Maintain your task plan. Create steps before starting multi-step work; update statuses as you go (in_progress when you start a step, done only after verifying it); mark blocked with a note explaining why. The plan is shown to you on every iteration and survives context trimming \u{2014} trust it over your memory of earlier turns. Replan freely with create when the approach changes; plans are steering aids, not contracts.";

/// The sentence the default system prompt carries about planning.
pub const SYSTEM_PROMPT_SENTENCE: &str = "For multi-step work, maintain a plan with the plan tool: create steps up front, keep statuses current, replan when blocked. The plan survives context trimming \u{2014} trust it over your memory of earlier turns.";

/// The tool's `parameters` JSON Schema, as sent (parsed by [`super::schema`]; a test pins
/// its descriptions and enums).
const SCHEMA: &str = r#"{"type":"object","properties":{"verb":{"enum":["create","update","complete","get"],"description":"create: replace the whole plan. update: batch status/note changes. complete: shorthand to mark one step done. get: return current plan."},"steps":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"title":{"type":"string"},"note":{"type":"string"}},"required":["id","title"]},"description":"create only: full ordered step list (1..max_steps). All steps start pending; mark the first one in_progress with a follow-up update (can ride the same parallel batch)."},"updates":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"status":{"enum":["pending","in_progress","done","blocked"]},"note":{"type":"string"}},"required":["id"]},"description":"update only: applied in array order; unknown id or invalid transition fails the whole call (atomic)."},"step_id":{"type":"string","description":"complete only"}},"required":["verb"]}"#;

/// The tool's `parameters` JSON Schema.
pub fn tool_schema() -> Value {
    super::schema(SCHEMA)
}

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
        TOOL_NAME
    }

    fn description(&self) -> &str {
        TOOL_DESCRIPTION
    }

    fn parameters(&self) -> Value {
        tool_schema()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::StepStatus;

    #[test]
    fn description_is_one_paragraph_with_the_seed_text() {
        assert!(!TOOL_DESCRIPTION.contains('\n'));
        assert!(TOOL_DESCRIPTION.starts_with("Maintain your task plan. Create steps before"));
        assert!(TOOL_DESCRIPTION.contains("survives context trimming — trust it over"));
        assert!(TOOL_DESCRIPTION.ends_with("plans are steering aids, not contracts."));
    }

    #[test]
    fn system_prompt_sentence_is_pinned() {
        assert_eq!(
            SYSTEM_PROMPT_SENTENCE,
            "For multi-step work, maintain a plan with the plan tool: create steps up front, keep statuses current, replan when blocked. The plan survives context trimming — trust it over your memory of earlier turns."
        );
    }

    #[test]
    fn schema_matches_the_seed() {
        let schema = tool_schema();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["required"], json!(["verb"]));
        let props = &schema["properties"];
        assert_eq!(
            props["verb"]["enum"],
            json!(["create", "update", "complete", "get"])
        );
        assert_eq!(
            props["verb"]["description"],
            "create: replace the whole plan. update: batch status/note changes. complete: shorthand to mark one step done. get: return current plan."
        );
        assert_eq!(props["steps"]["items"]["required"], json!(["id", "title"]));
        assert_eq!(props["updates"]["items"]["required"], json!(["id"]));
        assert_eq!(props["step_id"]["description"], "complete only");
        let statuses: Vec<&str> = StepStatus::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(
            props["updates"]["items"]["properties"]["status"]["enum"],
            json!(statuses)
        );
        assert!(
            props["steps"]["description"]
                .as_str()
                .is_some_and(|d| d.starts_with("create only: full ordered step list"))
        );
        assert!(
            props["updates"]["description"]
                .as_str()
                .is_some_and(|d| d.starts_with("update only: applied in array order"))
        );
    }
}
