//! The engine's events on the terminal: every event is named here, those it shows and those
//! it leaves to other observers, so a new event is a compile error until it is placed.

use std::io::Write;
use std::time::Duration;

use super::base::Terminal;
use super::glyphs::{ToolLine, shorten, tool_line};
use super::state::{Screen, close_answer_line};
use crate::engine::{EngineEvent, Observer};

impl Observer for Terminal {
    fn on_event(&self, event: &EngineEvent<'_>) {
        match event {
            EngineEvent::ModelCallStarted { .. } => {
                {
                    let mut st = self.lock();
                    st.answer_streamed = false;
                    st.shown.clear();
                    st.replaying = None;
                    st.screen = Screen::Empty;
                }
                self.start_spinner("thinking".into());
            }
            EngineEvent::ModelRetry {
                attempt,
                max_attempts,
                wait,
                reason,
                discards_partial_answer,
            } => self.retry_notice(
                &format!("{reason} — retrying in {:.1}s (attempt {attempt}/{max_attempts})", wait.as_secs_f64()),
                &format!("{reason} — retried (attempt {attempt}/{max_attempts})"),
                *discards_partial_answer,
            ),
            EngineEvent::ModelFallback { .. } => {
                let text = event.notice().unwrap_or_default();
                self.retry_notice(&text, &text, false)
            }
            EngineEvent::Delta { delta, .. } => self.on_delta(*delta),
            EngineEvent::ModelCallFinished { message, streamed, .. } => {
                self.on_model_finished(message, *streamed)
            }
            EngineEvent::ToolCallStarted { call, summary, .. } => {
                let running = {
                    let mut st = self.lock();
                    st.running_tools += 1;
                    st.running_tools
                };
                let label = if running > 1 {
                    format!("running {running} tools")
                } else {
                    format!(
                        "running {} {}",
                        shorten(&call.function.name, 40),
                        shorten(summary, 60)
                    )
                };
                self.start_spinner(label);
            }
            EngineEvent::ToolCallFinished {
                call,
                summary,
                ok,
                duration,
                error,
                ..
            } => self.on_tool_finished(&call.function.name, *ok, *duration, *error, summary),
            EngineEvent::ToolReport { report, .. } => self.on_tool_report(report),
            EngineEvent::BackgroundFinished { ended } => self.line(&self.err_style.dim(&format!(
                "  ⏳ job {} {} after {} s: {}",
                ended.id,
                ended.status,
                ended.duration.as_secs(),
                shorten(&ended.command, 60)
            ))),
            EngineEvent::Hint { text, .. } if self.opts.verbose > 0 => self.line(&self.err_style.yellow(text)),
            EngineEvent::SessionSaveFailed { error } => self.line(&self.err_style.yellow(&format!(
                "odek: warning: could not save the session: {error}"
            ))),
            EngineEvent::ContextTrimmed {
                dropped_groups,
                truncated_results,
                shortened_attachments,
                overflow: Some(overflow),
                ..
            } => self.line(&self.err_style.yellow(&format!(
                "odek: the request was over the model's context window ({overflow}); trimmed to survive: {dropped_groups} message(s) dropped, {truncated_results} output(s) and {shortened_attachments} attachment(s) shortened"
            ))),
            EngineEvent::ContextTrimmed {
                mode,
                dropped_groups,
                truncated_results,
                shortened_attachments,
                ..
            } if self.opts.verbose > 0 => self.line(&self.err_style.dim(&format!(
                "odek: context trimmed ({mode}): {dropped_groups} group(s) dropped, {truncated_results} output(s) and {shortened_attachments} attachment(s) shortened"
            ))),
            EngineEvent::CompactionStarted { .. } => {
                self.line(&self.err_style.dim("odek: summarising the conversation…"))
            }
            EngineEvent::Compacted { .. } => {
                let line = format!("odek: {}", event.notice().unwrap_or_default());
                self.line(&self.err_style.dim(&line))
            }
            EngineEvent::RunStarted { context_window, .. } if self.opts.verbose > 0 => {
                self.line(&self.err_style.dim(&window_line(*context_window)))
            }
            EngineEvent::RunFinished { .. } => {
                self.stop_spinner();
                // A retry notice held back for an answer that never finished.
                let mut st = self.lock();
                if let Some(notice) = st.deferred_notice.take() {
                    close_answer_line(self.opts.answer, &mut st);
                    st.wrote_other();
                    let _ = writeln!(super::sink::Out(std::io::stderr()), "{notice}");
                }
            }
            // Shown only with `-v` (the arms above); without it, nothing on the terminal.
            EngineEvent::Hint { .. }
            | EngineEvent::ContextTrimmed { .. }
            | EngineEvent::RunStarted { .. } => {}
            // Other observers' events (the event stream, the session, the audit log): the
            // terminal shows nothing of them.
            EngineEvent::IterationCompleted { .. }
            | EngineEvent::SessionSaved { .. }
            | EngineEvent::ContentIngested { .. }
            | EngineEvent::PlanChanged { .. }
            | EngineEvent::Hook { .. }
            | EngineEvent::BudgetExceeded { .. } => {}
        }
    }
}

impl Terminal {
    fn on_tool_finished(
        &self,
        name: &str,
        ok: bool,
        duration: Duration,
        error: Option<&str>,
        summary: &str,
    ) {
        {
            let mut st = self.lock();
            st.running_tools = st.running_tools.saturating_sub(1);
        }
        if self.opts.quiet {
            return;
        }
        let line = tool_line(
            self.err_style,
            self.glyphs,
            ToolLine {
                name,
                ok,
                duration,
                error,
                summary,
            },
        );
        self.line(&line);
    }

    /// A sub-agent's start and end, one line each (its goal is the model's text, never
    /// shown here).
    fn on_tool_report(&self, report: &crate::tools::ToolReport) {
        use crate::tools::ToolReport;
        if self.opts.quiet {
            return;
        }
        let s = self.err_style;
        let text = match report {
            // The checkpoint's number is in `odek rewind --list`; a line per edit is noise.
            ToolReport::Checkpoint(_) => return,
            ToolReport::SubagentStarted { index, total } => {
                s.dim(&format!("  ↳ sub-agent {index}/{total} started"))
            }
            ToolReport::SubagentFinished {
                index,
                total,
                status,
                iterations,
                tool_calls,
                duration_ms,
                ..
            } => {
                let line = format!(
                    "  ↳ sub-agent {index}/{total} {status} · {iterations} iterations, {tool_calls} tool calls · {:.1}s",
                    *duration_ms as f64 / 1000.0
                );
                if status == crate::protocol::subagent::EnvelopeStatus::Ok.as_str() {
                    s.dim(&line)
                } else {
                    s.yellow(&line)
                }
            }
        };
        self.line(&text);
    }
}

/// The `-v` line that says the context window and where its size came from.
fn window_line(window: Option<&crate::llm::WindowSize>) -> String {
    match window {
        Some(w) => format!("odek: context window {} tokens ({})", w.tokens, w.source),
        None => "odek: context window unknown (the server does not say): nothing is trimmed before the server reports an overflow; set context_window to give it".into(),
    }
}
