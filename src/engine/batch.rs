//! One batch of tool calls: approval, parallel execution bounded by `max_tool_parallel`,
//! results in call order, each shaped for the model (redacted, truncated, wrapped).

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::observer::EngineEvent;
use super::parts::Engine;
use crate::llm::{Message, ToolCall};
use crate::tools::approval::GateRequest;
use crate::tools::danger::Classification;
use crate::tools::{MAX_TOOL_OUTPUT_BYTES, Tool, ToolContext, ToolError};

/// The result of one call, ready to append.
pub(super) struct CallResult {
    /// The `tool` message for the transcript.
    pub message: Message,
    /// False for any error.
    pub ok: bool,
}

struct Prepared {
    call: ToolCall,
    tool: Option<Arc<dyn Tool>>,
    /// The arguments parsed, or why they are refused (the call is then never run).
    args: Result<Value, ToolError>,
    summary: String,
    /// The call's risk, classified once for the gate and the events.
    classification: Option<Classification>,
    event_summary: Option<Value>,
    /// What the `PreToolUse` hooks decided.
    hook: crate::hooks::Decision,
    /// What the hooks before and after the call add for the model.
    hook_context: Vec<String>,
}

/// Longest stretch of refused arguments quoted back to the model.
const QUOTED_ARGUMENTS_CHARS: usize = 2000;

/// The arguments of a call as JSON: empty text counts as `{}`.
fn parse_arguments(arguments: &str) -> Result<Value, serde_json::Error> {
    let text = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    serde_json::from_str(text)
}

/// Replaces arguments that are not valid JSON by `{}` in the assistant message kept in the
/// transcript: providers refuse a history holding them (llama.cpp answers every later
/// request with a 500). The raw text goes into the call's result instead.
pub(super) fn replace_invalid_arguments(message: &mut Message) {
    for call in &mut message.tool_calls {
        if parse_arguments(&call.function.arguments).is_err() {
            call.function.arguments = "{}".to_string();
        }
    }
}

/// Why arguments that do not parse are refused, with the text as received (shortened); the
/// call's result is redacted and wrapped as untrusted like every other result.
fn refused_arguments(raw: &str, error: &serde_json::Error, cut_off: bool) -> String {
    let why = if cut_off {
        "this call was cut off by the output limit (finish_reason \"length\") before its arguments were complete, so it was not run. Make a smaller call: split large content over several calls".to_string()
    } else {
        format!(
            "the arguments are not valid JSON ({error}), so the call was not run. Send the arguments as one JSON object"
        )
    };
    let quoted: String = raw.chars().take(QUOTED_ARGUMENTS_CHARS).collect();
    let more = if quoted.len() < raw.len() {
        "\n[…]"
    } else {
        ""
    };
    format!("{why}.\nThe arguments as received:\n{quoted}{more}")
}

