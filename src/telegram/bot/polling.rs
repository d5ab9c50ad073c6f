//! Long polling: the offset saved before each update is handled, the allowlist (one polite
//! refusal per chat and interval), each message routed to its command, its question or a
//! turn, and shutdown.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::commands::{command, plan_note_command};
use super::parts::{Bot, BotParts, display_name, lock};
use super::pending::Pending;
use super::runs::ChatRuns;
use crate::telegram::api::{BotApi, BotError, Message as TgMessage, Update};
use crate::telegram::error::TelegramError;
use crate::telegram::files;
use crate::telegram::plans::{self, ChatPlans};
use crate::telegram::state::StateFile;

/// One refusal per chat in this time, for chats that may not use the bot.
const REFUSAL_INTERVAL: Duration = Duration::from_secs(600);

/// The longest wait between polls after network errors.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Runs the bot until `shutdown` fires; then cancels the running turns and waits for them
/// to save. Fails at once when Telegram refuses the token.
pub async fn run_bot(parts: BotParts, shutdown: CancellationToken) -> Result<(), TelegramError> {
    let token = parts
        .config
        .bot_token
        .clone()
        .ok_or(TelegramError::NoToken)?;
    let poll = Duration::from_secs(parts.config.poll_timeout);
    let api = BotApi::new(&parts.config.api_base, &token, poll)?;
    let (state, warning) = StateFile::open(&parts.dir).map_err(|source| TelegramError::State {
        dir: parts.dir.clone(),
        source,
    })?;
    if let Some(w) = warning {
        eprintln!("odek telegram: warning: {w}");
    }
    let commands = {
        let runtime = parts.runtime.clone();
        tokio::task::spawn_blocking(move || runtime.commands())
            .await
            .unwrap_or_default()
    };
    for warning in commands.warnings() {
        eprintln!("{warning}");
    }
    for warning in super::custom::warnings(&commands) {
        eprintln!("odek telegram: warning: {warning}");
    }
    let frames = parts.supervisor.subscribe();
    let bot = Arc::new(Bot {
        runtime: parts.runtime,
        supervisor: parts.supervisor,
        config: parts.config,
        api,
        state: Mutex::new(state),
        runs: ChatRuns::default(),
        pending: Pending::default(),
        refused: Mutex::new(HashMap::new()),
    });
    let frames_done = CancellationToken::new();
    let listener = tokio::spawn(bot.clone().hear_frames(frames, frames_done.clone()));
    let result = bot.poll(&shutdown).await;
    bot.stop().await;
    frames_done.cancel();
    let _ = listener.await;
    result
}

