//! The user's hooks around a run: `SessionStart` and `UserPromptSubmit` before the first
//! model call, `Stop` on each final answer (the hooks around tool calls are the batch's).

use super::observer::EngineEvent;
use super::parts::{Engine, RunState};
use crate::llm::Message;

/// Most final answers of one run a `Stop` hook may refuse (a hook that refuses every answer
/// would otherwise hold the run until its iteration cap).
const MAX_STOP_REFUSALS: u32 = 8;

impl Engine {
    /// Runs the `SessionStart` hooks (`source`: `startup` or `resume`): what they say is
    /// added to the prompt for the model.
    pub(super) async fn session_start_hooks(&self, state: &mut RunState, source: &str) {
        use crate::hooks::HookEvent;
        let Some(hooks) = self
            .hooks
            .as_ref()
            .filter(|h| h.wants(HookEvent::SessionStart, None))
        else {
            return;
        };
        let mut fields = serde_json::Map::new();
        fields.insert("source".into(), source.into());
        let (outcome, reports) = hooks.fire(HookEvent::SessionStart, None, fields).await;
        for report in &reports {
            self.observer.on_event(&EngineEvent::Hook {
                iteration: 0,
                report,
            });
        }
        for text in outcome.context {
            let text = self.redactor.redact(&text);
            state.ctx.append_to_prompt(&format!("[hook] {text}"));
        }
    }

    /// Runs the `UserPromptSubmit` hooks on the turn's prompt: their context is added to
    /// it; a block's reason is returned (the model is then not asked).
    pub(super) async fn prompt_hooks(&self, state: &mut RunState) -> Option<String> {
        use crate::hooks::{Decision, HookEvent};
        let hooks = self
            .hooks
            .as_ref()
            .filter(|h| h.wants(HookEvent::UserPromptSubmit, None))?;
        let prompt = state.ctx.prompt_text()?.to_string();
        let mut fields = serde_json::Map::new();
        fields.insert("prompt".into(), prompt.into());
        let (outcome, reports) = hooks.fire(HookEvent::UserPromptSubmit, None, fields).await;
        for report in &reports {
            self.observer.on_event(&EngineEvent::Hook {
                iteration: 0,
                report,
            });
        }
        if let Decision::Block(reason) = outcome.decision {
            return Some(self.redactor.redact(&reason).into_owned());
        }
        for text in outcome.context {
            let text = self.redactor.redact(&text);
            state.ctx.append_to_prompt(&format!("[hook] {text}"));
        }
        None
    }

    /// Runs the `Stop` hooks on a final answer; true when one sent the model back to work
    /// (its reason is then the transcript's last message). `stop_hook_active` tells a hook
    /// that this answer follows one of its refusals, as in Claude Code.
    pub(super) async fn stop_hooks(
        &self,
        iteration: u32,
        state: &mut RunState,
        answer: &str,
    ) -> bool {
        use crate::hooks::{Decision, HookEvent};
        let Some(hooks) = self
            .hooks
            .as_ref()
            .filter(|h| h.wants(HookEvent::Stop, None))
        else {
            return false;
        };
        let mut fields = serde_json::Map::new();
        fields.insert("stop_hook_active".into(), state.stop_refusals.gt(&0).into());
        fields.insert(
            "last_assistant_message".into(),
            self.redactor.redact(answer).into_owned().into(),
        );
        let (outcome, reports) = hooks.fire(HookEvent::Stop, None, fields).await;
        for report in &reports {
            self.observer
                .on_event(&EngineEvent::Hook { iteration, report });
        }
        let Decision::Block(reason) = outcome.decision else {
            return false;
        };
        if state.stop_refusals >= MAX_STOP_REFUSALS {
            tracing::warn!(
                "a Stop hook refused the answer {MAX_STOP_REFUSALS} times; the run ends"
            );
            return false;
        }
        state.stop_refusals += 1;
        state.ctx.push(Message::system(format!(
            "[hook] A Stop hook did not accept this answer and sent you back to work: {}",
            self.redactor.redact(&reason)
        )));
        true
    }
}
