//! One turn: everything a single run of the loop needs, built fresh by [`Runtime::turn`].

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::memory::TurnMemory;
use super::{AuditLog, Runtime, RuntimeError, SessionHandle, tool_selection};
use crate::engine::{Conversation, Engine, EngineParts, Fanout, Observer, PersistFn, RunOutcome};
use crate::events::{Emitter, EventsObserver};
use crate::llm::Message;
use crate::plan::{PlanLimits, PlanStore};
use crate::session::{RunRecord, SaveReport, SessionError};
use crate::subagent::{DelegateSettings, DelegateTasksTool};
use crate::tools::approval::{Approver, Gate, TrustSet};
use crate::tools::background::{JobLimits, Jobs};
use crate::tools::browser::{self, AllowLocal, BrowserSettings, BrowserTool};
use crate::tools::web::{SearchSettings, WebSettings};
use crate::tools::{RegistryParts, build_registry};

/// What a surface brings to a turn: who answers approval prompts (`None` = nobody, the
/// policy's `non_interactive` decides) and who hears about the run (the terminal, an HTTP
/// stream, a chat).
pub struct Surface {
    /// Asks the user about dangerous calls.
    pub approver: Option<Arc<dyn Approver>>,
    /// The surface's output.
    pub output: Arc<dyn Observer>,
    /// The editor's files, when the surface is an editor that offers them.
    pub files: Option<Arc<dyn crate::tools::EditorFiles>>,
    /// What a custom command narrows for this turn; the default narrows nothing.
    pub scope: super::TurnScope,
}

/// One run of the loop, ready to go: see [`Runtime::turn`].
pub struct Turn {
    engine: Engine,
    events: Option<Emitter>,
    session: Option<Arc<SessionHandle>>,
    taint: Arc<crate::tools::Taint>,
    memory: Option<TurnMemory>,
    jobs: Option<Arc<Jobs>>,
    /// The model it asks (its name, read at the end, is the one that answered).
    model: Arc<dyn crate::llm::ChatModel>,
}

/// How a turn ended.
#[derive(Debug)]
pub struct TurnOutcome {
    /// What the engine's run gave: the answer or why there is none, the counts, the plan,
    /// the final transcript (of a turn without a session: a session keeps its own).
    pub run: RunOutcome,
    /// For a turn of a session: the end-of-turn save (the journal folded into the
    /// session file), or why it failed.
    pub saved: Option<Result<SaveReport, SessionError>>,
}

