//! The slash commands: `/status`, `/new`, `/stop`, `/jobs`, `/sessions` and `/resume`, `/plan_status`,
//! the plan notes, `/schedules`; the custom ones are `custom.rs`'s.

use std::sync::Arc;

use super::parts::{Bot, lock, now_secs};
use crate::telegram::api::ParseMode;
use crate::telegram::chats;
use crate::telegram::plan_status::{self, PlanStatus};
use crate::telegram::plans::ChatPlans;
use crate::telegram::state::ChatSession;

/// The commands, as `/help` lists them.
const HELP: &str = "odek — an agent that works in this machine's project.\n\
Send a message to give it a task; each chat keeps one session.\n\n\
/new — start a new session\n\
/sessions — this chat's sessions; /resume N continues one\n\
/status — this chat's session and whether a turn is running\n\
/stop (or /cancel) — stop the running turn\n\
/jobs — the background jobs of the running turn, with their last lines\n\
/plan_status — the plan the agent keeps in this session\n\
/model — the session's model and the others; /model N or /model NAME switches it\n\
/compact [what to keep] — summarise the conversation before the last turns\n\
/undo — put back the files the last turn changed (/undo force overwrites files changed since)\n\
/plan <text> — save a plan note; /plans lists them, /plan_view N, /plan_delete N, /plan_resume N works on one\n\
/schedules — the scheduled jobs that deliver to this chat\n\
/schedule add <cron> <task>, /schedule rm NAME — for the bot's admins\n\
/help — this text";

impl Bot {
    /// The bot's own command `cmd`, else a custom one (`args` its arguments).
    pub(super) async fn on_command(self: &Arc<Self>, chat: i64, cmd: &str, args: &str) {
        match cmd {
            "start" | "help" => self.help(chat, HELP).await,
            "new" => {
                if self.runs.is_running(chat) {
                    self.say(chat, "A turn is running; /cancel it first.").await;
                    return;
                }
                let removed = {
                    let mut state = lock(&self.state);
                    let removed = state.state.chats.remove(&chat.to_string());
                    let _ = state.save();
                    removed
                };
                let text = match removed {
                    Some(old) => format!(
                        "New session: your next message starts it. The previous one is kept as {} (odek continue --id {}).",
                        old.session_id, old.session_id
                    ),
                    None => "New session: your next message starts it.".to_string(),
                };
                self.say(chat, &text).await;
            }
            "status" => {
                let text = self.status(chat);
                self.say(chat, &text).await;
            }
            "cancel" | "stop" => {
                let run = self.runs.run_of(chat);
                let cancelled = run.map(|run| self.supervisor.cancel(&run));
                let text = if cancelled.is_some() {
                    "Cancelling…"
                } else {
                    "Nothing is running."
                };
                self.say(chat, text).await;
            }
            "plan_status" => self.plan_status(chat).await,
            "model" => self.model(chat, args).await,
            "compact" => self.compact(chat, args).await,
            "jobs" => {
                let text = self.jobs(chat);
                self.say(chat, &text).await;
            }
            other => self.custom_command(chat, other, args).await,
        }
    }

    pub(super) fn status(&self, chat: i64) -> String {
        let session = self.chat_session(chat);
        let model = self.chat_model(session.as_ref());
        let mut lines = vec![match &session {
            Some(s) => format!("Session: {}", s.session_id),
            None => "Session: none yet (your next message starts one)".to_string(),
        }];
        let run = self
            .runs
            .run_of(chat)
            .and_then(|run| self.supervisor.run(&run).ok());
        match run {
            Some(run) => lines.push(format!(
                "Running: yes, for {}s (session {})",
                run.elapsed().as_secs(),
                run.view().session_id
            )),
            None => lines.push("Running: no".to_string()),
        }
        let scheduled = self.supervisor.running_of(crate::session::ORIGIN_SCHEDULE);
        if scheduled > 0 {
            lines.push(format!(
                "Scheduled runs: {scheduled} running (/schedules lists the jobs)"
            ));
        }
        lines.push(format!("Model: {model}"));
        let state = lock(&self.state);
        if let Some(day) = state.state.usage_on(chat, &chats::today()) {
            lines.push(chats::today_line(day, self.config.daily_token_budget));
        }
        lines.join("\n")
    }