impl Engine {
    /// Runs every call of one assistant message and returns the results in call order.
    /// `cut_off` says the model's answer ended at the output limit (`finish_reason:
    /// "length"`), which explains arguments that stop mid-way.
    pub(super) async fn run_batch(
        &self,
        iteration: u32,
        calls: &[ToolCall],
        cut_off: bool,
        cancel: &CancellationToken,
        spent: &Arc<std::sync::Mutex<crate::llm::Usage>>,
        cost_left: Option<crate::tools::CostLeft>,
    ) -> Vec<CallResult> {
        let ctx = ToolContext {
            cost_left,
            cwd: self.settings.cwd.clone(),
            cancel: cancel.clone(),
            redactor: self.redactor.clone(),
            spent: spent.clone(),
            report: None,
            checkpoints: self.checkpoints.clone(),
            files: self.files.clone(),
            attachments: None,
        };
        let mut prepared: Vec<Prepared> = calls
            .iter()
            .map(|c| self.prepare(c, cut_off, &ctx))
            .collect();
        for p in &mut prepared {
            self.pre_tool_hooks(iteration, p, &ctx).await;
        }
        let verdicts = self.gate.decide(&gate_requests(&prepared), cancel).await;
        let permits = Arc::new(Semaphore::new(self.settings.max_tool_parallel.max(1)));
        let fallbacks: Vec<(String, String)> = prepared
            .iter()
            .map(|p| (p.call.id.clone(), p.call.function.name.clone()))
            .collect();
        let available: Arc<str> = self.tools.names().join(", ").into();
        let mut parallel = Vec::new();
        let mut ordered = Vec::new();
        let mut verdicts = verdicts.into_iter();
        for (index, p) in prepared.into_iter().enumerate() {
            // Only calls that reach the gate get a verdict; a missing one is a denial.
            let verdict = if p.tool.is_some() && p.args.is_ok() {
                verdicts.next().unwrap_or_else(|| {
                    Err(ToolError::new(
                        "no approval decision was made for this call, so it was not run",
                    ))
                })
            } else {
                Ok(())
            };
            self.observer.on_event(&EngineEvent::ToolCallStarted {
                iteration,
                call: &p.call,
                summary: &p.summary,
                event_summary: p.event_summary.as_ref(),
            });
            let in_call_order = p.tool.as_ref().is_some_and(|t| t.runs_in_call_order());
            let call = self.call_future(iteration, p, verdict, &ctx, &permits, available.clone());
            if in_call_order {
                ordered.push((index, call));
            } else {
                parallel.push((index, AbortOnDrop(tokio::spawn(call))));
            }
        }
        // Calls of tools that must see each other's effects (the plan) run one after another,
        // in call order, while the other calls run in parallel.
        let ordered = AbortOnDrop(tokio::spawn(async move {
            let mut done = Vec::with_capacity(ordered.len());
            for (index, call) in ordered {
                done.push((index, call.await));
            }
            done
        }));
        let mut slots: Vec<Option<CallResult>> = fallbacks.iter().map(|_| None).collect();
        for (index, handle) in parallel {
            slots[index] = handle.join().await.ok();
        }
        for (index, result) in ordered.join().await.unwrap_or_default() {
            slots[index] = Some(result);
        }
        slots
            .into_iter()
            .zip(fallbacks)
            .map(|(slot, (id, name))| slot.unwrap_or_else(|| internal_failure(id, name)))
            .collect()
    }

    /// One tool call outside the loop (odek as an MCP server): through the gate, run and
    /// shaped as every result is (redacted, truncated, wrapped); the text and whether it
    /// succeeded.
    pub async fn call_tool(&self, call: &ToolCall, cancel: &CancellationToken) -> (String, bool) {
        let spent = Arc::new(std::sync::Mutex::new(crate::llm::Usage::default()));
        let mut results = self
            .run_batch(0, std::slice::from_ref(call), false, cancel, &spent, None)
            .await;
        match results.pop() {
            Some(r) => (r.message.content, r.ok),
            None => ("error: the call was not run".into(), false),
        }
    }

    fn prepare(&self, call: &ToolCall, cut_off: bool, ctx: &ToolContext) -> Prepared {
        let tool = self.tools.get(&call.function.name).cloned();
        let raw = &call.function.arguments;
        let args = parse_arguments(raw).map_err(|e| {
            let refusal = refused_arguments(raw, &e, cut_off);
            match tool.as_ref().and_then(|t| t.invalid_arguments(&e)) {
                Some(named) => ToolError(format!("{named}\n{refusal}")),
                None => ToolError(refusal),
            }
        });
        let null = Value::Null;
        let a = args.as_ref().unwrap_or(&null);
        let summary = tool
            .as_ref()
            .map(|t| self.redactor.redact(&t.summary(a)).into_owned())
            .unwrap_or_default();
        let classification = match (&tool, &args) {
            (Some(t), Ok(a)) => t.classify(a, ctx),
            _ => None,
        };
        let event_summary = tool
            .as_ref()
            .and_then(|t| t.event_summary(a))
            .map(|summary| with_class(summary, classification.as_ref()));
        Prepared {
            call: call.clone(),
            tool,
            args,
            summary,
            classification,
            event_summary,
            hook: crate::hooks::Decision::None,
            hook_context: Vec::new(),
        }
    }