impl Runtime {
    /// A turn for `session` (or a conversation that is not saved) whose events carry
    /// `run_id`: its own engine, plan store, tools and gate, its own event run context, the
    /// session's trust set, and the surface's approver and output. Turns of different
    /// sessions can run at once. Surfaces get turns from the [`super::Supervisor`].
    pub fn turn(
        &self,
        session: Option<&Arc<SessionHandle>>,
        surface: Surface,
        run_id: &str,
    ) -> Result<Turn, RuntimeError> {
        let events = self
            .events
            .as_ref()
            .map(|writer| writer.run(run_id, session.map(|s| s.id().to_string())));
        // Beside the surface's output: the audit log and the events (which the session's
        // `SessionEnd` hooks also report to once the surface has gone).
        let mut side: Vec<Arc<dyn Observer>> = Vec::new();
        if let Some(s) = session {
            let turn = s.saved().turns + 1;
            let audit = AuditLog::new(self.sessions.dir(), self.redactor.clone(), s.id(), turn);
            side.push(Arc::new(audit));
        }
        let events_observer = events.as_ref().map(|e| -> Arc<dyn Observer> {
            Arc::new(EventsObserver::new(e.clone(), self.sandbox.is_on()))
        });
        side.extend(events_observer.clone());
        let surface_files = surface.files.clone();
        let model = self.model_for(&surface.scope, session.map(|s| &**s))?;
        let observer: Arc<dyn Observer> = Arc::new(Fanout([vec![surface.output], side].concat()));
        let model = self.with_fallbacks(model, session.map(|s| &**s), &observer);
        let selection = tool_selection(&self.config);
        let plan = self.plan_store(events.as_ref());
        let taint = self.turn_taint(session);
        let skills = self.skills_catalog();
        let hooks = self.hooks_of(session);
        let approver = self.notifying(surface.approver.clone(), hooks.as_ref(), &observer);
        let jobs = self.jobs_of(session, &observer);
        let policy = self.policy_for(&surface.scope);
        if let (Some(s), Some(h)) = (session, &hooks) {
            self.end_session_with(s, h, events_observer);
        }
        let parts = RegistryParts {
            plan: plan.clone(),
            asker: approver.clone(),
            delegate: self.delegate_tool(
                session,
                approver.clone(),
                self.child_tools(&surface.scope),
                policy.clone(),
            ),
            memory: self.memory_tools(session.map(|s| s.id()), &taint),
            skills: self.skill_tools(skills.as_ref()),
            jobs: jobs.clone(),
            browser: self.browser_of(session),
            ..self.registry_parts()
        };
        let tools = build_registry(&selection, parts).map_err(RuntimeError::Tools)?;
        let tools = super::commands::narrow_tools(tools, surface.scope.tools.as_deref());
        let mut settings = self.engine_settings();
        settings.budgets.price =
            crate::llm::pricing::price_for(model.model_name(), &self.config.pricing);
        let trust = session.map_or_else(|| Arc::new(TrustSet::default()), |s| s.trust().clone());
        let gate = Gate::new(policy, approver, &self.global_config, trust)
            .with_redactor(self.redactor.clone());
        let engine = Engine::new(EngineParts {
            model: model.clone(),
            tools: Arc::new(tools),
            gate: Arc::new(gate),
            plan,
            redactor: self.redactor.clone(),
            observer,
            settings,
            taint: taint.clone(),
            turn_block: super::commands::with_mode_note(
                self.turn_block(skills.as_ref()),
                &surface.scope,
            ),
            checkpoints: self.checkpoints_of(session),
            hooks,
            jobs: jobs.clone(),
            files: surface_files,
            notes: self.nested_instructions(),
        });
        Ok(Turn {
            engine,
            events,
            session: session.cloned(),
            memory: self.turn_memory(&taint),
            taint,
            jobs,
            model,
        })
    }

    /// Where a turn of `session` records its checkpoints: the session and this turn — or,
    /// in a sub-agent, the parent's turn that delegated. None for a conversation that is not
    /// saved, or with `checkpoints.enabled` off.
    fn checkpoint_owner(
        &self,
        session: Option<&Arc<SessionHandle>>,
    ) -> Option<crate::protocol::subagent::CheckpointOwner> {
        if !self.config.checkpoints.enabled {
            return None;
        }
        if let Some(owner) = self.checkpoints_for.get() {
            return Some(owner.clone());
        }
        let session = session?;
        Some(crate::protocol::subagent::CheckpointOwner {
            session: session.id().to_string(),
            turn: session.saved().turns + 1,
        })
    }

    /// The limits of background jobs (none: `background.max_jobs` is 0).
    fn job_limits(&self) -> Option<JobLimits> {
        let b = &self.config.background;
        (b.max_jobs > 0).then(|| JobLimits {
            output_bytes: usize::try_from(b.output_kb.saturating_mul(1024)).unwrap_or(usize::MAX),
            max_jobs: usize::try_from(b.max_jobs).unwrap_or(usize::MAX),
            max_time: Duration::from_secs(b.max_seconds),
        })
    }

    /// The background jobs of a turn of `session` (the session's, kept between its turns;
    /// a turn without a session has its own), whose ends `observer` hears of.
    fn jobs_of(
        &self,
        session: Option<&Arc<SessionHandle>>,
        observer: &Arc<dyn Observer>,
    ) -> Option<Arc<Jobs>> {
        let limits = self.job_limits()?;
        let jobs = match session {
            Some(s) => s.jobs_with(limits),
            None => Arc::new(Jobs::new(limits)),
        };
        // Weak: the session keeps its jobs, and the jobs must not keep the turn's surface.
        let observer = Arc::downgrade(observer);
        jobs.listen(Arc::new(move |ended| {
            if let Some(observer) = observer.upgrade() {
                observer.on_event(&crate::engine::EngineEvent::BackgroundFinished { ended });
            }
        }));
        Some(jobs)
    }

