//! The bot: long polling with the offset saved before each update is handled, the
//! allowlist, one session per chat through the shared runtime (same files and locks as the
//! CLI), the commands, replies under Telegram's cap with a plain-text retry, tool progress in
//! one message edited in place, and approvals as inline keyboards.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio_util::sync::CancellationToken;

use super::api::{BotApi, BotError, Message as TgMessage, Update};
use super::error::TelegramError;
use super::files;
use super::plans::{self, ChatPlans};
use super::state::StateFile;
use crate::config::TelegramConfig;
use crate::runtime::{Runtime, Supervisor};

mod approvals;
mod attachments;
mod commands;
mod sending;
mod turns;

use approvals::{PendingApproval, PendingQuestion};
use commands::{command, plan_note_command};

/// The lock holder name of the bot's turns.
const HOLDER: &str = "odek telegram";

/// One refusal per chat in this time, for chats that may not use the bot.
const REFUSAL_INTERVAL: Duration = Duration::from_secs(600);

/// The longest wait between polls after network errors.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Attempts of one message send (429 and network errors are retried).
/// Raw text per message before MarkdownV2 escaping (at most doubles it).
/// The progress message is edited at most this often (plus once at the end).
const PROGRESS_EDIT_INTERVAL: Duration = Duration::from_millis(800);

/// The commands, as `/help` lists them.
pub const HELP: &str = "odek — an agent that works in this machine's project.\n\
Send a message to give it a task; each chat keeps one session.\n\n\
/new — start a new session\n\
/sessions — this chat's sessions; /resume N continues one\n\
/status — this chat's session and whether a turn is running\n\
/stop (or /cancel) — stop the running turn\n\
/jobs — the background jobs of the running turn, with their last lines\n\
/plan_status — the plan the agent keeps in this session\n\
/undo — put back the files the last turn changed (/undo force overwrites files changed since)\n\
/plan <text> — save a plan note; /plans lists them, /plan_view N, /plan_delete N, /plan_resume N works on one\n\
/schedules — the scheduled jobs that deliver to this chat\n\
/schedule add <cron> <task>, /schedule rm NAME — for the bot's admins\n\
/help — this text";

/// Everything the bot needs: the runtime shared with every surface and its settings.
pub struct BotParts {
    /// The runtime (configuration, model client, tools, session store, events).
    pub runtime: Arc<Runtime>,
    /// The process's supervisor, where every turn runs.
    pub supervisor: Supervisor,
    /// The `telegram` section.
    pub config: TelegramConfig,
    /// `<home>/telegram`.
    pub dir: PathBuf,
}

struct Bot {
    runtime: Arc<Runtime>,
    supervisor: Supervisor,
    config: TelegramConfig,
    api: BotApi,
    state: Mutex<StateFile>,
    /// Chat → its running run.
    running: Mutex<HashMap<i64, String>>,
    /// Run → its chat (for the run's approvals).
    run_chats: Mutex<HashMap<String, i64>>,
    approvals: Mutex<HashMap<String, PendingApproval>>,
    /// Question id → the question.
    questions: Mutex<HashMap<String, PendingQuestion>>,
    refused: Mutex<HashMap<i64, Instant>>,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

/// Fuzzing entry: `data` as a `getUpdates` answer, decoded, and each message's command and
/// each button's data parsed, as the bot does.
#[cfg(any(fuzzing, test))]
pub fn fuzz_updates(data: &[u8]) {
    let Ok(updates) = super::api::decode_updates(data) else {
        return;
    };
    for update in updates {
        if let Some(message) = &update.message {
            let text = message.text.as_deref().or(message.caption.as_deref());
            if let Some(text) = text {
                let _ = commands::command(text);
                let _ = crate::telegram::text::escape(text);
            }
            if let Some(from) = &message.from {
                let _ = display_name(from);
            }
        }
        if let Some(data) = update
            .callback_query
            .as_ref()
            .and_then(|q| q.data.as_deref())
        {
            let _ = approvals::parse_callback(data);
            let _ = approvals::parse_question_callback(data);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

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
    let frames = parts.supervisor.subscribe();
    let bot = Arc::new(Bot {
        runtime: parts.runtime,
        supervisor: parts.supervisor,
        config: parts.config,
        api,
        state: Mutex::new(state),
        running: Mutex::new(HashMap::new()),
        run_chats: Mutex::new(HashMap::new()),
        approvals: Mutex::new(HashMap::new()),
        questions: Mutex::new(HashMap::new()),
        refused: Mutex::new(HashMap::new()),
        tasks: Mutex::new(Vec::new()),
    });
    let frames_done = CancellationToken::new();
    let listener = tokio::spawn(bot.clone().hear_frames(frames, frames_done.clone()));
    let result = bot.poll(&shutdown).await;
    bot.stop().await;
    frames_done.cancel();
    let _ = listener.await;
    result
}

/// How a person is named in the chat: their username, else their first name.
fn display_name(user: &super::api::User) -> String {
    user.username.clone().unwrap_or(user.first_name.clone())
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

    fn allowed(&self, chat: i64, user: Option<i64>) -> bool {
        self.config.allowed_chats.contains(&chat)
            || user.is_some_and(|u| self.config.allowed_users.contains(&u))
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
                let reply =
                    super::schedules::list(self.runtime.config(), self.runtime.home(), chat);
                self.say(chat, &reply).await;
            }
            Some("schedule") => {
                let reply = super::schedules::change(
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
            Some(cmd) => self.on_command(chat, cmd).await,
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
        let running = lock(&self.running).len();
        eprintln!("odek telegram: stopping ({running} running turn(s) cancelled and saved)");
        self.supervisor.shutdown().await;
        let tasks: Vec<_> = lock(&self.tasks).drain(..).collect();
        let _ = tokio::time::timeout(
            crate::runtime::SHUTDOWN_GRACE,
            futures_util::future::join_all(tasks),
        )
        .await;
    }
}

#[cfg(test)]
mod tests {
    use super::approvals::{parse_callback, parse_question_callback, question_keyboard};
    use super::*;

    #[test]
    fn commands_and_callbacks_parse() {
        assert_eq!(command("/plan_status"), Some("plan_status"));
        assert_eq!(command("/plan_status@odek_bot extra"), Some("plan_status"));
        assert_eq!(command("  /new"), Some("new"));
        assert_eq!(command("hello /new"), None);
        assert_eq!(command("/"), None);
        assert_eq!(parse_callback("ap:a7:y"), Some(("a7".into(), true)));
        assert_eq!(parse_callback("ap:a7:n"), Some(("a7".into(), false)));
        assert_eq!(parse_callback("ap:a7:x"), None);
        assert_eq!(parse_callback("zz"), None);
        assert_eq!(parse_question_callback("cq:q1f:2"), Some(("q1f".into(), 2)));
        assert_eq!(parse_question_callback("cq:q1f:x"), None);
        assert_eq!(parse_question_callback("ap:a7:y"), None);
        let keyboard = question_keyboard("q1", &["red".into(), "blue".into()]).expect("buttons");
        assert_eq!(keyboard.inline_keyboard.len(), 2);
        assert_eq!(keyboard.inline_keyboard[1][0].callback_data, "cq:q1:1");
        assert!(question_keyboard("q1", &[]).is_none());
    }
}