    /// Runs the `PreToolUse` hooks of a call that can run: a rewritten input replaces the
    /// arguments (and is classified anew), a block refuses the call before the gate, allow
    /// and ask go to the gate.
    async fn pre_tool_hooks(&self, iteration: u32, p: &mut Prepared, ctx: &ToolContext) {
        use crate::hooks::{Decision, HookEvent};
        let (Some(hooks), Some(tool), Ok(args)) = (&self.hooks, &p.tool, &p.args) else {
            return;
        };
        let name = tool.name().to_string();
        if !hooks.wants(HookEvent::PreToolUse, Some(&name)) {
            return;
        }
        let fields = serde_json::Map::new();
        let (outcome, reports) =
            fire_per_file(hooks, HookEvent::PreToolUse, &name, args, &ctx.cwd, fields).await;
        self.report_hooks(iteration, &reports);
        if let Some(updated) = &outcome.updated_input {
            let rewritten = crate::hooks::tool_input_from_hook(updated, args);
            p.classification = tool.classify(&rewritten, ctx);
            p.call.function.arguments = rewritten.to_string();
            p.args = Ok(rewritten);
        }
        p.hook_context = outcome.context;
        p.hook = match outcome.decision {
            Decision::Block(reason) => {
                p.args = Err(ToolError(format!(
                    "a PreToolUse hook blocked this call, so it was not run: {reason}"
                )));
                Decision::None
            }
            other => other,
        };
    }

    fn report_hooks(&self, iteration: u32, reports: &[crate::hooks::HookReport]) {
        for report in reports {
            self.observer
                .on_event(&EngineEvent::Hook { iteration, report });
        }
    }

    /// One call, approved or not, executed and shaped for the model (redacted, truncated,
    /// wrapped); reports its end to the observer.
    fn call_future(
        &self,
        iteration: u32,
        p: Prepared,
        verdict: Result<(), ToolError>,
        ctx: &ToolContext,
        permits: &Arc<Semaphore>,
        available: Arc<str>,
    ) -> impl std::future::Future<Output = CallResult> + Send + use<> {
        let observer = self.observer.clone();
        let redactor = self.redactor.clone();
        let mut ctx = ctx.clone();
        let (heard, call) = (observer.clone(), p.call.clone());
        ctx.report = Some(crate::tools::Reporter(Arc::new(move |report| {
            heard.on_event(&EngineEvent::ToolReport {
                iteration,
                call: &call,
                report,
            });
        })));
        let attached = crate::tools::Attachments::default();
        ctx.attachments = Some(attached.clone());
        let permits = permits.clone();
        let taint = self.taint.clone();
        let hooks = self.hooks.clone();
        let notes = self.notes.clone();
        async move {
            let started = Instant::now();
            let ran = verdict.is_ok() && p.args.is_ok();
            let external = ran && p.tool.as_ref().is_some_and(|t| t.external());
            let reads_files = ran && p.tool.as_ref().is_some_and(|t| t.reads_files());
            let (source, limit) = match (&p.tool, &p.args) {
                (Some(t), Ok(a)) => (t.untrusted_source(a), t.output_limit(a)),
                (Some(t), Err(_)) => (t.untrusted_source(&Value::Null), MAX_TOOL_OUTPUT_BYTES),
                (None, _) => (None, MAX_TOOL_OUTPUT_BYTES),
            };
            let raw = execute(&p, verdict, &available, &ctx, &permits).await;
            if external {
                taint.mark(&p.call.function.name);
            }
            if reads_files {
                taint.mark_files(&p.call.function.name);
            }
            let ok = raw.is_ok();
            let text: std::borrow::Cow<'_, str> = match &raw {
                Ok(s) => s.into(),
                Err(e) => format!("error: {e}").into(),
            };
            let redacted = redactor.redact(&text);
            let shaped = crate::text::head_and_tail(&redacted, limit);
            let content = match source {
                Some(src) => {
                    let src = redactor.redact(&src);
                    observer.on_event(&EngineEvent::ContentIngested {
                        iteration,
                        source: &src,
                        content: &shaped,
                    });
                    crate::untrusted::wrap(&src, &shaped)
                }
                None => shaped.into_owned(),
            };
            let mut content = content;
            if ok
                && let (Some(notes), Ok(args)) = (notes, &p.args)
                && notes.applies_to(&p.call.function.name, args)
            {
                content.push_str(&redactor.redact(&result_note(notes, &p.call, args).await));
            }
            let mut said = p.hook_context.clone();
            if ran && let Some(hooks) = &hooks {
                said.extend(
                    post_tool_hooks(hooks, iteration, &p, &redacted, &ctx, &*observer).await,
                );
            }
            for text in said {
                content.push_str("\n\n[hook] ");
                content.push_str(&redactor.redact(&text));
            }
            let error_line = raw
                .as_ref()
                .err()
                .map(|e| first_line(&redactor.redact(&e.0)));
            observer.on_event(&EngineEvent::ToolCallFinished {
                iteration,
                call: &p.call,
                summary: &p.summary,
                ok,
                duration: started.elapsed(),
                result_bytes: content.len(),
                result: &content,
                error: error_line.as_deref(),
            });
            let mut message = Message::tool_result(&p.call.id, &p.call.function.name, content);
            if ok {
                message.images = take_images(&attached, iteration, &*observer);
            }
            CallResult { message, ok }
        }
    }
}