impl Bot {
    /// The polling loop.
    async fn poll(self: &Arc<Self>, shutdown: &CancellationToken) -> Result<(), TelegramError> {
        let mut backoff = Duration::from_secs(1);
        let mut failing = false;
        loop {
            let offset = lock(&self.state).state.offset;
            let timeout = u32::try_from(self.config.poll_timeout).unwrap_or(30);
            let answer = tokio::select! {
                _ = shutdown.cancelled() => return Ok(()),
                a = self.api.get_updates(offset, timeout) => a,
            };
            let wait = match answer {
                Ok(updates) => {
                    if failing {
                        eprintln!("odek telegram: connected again");
                        failing = false;
                    }
                    backoff = Duration::from_secs(1);
                    for update in updates {
                        self.accept(update).await;
                    }
                    continue;
                }
                Err(BotError::Api {
                    code, description, ..
                }) if code == 401 || code == 404 => {
                    return Err(TelegramError::TokenRefused { code, description });
                }
                Err(
                    e @ BotError::Api {
                        retry_after: Some(_),
                        ..
                    },
                ) => {
                    let wait = e.retry_delay().unwrap_or(backoff);
                    eprintln!("odek telegram: {e}; waiting {}s as asked", wait.as_secs());
                    wait
                }
                Err(e) => {
                    if !failing {
                        eprintln!("odek telegram: {e}; retrying with backoff");
                    }
                    failing = true;
                    let wait = backoff;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    wait
                }
            };
            tokio::select! {
                _ = shutdown.cancelled() => return Ok(()),
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// Takes one update: the offset moves past it (and is saved) before it is handled.
    async fn accept(self: &Arc<Self>, update: Update) {
        {
            let mut state = lock(&self.state);
            state.state.offset = update.update_id + 1;
            if let Err(e) = state.save() {
                eprintln!("odek telegram: warning: could not save the update offset: {e}");
            }
        }
        if let Some(m) = update.message {
            self.on_message(m).await;
        } else if let Some(q) = update.callback_query {
            self.on_callback(q).await;
        }
    }

    async fn on_message(self: &Arc<Self>, message: TgMessage) {
        let chat = message.chat.id;
        let user = message.from.as_ref().map(|u| u.id);
        let file = files::incoming(&message);
        if message.text.is_none() && file.is_none() {
            return;
        }
        if !self.allowed(chat, user) {
            self.refuse(chat, user).await;
            return;
        }
        let Some(text) = message.text.clone() else {
            if let Some(file) = file {
                self.on_file(chat, file, message.caption.as_deref()).await;
            }
            return;
        };
        let name = message.from.as_ref().map(display_name);
        let args = text
            .trim_start()
            .split_once(char::is_whitespace)
            .map_or("", |(_, a)| a.trim());
        match command(&text) {
            Some("schedules") => {
                let reply = crate::telegram::schedules::list(
                    self.runtime.config(),
                    self.runtime.home(),
                    chat,
                );
                self.say(chat, &reply).await;
            }
            Some("schedule") => {
                let reply = crate::telegram::schedules::change(
                    self.runtime.config(),
                    self.runtime.home(),
                    chat,
                    user,
                    args,
                    self.runtime.cwd(),
                );
                self.say(chat, &reply).await;
            }
            Some(cmd @ ("plan" | "plans" | "plan_view" | "plan_delete")) => {
                let reply = plan_note_command(self.runtime.home(), chat, cmd, args);
                self.say(chat, &reply).await;
            }
            Some("plan_resume") => {
                let plans = ChatPlans::new(self.runtime.home(), chat);
                match plans.get(args) {
                    Ok(note) => self.start_turn(chat, plans::resume_input(&note)).await,
                    Err(e) => self.say(chat, &e.to_string()).await,
                }
            }
            Some("sessions") => self.sessions(chat).await,
            Some("resume") => self.resume(chat, args).await,
            Some("undo") => self.undo(chat, args).await,
            Some(cmd) => self.on_command(chat, cmd, args).await,
            None if self.answer_question(chat, &text, name).await => {}
            None => self.start_turn(chat, text).await,
        }
    }

    /// One polite refusal per chat and [`REFUSAL_INTERVAL`]; no agent turn.
    async fn refuse(&self, chat: i64, user: Option<i64>) {
        let due = {
            let mut refused = lock(&self.refused);
            let due = refused
                .get(&chat)
                .is_none_or(|at| at.elapsed() >= REFUSAL_INTERVAL);
            if due {
                refused.insert(chat, Instant::now());
            }
            due
        };
        eprintln!(
            "odek telegram: refused a message from chat {chat} (user {}): not in telegram.allowed_users or allowed_chats",
            user.map_or("unknown".to_string(), |u| u.to_string())
        );
        if due {
            self.say(
                chat,
                "Sorry, this bot only works for the people it was set up for.",
            )
            .await;
        }
    }

    /// Shutdown: the supervisor cancels the running turns (closing their approvals) and
    /// waits for them to save; then the replies go out.
    async fn stop(&self) {
        let running = self.runs.count();
        eprintln!("odek telegram: stopping ({running} running turn(s) cancelled and saved)");
        self.supervisor.shutdown().await;
        let tasks = self.runs.take_tasks();
        let _ = tokio::time::timeout(
            crate::runtime::SHUTDOWN_GRACE,
            futures_util::future::join_all(tasks),
        )
        .await;
    }
}