    /// `browser` for a turn of `session` (the session's page, kept between its turns; a turn
    /// without a session has its own), when `browser.enabled` and a browser is found.
    fn browser_of(&self, session: Option<&Arc<SessionHandle>>) -> Option<Arc<BrowserTool>> {
        let b = &self.config.browser;
        if !b.enabled {
            return None;
        }
        let executable = browser::program(&b.executable)?.to_path_buf();
        let settings = BrowserSettings {
            executable,
            allow_local: AllowLocal::from_setting(&b.allow_local),
            web: self.web_settings(),
            timeout: Duration::from_secs(self.config.web.timeout_seconds),
            images: self.config.images,
        };
        let slot = session.map_or_else(Arc::default, |s| s.browser_slot());
        Some(Arc::new(BrowserTool::new(slot, Arc::new(settings))))
    }

    /// The hooks a turn of `session` runs (none configured: none).
    pub(super) fn hooks_of(
        &self,
        session: Option<&Arc<SessionHandle>>,
    ) -> Option<crate::hooks::HookRun> {
        if self.hooks.is_empty() {
            return None;
        }
        let mut run = crate::hooks::HookRun::new(
            self.hooks.as_ref().clone(),
            self.config.hooks.fail_open,
            self.cwd.clone(),
        );
        run.sandbox = self.sandbox.sandbox();
        if let Some(session) = session {
            let id = session.id().to_string();
            run.transcript_path = Some(self.sessions.dir().join(format!("{id}.json")));
            run.session_id = id;
        }
        Some(run)
    }

    /// The checkpoints a turn of `session` takes (see [`Self::checkpoint_owner`]).
    fn checkpoints_of(
        &self,
        session: Option<&Arc<SessionHandle>>,
    ) -> Option<Arc<crate::checkpoint::Checkpoints>> {
        let owner = self.checkpoint_owner(session)?;
        let limits = &self.config.checkpoints;
        crate::checkpoint::prune_now_and_then(
            &crate::checkpoint::root(&self.home),
            crate::checkpoint::Retention {
                keep_days: limits.keep_days,
                max_bytes: limits.max_mb.saturating_mul(1024 * 1024),
            },
        );
        Some(Arc::new(
            crate::checkpoint::Checkpoints::new(
                &crate::checkpoint::root(&self.home),
                &owner.session,
                owner.turn,
                self.config
                    .checkpoints
                    .max_file_mb
                    .saturating_mul(1024 * 1024),
            )
            .with_max_files(self.config.checkpoints.max_files),
        ))
    }

    /// Makes every turn of this runtime record its checkpoints for `owner` (a sub-agent's:
    /// its parent's turn). Only the first call counts.
    pub fn record_checkpoints_for(&self, owner: crate::protocol::subagent::CheckpointOwner) {
        let _ = self.checkpoints_for.set(owner);
    }

    /// The tools a turn of this runtime offers the model, as the model sees them.
    pub fn tool_defs(&self) -> Vec<crate::llm::ToolDef> {
        let selection = tool_selection(&self.config);
        let parts = RegistryParts {
            plan: self.plan_store(None),
            delegate: self.delegate_tool(
                None,
                None,
                self.config.tools.clone(),
                self.config.dangerous.clone(),
            ),
            memory: self.memory_tools(None, &Arc::default()),
            skills: self.skill_tools(self.skills_catalog_peek().as_ref()),
            browser: self.browser_of(None),
            ..self.registry_parts()
        };
        build_registry(&selection, parts)
            .map(|tools| tools.defs().to_vec())
            .unwrap_or_default()
    }

    /// The names of the tools a turn of this runtime offers, in order.
    pub fn tool_names(&self) -> Vec<String> {
        self.tool_defs().into_iter().map(|d| d.name).collect()
    }