/// The images a call attached to its result, each logged as outside content by its size
/// and hash (images are never wrapped), as the user's are.
fn take_images(
    attached: &crate::tools::Attachments,
    iteration: u32,
    observer: &dyn super::observer::Observer,
) -> Vec<crate::llm::ImagePart> {
    let images = match attached.lock() {
        Ok(mut images) => std::mem::take(&mut *images),
        Err(_) => Vec::new(),
    };
    for image in &images {
        observer.on_event(&EngineEvent::ContentIngested {
            iteration,
            source: super::observer::IMAGE_SOURCE,
            content: &image.url,
        });
    }
    images
}

/// What the result notes add after a successful call (the nested project instructions),
/// asked off the async threads: it may read files.
async fn result_note(
    notes: Arc<dyn super::parts::ResultNotes>,
    call: &ToolCall,
    args: &Value,
) -> String {
    let (tool, args) = (call.function.name.clone(), args.clone());
    tokio::task::spawn_blocking(move || notes.note(&tool, &args))
        .await
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Runs the `PostToolUse` hooks of a call that ran: what they say for the model (a block's
/// reason, additional context).
async fn post_tool_hooks(
    hooks: &crate::hooks::HookRun,
    iteration: u32,
    p: &Prepared,
    response: &str,
    ctx: &ToolContext,
    observer: &dyn super::observer::Observer,
) -> Vec<String> {
    use crate::hooks::{Decision, HookEvent};
    let name = &p.call.function.name;
    if !hooks.wants(HookEvent::PostToolUse, Some(name)) {
        return Vec::new();
    }
    let args = p.args.as_ref().unwrap_or(&Value::Null);
    let mut fields = serde_json::Map::new();
    fields.insert("tool_response".into(), Value::String(response.to_string()));
    let (outcome, reports) =
        fire_per_file(hooks, HookEvent::PostToolUse, name, args, &ctx.cwd, fields).await;
    for report in &reports {
        observer.on_event(&EngineEvent::Hook { iteration, report });
    }
    let mut said = Vec::new();
    if let Decision::Block(reason) = outcome.decision {
        said.push(format!(
            "a PostToolUse hook objects to this result: {reason}"
        ));
    }
    said.extend(outcome.context);
    said
}

/// Runs the hooks of a tool `event` for one call: once, or once per file for a call that
/// changes several (`batch_patch`; see [`crate::hooks::tool_inputs_for_hook`]), each with
/// its `tool_input` beside `fields`. Their decisions together; a block ends the round. A
/// per-file `updatedInput` is dropped: it cannot stand for the whole call.
async fn fire_per_file(
    hooks: &crate::hooks::HookRun,
    event: crate::hooks::HookEvent,
    tool: &str,
    args: &Value,
    cwd: &std::path::Path,
    fields: serde_json::Map<String, Value>,
) -> (crate::hooks::Outcome, Vec<crate::hooks::HookReport>) {
    let inputs = crate::hooks::tool_inputs_for_hook(tool, args, cwd);
    let per_file = tool == "batch_patch";
    let mut outcome = crate::hooks::Outcome::default();
    let mut reports = Vec::new();
    for input in inputs {
        let mut fields = fields.clone();
        fields.insert("tool_input".into(), input);
        let (mut one, heard) = hooks.fire(event, Some(tool), fields).await;
        reports.extend(heard);
        if per_file {
            one.updated_input = None;
        }
        let blocked = matches!(one.decision, crate::hooks::Decision::Block(_));
        outcome.merge(one);
        if blocked {
            break;
        }
    }
    (outcome, reports)
}

/// A tool's event summary with the call's risk class added (`safe` when it has none).
fn with_class(mut summary: Value, classification: Option<&Classification>) -> Value {
    if let Some(fields) = summary.as_object_mut() {
        let class = classification.map_or("safe", |c| c.class.as_str());
        fields.insert("class".into(), Value::from(class));
    }
    summary
}

fn gate_requests(prepared: &[Prepared]) -> Vec<GateRequest<'_>> {
    prepared
        .iter()
        .filter_map(|p| {
            let (tool, args) = (p.tool.as_ref()?, p.args.as_ref().ok()?);
            Some(GateRequest {
                call_id: p.call.id.clone(),
                tool: tool.name().to_string(),
                classification: p.classification.clone(),
                command: tool.command(args),
                resource: if p.summary.is_empty() {
                    tool.name().to_string()
                } else {
                    p.summary.clone()
                },
                hook: p.hook.clone(),
                approved_ahead: tool.approved_ahead(),
                arguments: Some(args),
            })
        })
        .collect()
}

/// Runs one call (or explains why it cannot run). A panicking tool becomes an error result.
async fn execute(
    p: &Prepared,
    verdict: Result<(), ToolError>,
    available: &str,
    ctx: &ToolContext,
    permits: &Semaphore,
) -> Result<String, ToolError> {
    let name = &p.call.function.name;
    let Some(tool) = p.tool.clone() else {
        return Err(ToolError(format!(
            "tool \"{name}\" not found; available tools: {available}"
        )));
    };
    // Arguments that are not JSON are refused before the gate: never asked about, never run.
    p.args.as_ref().map_err(Clone::clone)?;
    verdict?;
    let _permit = permits
        .acquire()
        .await
        .map_err(|e| ToolError(e.to_string()))?;
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::new("cancelled before it started"));
    }
    let args = p.call.function.arguments.clone();
    let ctx = ctx.clone();
    let run = AbortOnDrop(tokio::spawn(async move { tool.call(&args, &ctx).await }));
    match run.join().await {
        Ok(result) => result,
        // Builds that unwind (tests, debug); the release binary aborts on a panic after
        // `cli::panic`'s one-line report (Cargo.toml, `panic = "abort"`).
        Err(join) if join.is_panic() => Err(ToolError(format!(
            "tool \"{name}\" panicked: {}",
            panic_message(join.into_panic())
        ))),
        Err(join) => Err(ToolError(format!("tool \"{name}\" was aborted: {join}"))),
    }
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// The first line with text of an error, for the terminal's tool line.
fn first_line(s: &str) -> String {
    crate::text::first_line(s.trim_start(), 160)
}

/// A spawned task that is aborted when its handle is dropped (a cancelled batch must not
/// leave tools running in the background).
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> AbortOnDrop<T> {
    async fn join(mut self) -> Result<T, tokio::task::JoinError> {
        (&mut self.0).await
    }
}

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The result when a call's task itself failed (only an observer panic can cause it); the
/// transcript stays whole.
fn internal_failure(call_id: String, name: String) -> CallResult {
    CallResult {
        message: Message::tool_result(call_id, name, "error: internal: the call's task failed"),
        ok: false,
    }
}

/// Results for a batch that did not finish within the grace period after cancellation.
pub(super) fn cancelled_results(calls: &[ToolCall]) -> Vec<CallResult> {
    calls
        .iter()
        .map(|c| CallResult {
            message: Message::tool_result(
                &c.id,
                &c.function.name,
                "error: cancelled before it finished",
            ),
            ok: false,
        })
        .collect()
}