    /// `/jobs`: the background jobs of the chat's running turn (they end with it).
    pub(super) fn jobs(&self, chat: i64) -> String {
        let jobs = self
            .runs
            .run_of(chat)
            .and_then(|run| self.supervisor.run(&run).ok())
            .map(|run| run.view().jobs)
            .unwrap_or_default();
        if jobs.is_empty() {
            return "No background jobs. They run while a turn of this chat runs, and end with it."
                .into();
        }
        jobs.iter()
            .map(|j| {
                let head = format!(
                    "⏳ job {} · {} · {} s · {}",
                    j.id, j.status, j.seconds, j.command
                );
                match j.tail.is_empty() {
                    true => head,
                    false => format!("{head}\n{}", j.tail),
                }
            })
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    pub(super) async fn plan_status(&self, chat: i64) {
        let plan = match self.chat_session(chat) {
            Some(s) => {
                let store = self.runtime.clone();
                let id = s.session_id.clone();
                tokio::task::spawn_blocking(move || {
                    store
                        .sessions()
                        .load(&id)
                        .ok()
                        .and_then(|s| s.current_plan())
                })
                .await
                .ok()
                .flatten()
            }
            None => None,
        };
        match plan_status::render(plan.as_ref()) {
            PlanStatus::Markdown(text) => {
                let _ = self
                    .send(chat, &text, Some(ParseMode::MarkdownV2), None)
                    .await;
            }
            PlanStatus::Plain(text) => self.say(chat, text).await,
        }
    }

    /// `/undo [force]`: the files the session's last turn changed, put back (see UNDO.md).
    pub(super) async fn undo(&self, chat: i64, args: &str) {
        if self.runs.is_running(chat) {
            self.say(chat, "A turn is running; /cancel it first.").await;
            return;
        }
        let Some(session) = self.chat_session(chat) else {
            self.say(chat, "Nothing to undo: this chat has no session yet.")
                .await;
            return;
        };
        let force = args.trim() == "force";
        let runtime = self.runtime.clone();
        let text = tokio::task::spawn_blocking(move || {
            undo_files(&runtime, &session.session_id, force)
                .unwrap_or_else(|e| format!("Nothing was undone: {e}"))
        })
        .await
        .unwrap_or_else(|e| format!("Nothing was undone: {e}"));
        self.say(chat, &text).await;
    }

    /// The chat's sessions that still exist, newest first (read off the async threads).
    pub(super) async fn listed_sessions(&self, chat: i64) -> Vec<crate::session::SessionSummary> {
        let ids = lock(&self.state).state.sessions_of(chat).to_vec();
        let runtime = self.runtime.clone();
        tokio::task::spawn_blocking(move || chats::chat_sessions(runtime.sessions(), &ids))
            .await
            .unwrap_or_default()
    }

    pub(super) async fn sessions(&self, chat: i64) {
        let listed = self.listed_sessions(chat).await;
        let current = self.chat_session(chat).map(|s| s.session_id);
        let text = chats::sessions_text(&listed, current.as_deref());
        self.say(chat, &text).await;
    }

    /// `/resume N`: the chat's next message continues its Nth session.
    pub(super) async fn resume(&self, chat: i64, n: &str) {
        if self.runs.is_running(chat) {
            self.say(chat, "A turn is running; /stop it first.").await;
            return;
        }
        let listed = self.listed_sessions(chat).await;
        let picked = match chats::nth_session(&listed, n) {
            Ok(s) => s,
            Err(e) => return self.say(chat, &e.to_string()).await,
        };
        {
            let mut state = lock(&self.state);
            state.state.chats.insert(
                chat.to_string(),
                ChatSession {
                    session_id: picked.id.clone(),
                    last_active: now_secs(),
                },
            );
            state.state.remember_session(chat, &picked.id);
            if let Err(e) = state.save() {
                eprintln!("odek telegram: warning: could not save the chat's session: {e}");
            }
        }
        let title = crate::text::truncate(&picked.title, 60);
        self.say(
            chat,
            &format!(
                "Resumed \"{title}\" ({} turn(s)); your next message continues it.",
                picked.turns
            ),
        )
        .await;
    }

    /// Why the chat cannot start a turn now, politely: one is running, or the chat has spent
    /// `telegram.daily_token_budget` today.
    pub(super) fn no_turn_now(&self, chat: i64) -> Option<String> {
        if self.runs.is_running(chat) {
            return Some("A turn is still running: wait for it, or /cancel it.".into());
        }
        let budget = self.config.daily_token_budget;
        let used = lock(&self.state).state.tokens_on(chat, &chats::today());
        (budget > 0 && used >= budget).then(|| chats::budget_spent(used, budget))
    }

    /// The chat's live session: none when it has none or it has been silent longer than
    /// `session_ttl_hours`.
    /// The model the chat's session asks (after a `/model` switch, the one it switched to),
    /// else the configured one.
    fn chat_model(&self, session: Option<&ChatSession>) -> String {
        let config = self.runtime.config();
        session
            .and_then(|s| self.runtime.sessions().load(&s.session_id).ok())
            .map(|saved| crate::config::ModelRef {
                provider: saved.provider,
                model: saved.model,
            })
            .map_or_else(
                || config.model.clone(),
                |named| named.normalized(config).to_string(),
            )
    }

    pub(super) fn chat_session(&self, chat: i64) -> Option<ChatSession> {
        let state = lock(&self.state);
        let s = state.state.chats.get(&chat.to_string())?.clone();
        let ttl = self.config.session_ttl_hours;
        if ttl > 0 && now_secs().saturating_sub(s.last_active) > ttl * 3600 {
            return None;
        }
        Some(s)
    }
}

/// `/plan <text>`, `/plans`, `/plan_view N`, `/plan_delete N`: the reply.
pub(super) fn plan_note_command(
    home: &std::path::Path,
    chat: i64,
    cmd: &str,
    args: &str,
) -> String {
    let plans = ChatPlans::new(home, chat);
    let result = match cmd {
        "plan" => plans
            .save(args)
            .map(|name| format!("Saved plan note {name}. /plans lists them.")),
        "plans" => Ok(plans.listing()),
        "plan_view" => plans.get(args).map(|n| n.text.trim().to_string()),
        _ => plans
            .delete(args)
            .map(|n| format!("Deleted plan note {}.", n.name)),
    };
    result.unwrap_or_else(|e| e.to_string())
}

/// `/cmd@bot args` → `cmd`; not a command → `None`.
pub(super) fn command(text: &str) -> Option<&str> {
    let first = text
        .trim_start()
        .strip_prefix('/')?
        .split_whitespace()
        .next()?;
    let name = first.split('@').next().unwrap_or(first);
    (!name.is_empty()).then_some(name)
}

/// Rewinds session `id`'s files to before its last turn that changed any; the reply.
fn undo_files(runtime: &crate::runtime::Runtime, id: &str, force: bool) -> anyhow::Result<String> {
    use crate::checkpoint::{RewindError, plan_rewind};
    let store = runtime.sessions();
    let session = store.load(id)?;
    let checkpoints = store.checkpoints(id, session.turns);
    let history = checkpoints.history()?;
    let Some(start) = history.last_turn_start() else {
        return Ok("Nothing to undo: no turn of this session changed files.".into());
    };
    let (to, turn) = (start.n, start.turn);
    let plan = plan_rewind(&history, to)?;
    let shown = |path: &std::path::Path| {
        path.strip_prefix(runtime.cwd())
            .unwrap_or(path)
            .display()
            .to_string()
    };
    let mut notes: Vec<String> = plan
        .not_covered
        .iter()
        .map(|what| format!("Not covered, left as it is: {what}"))
        .collect();
    if plan.restores.is_empty() {
        notes.insert(
            0,
            format!("The files are already as they were before turn {turn}."),
        );
        return Ok(notes.join("\n"));
    }
    let _held = store.open(
        id,
        &crate::session::Holder::this_process("odek telegram /undo"),
    )?;
    match checkpoints.rewind(&plan, force) {
        Ok(done) => {
            let mut lines = vec![format!(
                "Undone: {} file(s) as they were before turn {turn}:",
                done.restored.len()
            )];
            lines.extend(
                done.restored
                    .iter()
                    .map(|r| format!("{} {}", r.action(), shown(&r.path))),
            );
            lines.extend(notes);
            lines.extend(
                done.not_covered
                    .iter()
                    .map(|what| format!("Not covered, left as it is: {what}")),
            );
            Ok(lines.join("\n"))
        }
        Err(RewindError::Conflicts(conflicts)) => {
            let mut lines = vec![format!(
                "Nothing was undone: {} file(s) changed since odek wrote them:",
                conflicts.len()
            )];
            lines.extend(conflicts.iter().map(|c| shown(&c.path)));
            lines.push("Send /undo force to overwrite them.".into());
            Ok(lines.join("\n"))
        }
        Err(e) => Err(e.into()),
    }
}