    /// `delegate_tasks` for a turn of `session`, when `subagents.enabled` (a child's
    /// configuration turns it off: depth 1) and the model is not a replay or a recording
    /// (a child would reach the real endpoint). A trusted child has `policy`, the turn's.
    fn delegate_tool(
        &self,
        session: Option<&Arc<SessionHandle>>,
        asker: Option<Arc<dyn Approver>>,
        tools: crate::config::ToolsConfig,
        policy: crate::danger_policy::DangerPolicy,
    ) -> Option<Arc<dyn crate::tools::Tool>> {
        let s = &self.config.subagents;
        if !s.enabled || !self.can_delegate {
            return None;
        }
        // The children ask the session's model (after a switch, its provider's endpoint).
        let switched = session.and_then(|s| s.current_model());
        let switched = switched.and_then(|wanted| self.config_of(&wanted).ok());
        let on = switched.as_ref().unwrap_or(&self.config);
        Some(Arc::new(DelegateTasksTool::new(DelegateSettings {
            slots: self.subagent_slots.clone(),
            tools,
            timeout: Duration::from_secs(s.timeout_seconds),
            max_iter: u32::try_from(s.max_iter).unwrap_or(15),
            model: on.model.clone(),
            base_url: on.base_url.clone(),
            provider: on.provider.clone(),
            api_key: on.api_key.clone(),
            provider_headers: self
                .config
                .providers
                .iter()
                .filter(|(_, entry)| !entry.headers.is_empty())
                .map(|(id, entry)| (id.clone(), entry.headers.clone()))
                .collect(),
            fallback_keys: self.fallback_keys(),
            parent_session: session.map(|s| s.id().to_string()),
            checkpoints: self.checkpoint_owner(session),
            asker,
            policy,
            sandbox: self.sandbox.confines_commands(),
            planning: self.planning_enabled(),
            no_agents: self.config.no_agents,
            task_dir: crate::subagent::task_dir(&self.home),
            agents: Arc::new(self.delegate_agents()),
        })))
    }

    /// The named agents a `delegate_tasks` of this runtime may run tasks as: found now
    /// (trust given since the last turn counts), with the tools this runtime offers.
    fn delegate_agents(&self) -> crate::subagent::DelegateAgents {
        let root = std::path::PathBuf::from(&self.project_key);
        let catalog = crate::agents::Catalog::discover(&self.home, Some(&root));
        let mcp: Vec<String> = self
            .mcp
            .tools()
            .iter()
            .map(|t| t.name().to_string())
            .collect();
        let env = std::env::vars().collect();
        crate::subagent::DelegateAgents::new(&catalog, &self.config, &mcp, &env)
    }

    /// What every turn's registry is built from, but its plan store and asker: the sandbox,
    /// the MCP tools, the web settings.
    fn registry_parts(&self) -> RegistryParts {
        let search = &self.config.web_search;
        RegistryParts {
            jobs: self.job_limits().map(|limits| Arc::new(Jobs::new(limits))),
            sandbox: self.sandbox.sandbox(),
            mcp: self.mcp.tools(),
            web: self.web_settings(),
            search: (!search.base_url.trim().is_empty()).then(|| {
                Arc::new(SearchSettings {
                    base_url: search.base_url.trim().to_string(),
                    max_results: search.max_results as usize,
                    timeout: Duration::from_secs(search.timeout_seconds),
                    language: search.language.clone(),
                    categories: search.categories.clone(),
                })
            }),
            ..RegistryParts::default()
        }
    }

    /// What `web_fetch` (and the browser's guard) may reach, and its time limit.
    fn web_settings(&self) -> Arc<WebSettings> {
        let web = &self.config.web;
        Arc::new(WebSettings {
            allow_hosts: web.allow_hosts.clone(),
            allow_private_hosts: web.allow_private_hosts.clone(),
            timeout: Duration::from_secs(web.timeout_seconds),
        })
    }

    /// Planning is on when the configuration enables it and the tool selection keeps `plan`;
    /// otherwise there is no store at all (and so no plan logic anywhere). Plan events go
    /// to the turn's event stream.
    fn plan_store(&self, events: Option<&Emitter>) -> Option<Arc<PlanStore>> {
        if !self.planning_enabled() {
            return None;
        }
        let planning = &self.config.planning;
        let store = PlanStore::new(PlanLimits {
            max_steps: planning.max_steps as usize,
            max_render_chars: planning.max_render_chars as usize,
        });
        if let Some(e) = events {
            store.set_on_change(EventsObserver::plan_callback(e.clone()));
        }
        Some(Arc::new(store))
    }
}

impl Turn {
    /// The background jobs its shell calls start (kept by the session between turns).
    pub fn jobs(&self) -> Option<&Arc<Jobs>> {
        self.jobs.as_ref()
    }

    /// Gives the turn's engine where it takes steer messages from (the session's inbox).
    pub fn steer_with(&mut self, steering: Arc<dyn crate::engine::Steering>) {
        self.engine.set_steering(steering);
    }

    /// This turn's event stream (for an exit that cannot wait for the run to end).
    pub fn events(&self) -> Option<&Emitter> {
        self.events.as_ref()
    }

    /// Records that the turn's input holds external content (a file a person sent through a
    /// chat or the web UI): its memory writes become pending.
    pub fn mark_external(&self, source: &str) {
        self.taint.mark(source);
    }

    /// Runs one tool call through this turn's gate and tools, outside the loop (odek as an
    /// MCP server): the result as the model would read it, and whether it succeeded.
    pub async fn call_tool(
        &self,
        call: &crate::llm::ToolCall,
        cancel: &CancellationToken,
    ) -> (String, bool) {
        self.engine.call_tool(call, cancel).await
    }

    /// Where this turn's external content came from so far (empty = none).
    pub fn external_sources(&self) -> Vec<String> {
        self.taint.sources()
    }

    /// Runs the turn: `input` (the new user message, attachments) continues the session's
    /// transcript — or, without a session, is the whole conversation. The session is saved
    /// as the turn goes (a journal line per batch) and folded into its file at the end.
    pub async fn run(
        self,
        input: Vec<Message>,
        cancel: CancellationToken,
    ) -> Result<TurnOutcome, RuntimeError> {
        let Some(session) = self.session.clone() else {
            let run = self
                .engine
                .run(Conversation::new(input), None, cancel)
                .await;
            return Ok(TurnOutcome { run, saved: None });
        };
        if !session.start_turn() {
            return Err(RuntimeError::TurnInProgress(session.id().to_string()));
        }
        let _running = RunningTurn(&session);
        let session_start = session.first_start();
        let saved_len = {
            let mut writer = session.writer();
            writer.begin_turn()?;
            writer.len()
        };
        let recall = match &self.memory {
            Some(m) => {
                let history = session.live().messages.clone();
                m.recall(&history, &input, session.id()).await
            }
            None => None,
        };
        let conversation = {
            let mut live = session.live();
            let mut messages = std::mem::take(&mut live.messages);
            messages.extend(recall);
            messages.extend(input);
            Conversation {
                messages,
                saved_len,
                saved_plan: live.plan.clone(),
                session_start,
            }
        };
        let writes_to = session.clone();
        let persist: PersistFn =
            Arc::new(move |delta| writes_to.writer().save_delta(delta).map_err(Into::into));
        let mut run = self
            .engine
            .run(conversation, Some(persist), cancel.clone())
            .await;
        if let Some(m) = &self.memory
            && run.result.is_ok()
        {
            let spent = m.episode(&session, &run.messages, &cancel).await;
            run.usage.add(&spent);
        }
        let mut record = run_record(&run);
        record.model = Some(self.model.model_name().to_string());
        let saved = session.writer().finish_turn(&mut run.messages, record);
        if let Some(m) = &self.memory
            && saved.is_ok()
        {
            m.after_turn(&session).await;
        }
        {
            let mut live = session.live();
            live.messages = std::mem::take(&mut run.messages);
            if run.plan.is_some() {
                live.plan = run.plan.clone();
            }
        }
        Ok(TurnOutcome {
            run,
            saved: Some(saved),
        })
    }
}

/// The figures of a run saved with its session (see [`RunRecord`]).
fn run_record(run: &RunOutcome) -> RunRecord {
    let plan = run.plan_telemetry.unwrap_or_default();
    RunRecord {
        at: String::new(),
        input_tokens: run.usage.input_tokens,
        output_tokens: run.usage.output_tokens,
        cached_tokens: run.usage.cache_read_tokens,
        iterations: run.iterations,
        tool_calls: run.tool_calls,
        plans_created: plan.activity.plans_created,
        plans_updated: plan.activity.plans_updated,
        plans_blocked: plan.activity.plans_blocked,
        blocked_streaks: plan.activity.blocked_streaks,
        steps_done: plan.steps_done,
        steps_total: plan.steps_total,
        plan_bytes: plan.plan_bytes_sent,
        cost_microusd: run.cost_usd.map(crate::llm::pricing::microdollars),
        reasoning_tokens: run.usage.reasoning_tokens,
        model: None,
        compaction: false,
    }
}

/// Marks the session free for its next turn when the turn ends, however it ends.
struct RunningTurn<'a>(&'a SessionHandle);

impl Drop for RunningTurn<'_> {
    fn drop(&mut self) {
        self.0.end_turn();
    }
}
