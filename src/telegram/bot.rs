//! The bot: long polling with the offset saved before each update is handled, the
//! allowlist, one session per chat through the shared runtime (same files and locks as the
//! CLI), the commands, replies under Telegram's cap with a plain-text retry, tool progress in
//! one message edited in place, and approvals as inline keyboards.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio_util::sync::CancellationToken;

use super::api::SEND_ATTEMPTS;
use super::api::{
    BotApi, BotError, Button, CallbackQuery, EditMessageText, InlineKeyboard, Message as TgMessage,
    ParseMode, SendMessage, Update,
};
use super::chats;
use super::error::{SendError, TelegramError};
use super::files;
use super::outgoing;
use super::plan_status::{self, PlanStatus};
use super::plans::{self, ChatPlans};
use super::state::{ChatSession, StateFile};
use super::text::{MAX_MESSAGE_UNITS, split, utf16_len};
use crate::config::TelegramConfig;
use crate::engine::{EngineEvent, Observer};
use crate::llm::Message;
use crate::protocol::{
    ApprovalAction, ApprovalReason, ApprovalRequested, ApprovalResolved, ClarifyRequested,
    ClarifyResolved, Event,
};
use crate::runtime::supervisor::Frame;
use crate::runtime::{Approvals, Runtime, RuntimeError, SessionHandle, Submission, Supervisor};
use crate::session::{ORIGIN_TELEGRAM, SessionError};
use crate::tools::approval::REMOTE_APPROVAL_TIMEOUT;
use crate::tools::catalog::tool_emoji;

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
/plan_status — the plan the agent keeps in this session\n\
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

/// An approval waiting for a button: its chat, its message once sent, its text, and who
/// pressed a button.
struct PendingApproval {
    chat: i64,
    message_id: Option<i32>,
    text: String,
    answered_by: Option<String>,
}

/// A `clarify` question waiting for a button or a reply: its chat, its message once sent,
/// its text and options, and who answered.
struct PendingQuestion {
    chat: i64,
    message_id: Option<i32>,
    text: String,
    options: Vec<String>,
    answered_by: Option<String>,
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
            Some(cmd) => self.on_command(chat, cmd).await,
            None if self.answer_question(chat, &text, name).await => {}
            None => self.start_turn(chat, text).await,
        }
    }

    /// A message in a chat whose turn waits on a question answers it (the oldest, if the
    /// model asked several); true when it did.
    async fn answer_question(&self, chat: i64, text: &str, name: Option<String>) -> bool {
        let pending = {
            let mut questions = lock(&self.questions);
            let oldest = questions
                .iter_mut()
                .filter(|(_, q)| q.chat == chat)
                .min_by_key(|(_, q)| q.message_id.unwrap_or(i32::MAX));
            oldest.map(|(id, q)| {
                q.answered_by = name;
                (id.clone(), q.options.clone())
            })
        };
        let Some((id, options)) = pending else {
            return false;
        };
        let Some(answer) = crate::tools::answer_from_reply(&options, text) else {
            return false;
        };
        if self.supervisor.answer_question(&id, &answer).is_err() {
            // Closed meanwhile (its frame is on the way): the message is an ordinary one.
            lock(&self.questions).remove(&id);
            return false;
        }
        true
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

    async fn on_command(self: &Arc<Self>, chat: i64, cmd: &str) {
        match cmd {
            "start" | "help" => self.say(chat, HELP).await,
            "new" => {
                if lock(&self.running).contains_key(&chat) {
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
                let run = lock(&self.running).get(&chat).cloned();
                let cancelled = run.map(|run| self.supervisor.cancel(&run));
                let text = if cancelled.is_some() {
                    "Cancelling…"
                } else {
                    "Nothing is running."
                };
                self.say(chat, text).await;
            }
            "plan_status" => self.plan_status(chat).await,
            other => {
                self.say(
                    chat,
                    &format!("Unknown command /{other}. /help lists the commands."),
                )
                .await;
            }
        }
    }

    fn status(&self, chat: i64) -> String {
        let model = self.runtime.config().model.clone();
        let session = self.chat_session(chat);
        let mut lines = vec![match &session {
            Some(s) => format!("Session: {}", s.session_id),
            None => "Session: none yet (your next message starts one)".to_string(),
        }];
        let run = lock(&self.running)
            .get(&chat)
            .and_then(|run| self.supervisor.run(run).ok());
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
        lines.join("\n")
    }

    async fn plan_status(&self, chat: i64) {
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

    /// The chat's sessions that still exist, newest first (read off the async threads).
    async fn listed_sessions(&self, chat: i64) -> Vec<crate::session::SessionSummary> {
        let ids = lock(&self.state).state.sessions_of(chat).to_vec();
        let runtime = self.runtime.clone();
        tokio::task::spawn_blocking(move || chats::chat_sessions(runtime.sessions(), &ids))
            .await
            .unwrap_or_default()
    }

    async fn sessions(&self, chat: i64) {
        let listed = self.listed_sessions(chat).await;
        let current = self.chat_session(chat).map(|s| s.session_id);
        let text = chats::sessions_text(&listed, current.as_deref());
        self.say(chat, &text).await;
    }

    /// `/resume N`: the chat's next message continues its Nth session.
    async fn resume(&self, chat: i64, n: &str) {
        if lock(&self.running).contains_key(&chat) {
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
    fn no_turn_now(&self, chat: i64) -> Option<String> {
        if lock(&self.running).contains_key(&chat) {
            return Some("A turn is still running: wait for it, or /cancel it.".into());
        }
        let budget = self.config.daily_token_budget;
        let used = lock(&self.state).state.tokens_on(chat, &chats::today());
        (budget > 0 && used >= budget).then(|| chats::budget_spent(used, budget))
    }

    /// The chat's live session: none when it has none or it has been silent longer than
    /// `session_ttl_hours`.
    fn chat_session(&self, chat: i64) -> Option<ChatSession> {
        let state = lock(&self.state);
        let s = state.state.chats.get(&chat.to_string())?.clone();
        let ttl = self.config.session_ttl_hours;
        if ttl > 0 && now_secs().saturating_sub(s.last_active) > ttl * 3600 {
            return None;
        }
        Some(s)
    }

    /// A document or photo: fetched (≤ 20 MB), saved into the working directory under a name
    /// that replaces nothing, and named in the turn it starts (whose memory writes become
    /// pending: the file is external content).
    async fn on_file(self: &Arc<Self>, chat: i64, file: files::Incoming, caption: Option<&str>) {
        if let Some(refusal) = self.no_turn_now(chat) {
            self.say(chat, &refusal).await;
            return;
        }
        let bytes = match self
            .api
            .download(&file.file_id, files::MAX_FILE_BYTES)
            .await
        {
            Ok(bytes) => bytes,
            Err(e) => {
                let text = format!("I could not fetch {}: {e}", file.name);
                self.say(chat, &text).await;
                return;
            }
        };
        // A photo goes to a model that takes images as an image part too (a picture it
        // cannot be is only saved, as for a model that does not).
        let image = (file.photo && self.runtime.config().images)
            .then(|| crate::prompt::image_part(&file.name, &bytes).ok())
            .flatten();
        let (dir, sent, size) = (
            self.runtime.cwd().to_path_buf(),
            file.name.clone(),
            bytes.len(),
        );
        let saved = tokio::task::spawn_blocking(move || files::save(&dir, &sent, &bytes))
            .await
            .map_err(|e| std::io::Error::other(e.to_string()))
            .and_then(|r| r);
        match saved {
            Ok(saved) => {
                let text = files::turn_text(caption, &file.name, &saved, size, image.is_some());
                let mut input = Message::user(text);
                input.images.extend(image);
                self.start_turn_with(chat, input, vec!["telegram:file".into()])
                    .await;
            }
            Err(e) => {
                let text = format!("I could not save {}: {e}", file.name);
                self.say(chat, &text).await;
            }
        }
    }

    async fn start_turn(self: &Arc<Self>, chat: i64, text: String) {
        self.start_turn_with(chat, Message::user(text), Vec::new())
            .await;
    }

    /// A turn of the chat's session with `input` (its text and images); `external` names
    /// external content in it.
    async fn start_turn_with(self: &Arc<Self>, chat: i64, input: Message, external: Vec<String>) {
        if let Some(refusal) = self.no_turn_now(chat) {
            self.say(chat, &refusal).await;
            return;
        }
        let existing = self.chat_session(chat).map(|s| s.session_id);
        let runtime = self.runtime.clone();
        let task_text = input.content.clone();
        let opened =
            tokio::task::spawn_blocking(move || open_session(&runtime, existing, &task_text))
                .await
                .map_err(|e| e.to_string())
                .and_then(|r| r.map_err(|e| e.to_string()));
        let session = match opened {
            Ok(session) => session,
            Err(e) => {
                self.say(chat, &format!("Cannot start the turn: {e}")).await;
                return;
            }
        };
        let session_id = session.id().to_string();
        {
            let mut state = lock(&self.state);
            state.state.chats.insert(
                chat.to_string(),
                ChatSession {
                    session_id: session_id.clone(),
                    last_active: now_secs(),
                },
            );
            state.state.remember_session(chat, &session_id);
            if let Err(e) = state.save() {
                eprintln!("odek telegram: warning: could not save the chat's session: {e}");
            }
        }
        let (progress_tx, progress_rx) = unbounded_channel();
        let progress_end = progress_tx.clone();
        let handle = match self.supervisor.submit(Submission {
            runtime: self.runtime.clone(),
            session: Some(session),
            input: vec![input],
            approvals: Approvals::remote(),
            output: Arc::new(ProgressObserver { tx: progress_tx }),
            external,
            origin: crate::session::ORIGIN_TELEGRAM,
        }) {
            Ok(handle) => handle,
            Err(e) => {
                self.say(chat, &format!("Cannot start the turn: {e}")).await;
                return;
            }
        };
        lock(&self.running).insert(chat, handle.run_id.clone());
        lock(&self.run_chats).insert(handle.run_id.clone(), chat);
        let progress = tokio::spawn(self.clone().show_progress(chat, progress_rx));
        let bot = self.clone();
        let task = tokio::spawn(async move {
            let run_id = handle.run_id.clone();
            let outcome = handle.outcome().await;
            let _ = progress_end.send(Progress::End);
            let _ = progress.await;
            // The chat is free before the answer goes out: a message sent the moment the
            // answer arrives starts the next turn instead of being told one is running.
            lock(&bot.running).remove(&chat);
            lock(&bot.run_chats).remove(&run_id);
            {
                let mut state = lock(&bot.state);
                if let Some(s) = state.state.chats.get_mut(&chat.to_string()) {
                    s.last_active = now_secs();
                }
                if let Ok(o) = &outcome {
                    let tokens = o.usage.input_tokens + o.usage.output_tokens;
                    state.state.add_tokens(chat, &chats::today(), tokens);
                }
                let _ = state.save();
            }
            // An answer goes as MarkdownV2; how a turn ended otherwise, as plain text.
            match outcome {
                Ok(o) => match o.result {
                    Ok(answer) => bot.deliver(chat, &answer).await,
                    Err(crate::engine::RunError::Cancelled) => bot.say(chat, "Cancelled.").await,
                    Err(e) => {
                        let text = match o.summary {
                            Some(summary) => format!("{e}\n\n{summary}"),
                            None => format!("The turn failed: {e}"),
                        };
                        bot.say(chat, &text).await;
                    }
                },
                Err(e) => bot.say(chat, &format!("The turn failed: {e}")).await,
            }
        });
        lock(&self.tasks).push(task);
    }

    /// Tool progress: one message, created at the first tool call and edited as calls end.
    async fn show_progress(self: Arc<Self>, chat: i64, mut rx: UnboundedReceiver<Progress>) {
        let mut lines: Vec<String> = Vec::new();
        let mut message_id: Option<i32> = None;
        let mut shown = String::new();
        let mut last_edit = Instant::now() - PROGRESS_EDIT_INTERVAL;
        loop {
            let next = if message_id.is_some() && last_edit.elapsed() < PROGRESS_EDIT_INTERVAL {
                match tokio::time::timeout(PROGRESS_EDIT_INTERVAL, rx.recv()).await {
                    Ok(line) => line.map(Some),
                    Err(_) => Some(None),
                }
            } else {
                rx.recv().await.map(Some)
            };
            let done = match next {
                None | Some(Some(Progress::End)) => true,
                Some(Some(Progress::Line(line))) => {
                    lines.push(line.render());
                    // Many calls: keep the newest under the cap.
                    while utf16_len(&lines.join("\n")) > MAX_MESSAGE_UNITS - 64 && lines.len() > 1 {
                        lines.remove(0);
                    }
                    false
                }
                Some(None) => false,
            };
            let text = lines.join("\n");
            let due = done || last_edit.elapsed() >= PROGRESS_EDIT_INTERVAL;
            if !text.is_empty() && text != shown && due {
                match message_id {
                    None => message_id = self.send(chat, &text, None, None).await,
                    Some(id) => self.edit(chat, id, &text, None).await,
                }
                shown = text;
                last_edit = Instant::now();
            }
            if done {
                return;
            }
        }
    }

    /// Sends an answer: its text, then the files its `MEDIA:` lines name (see
    /// [`outgoing`]); a file that cannot go is answered with why, in one message.
    async fn deliver(&self, chat: i64, answer: &str) {
        let (text, media) = outgoing::take_media_lines(answer);
        if !text.is_empty() || media.is_empty() {
            self.reply(chat, &text).await;
        }
        let mut problems = Vec::new();
        for (n, line) in media.into_iter().enumerate() {
            if n >= outgoing::MAX_FILES_PER_ANSWER {
                problems.push(format!(
                    "Not sent: {} (at most {} files per answer).",
                    line.path,
                    outgoing::MAX_FILES_PER_ANSWER
                ));
                continue;
            }
            let cwd = self.runtime.cwd().to_path_buf();
            let redactor = self.runtime.redactor().clone();
            let path = line.path.clone();
            let read = tokio::task::spawn_blocking(move || {
                outgoing::read_for_sending(&cwd, &line, &redactor)
            })
            .await
            .unwrap_or_else(|e| Err(SendError::Stopped(e.to_string())));
            let sent = match read {
                Ok(file) => self
                    .api
                    .send_file(chat, &file)
                    .await
                    .map_err(SendError::Upload),
                Err(e) => Err(e),
            };
            if let Err(e) = sent {
                problems.push(format!("Could not send {path}: {e}"));
            }
        }
        if !problems.is_empty() {
            self.say(chat, &problems.join("\n")).await;
        }
    }

    /// Sends the answer (redacted) in pieces under the cap, MarkdownV2 or plain
    /// ([`BotApi::send_answer`]).
    async fn reply(&self, chat: i64, text: &str) {
        let text = self.runtime.redactor().redact(text);
        if let Err(e) = self.api.send_answer(chat, &text).await {
            eprintln!("odek telegram: could not send a reply to chat {chat}: {e}");
        }
    }

    /// Plain text (redacted), split under the cap.
    async fn say(&self, chat: i64, text: &str) {
        let text = self.runtime.redactor().redact(text);
        for piece in split(&text, MAX_MESSAGE_UNITS) {
            let _ = self.send(chat, &piece, None, None).await;
        }
    }

    /// Sends one message; errors are reported on stderr. Returns its id.
    async fn send(
        &self,
        chat: i64,
        text: &str,
        mode: Option<ParseMode>,
        markup: Option<InlineKeyboard>,
    ) -> Option<i32> {
        match self.send_once_retrying(chat, text, mode, markup).await {
            Ok(id) => Some(id),
            Err(e) => {
                eprintln!("odek telegram: could not send a message to chat {chat}: {e}");
                None
            }
        }
    }

    /// `sendMessage`, retried after 429 (`retry_after`) and network errors.
    async fn send_once_retrying(
        &self,
        chat: i64,
        text: &str,
        mode: Option<ParseMode>,
        markup: Option<InlineKeyboard>,
    ) -> Result<i32, BotError> {
        let params = SendMessage {
            chat_id: chat,
            text,
            parse_mode: mode,
            reply_markup: markup.as_ref(),
        };
        self.api.send_retrying(&params).await
    }

    async fn edit(&self, chat: i64, message_id: i32, text: &str, markup: Option<InlineKeyboard>) {
        let params = EditMessageText {
            chat_id: chat,
            message_id,
            text,
            reply_markup: markup.as_ref(),
        };
        for attempt in 1..=SEND_ATTEMPTS {
            match self.api.edit_message_text(&params).await {
                Ok(_) => return,
                Err(e) => match e.retry_delay() {
                    Some(wait) if attempt < SEND_ATTEMPTS => tokio::time::sleep(wait).await,
                    _ => {
                        eprintln!("odek telegram: could not edit a message in chat {chat}: {e}");
                        return;
                    }
                },
            }
        }
    }

    /// The supervisor's frames for this bot's runs: an approval asked sends its keyboard,
    /// an approval closed (answered, expired, cancelled) edits its message to say how.
    /// Frames left when `done` fires are handled before it returns.
    async fn hear_frames(
        self: Arc<Self>,
        mut frames: UnboundedReceiver<Arc<Frame>>,
        done: CancellationToken,
    ) {
        loop {
            let frame = tokio::select! {
                frame = frames.recv() => frame,
                () = done.cancelled() => break,
            };
            match frame {
                Some(frame) => self.hear(&frame).await,
                None => return,
            }
        }
        while let Ok(frame) = frames.try_recv() {
            self.hear(&frame).await;
        }
    }

    /// One frame: a request needs the run's chat; a resolution finds its message by its
    /// own id (the run may have ended, and left `run_chats`, by then).
    async fn hear(&self, frame: &Frame) {
        match &frame.event {
            Event::ApprovalResolved(closed) => self.approval_closed(closed).await,
            Event::ClarifyResolved(closed) => self.question_closed(closed).await,
            Event::ApprovalRequested(asked) => {
                if let Some(chat) = self.chat_of(&frame.run_id) {
                    self.approval_asked(chat, asked).await;
                }
            }
            Event::ClarifyRequested(asked) => {
                if let Some(chat) = self.chat_of(&frame.run_id) {
                    self.question_asked(chat, asked).await;
                }
            }
            _ => {}
        }
    }

    /// The chat of one of this bot's runs.
    fn chat_of(&self, run_id: &str) -> Option<i64> {
        lock(&self.run_chats).get(run_id).copied()
    }

    async fn approval_asked(&self, chat: i64, asked: &ApprovalRequested) {
        let mut text = String::from("⚠️ Approval needed");
        for item in &asked.items {
            text.push_str(&format!(
                "\n{} · {}: {}",
                item.class, item.tool, item.resource
            ));
        }
        lock(&self.approvals).insert(
            asked.approval_id.clone(),
            PendingApproval {
                chat,
                message_id: None,
                text: text.clone(),
                answered_by: None,
            },
        );
        let keyboard = approval_keyboard(&asked.approval_id);
        let sent = self.send(chat, &text, None, Some(keyboard)).await;
        if let Some(p) = lock(&self.approvals).get_mut(&asked.approval_id) {
            p.message_id = sent;
        }
    }

    async fn approval_closed(&self, closed: &ApprovalResolved) {
        let pending = lock(&self.approvals).remove(&closed.approval_id);
        let Some(p) = pending else { return };
        let Some(mid) = p.message_id else { return };
        let why = match (closed.reason, closed.action) {
            (ApprovalReason::Answered, action) => {
                let word = if action == ApprovalAction::Approve {
                    "approved"
                } else {
                    "denied"
                };
                match &p.answered_by {
                    Some(name) => format!("{word} by {name}"),
                    None => word.to_string(),
                }
            }
            (ApprovalReason::Expired, _) => format!(
                "expired: no answer in {}s, so not run",
                REMOTE_APPROVAL_TIMEOUT.as_secs()
            ),
            (ApprovalReason::Cancelled, _) => "cancelled: the turn was stopped".into(),
        };
        self.edit(p.chat, mid, &format!("{}\n→ {why}", p.text), None)
            .await;
    }

    async fn question_asked(&self, chat: i64, asked: &ClarifyRequested) {
        let mut text = format!("❓ {}", asked.question);
        for (i, option) in asked.options.iter().enumerate() {
            text.push_str(&format!("\n{}. {option}", i + 1));
        }
        text.push_str(if asked.options.is_empty() {
            "\n(reply with your answer)"
        } else {
            "\n(tap an option or reply in your own words)"
        });
        lock(&self.questions).insert(
            asked.question_id.clone(),
            PendingQuestion {
                chat,
                message_id: None,
                text: text.clone(),
                options: asked.options.clone(),
                answered_by: None,
            },
        );
        let keyboard = question_keyboard(&asked.question_id, &asked.options);
        let sent = self.send(chat, &text, None, keyboard).await;
        if let Some(q) = lock(&self.questions).get_mut(&asked.question_id) {
            q.message_id = sent;
        }
    }

    async fn question_closed(&self, closed: &ClarifyResolved) {
        let pending = lock(&self.questions).remove(&closed.question_id);
        let Some(q) = pending else { return };
        let Some(mid) = q.message_id else { return };
        let why = match closed.reason {
            ApprovalReason::Answered => match &q.answered_by {
                Some(name) => format!("answered by {name}"),
                None => "answered".to_string(),
            },
            ApprovalReason::Expired => format!(
                "no answer in {} minutes: the agent decided on its own",
                crate::tools::approval::REMOTE_QUESTION_TIMEOUT.as_secs() / 60
            ),
            ApprovalReason::Cancelled => "cancelled: the turn was stopped".into(),
        };
        self.edit(q.chat, mid, &format!("{}\n→ {why}", q.text), None)
            .await;
    }

    /// An option button of a question.
    async fn on_question_button(&self, query: &CallbackQuery, id: &str, index: usize) -> String {
        let chat = query.message.as_ref().map(|m| m.chat.id);
        if !chat.is_some_and(|c| self.allowed(c, Some(query.from.id))) {
            return "You may not answer this question.".to_string();
        }
        let option = {
            let mut questions = lock(&self.questions);
            match questions.get_mut(id) {
                Some(q) if Some(q.chat) != chat => return "Not this chat's question.".to_string(),
                Some(q) => {
                    q.answered_by = Some(display_name(&query.from));
                    q.options.get(index).cloned()
                }
                None => None,
            }
        };
        let Some(option) = option else {
            return "This question has already ended.".to_string();
        };
        match self.supervisor.answer_question(id, &option) {
            Ok(()) => format!("answered: {option}"),
            Err(_) => "This question has already ended.".to_string(),
        }
    }

    /// A button of an approval keyboard.
    async fn on_callback(&self, query: CallbackQuery) {
        if let Some((id, index)) = query.data.as_deref().and_then(parse_question_callback) {
            let text = self.on_question_button(&query, &id, index).await;
            if let Err(e) = self.api.answer_callback_query(&query.id, &text).await {
                eprintln!("odek telegram: could not answer a button press: {e}");
            }
            return;
        }
        let user = query.from.id;
        let chat = query.message.as_ref().map(|m| m.chat.id);
        let parsed = query.data.as_deref().and_then(parse_callback);
        let allowed = chat.is_some_and(|c| self.allowed(c, Some(user)));
        let name = display_name(&query.from);
        let text = match parsed {
            Some((id, approve)) if allowed => {
                let same_chat = lock(&self.approvals)
                    .get_mut(&id)
                    .filter(|p| Some(p.chat) == chat)
                    .map(|p| p.answered_by = Some(name.clone()))
                    .is_some();
                if !same_chat && lock(&self.approvals).contains_key(&id) {
                    "Not this chat's approval.".to_string()
                } else {
                    match self.supervisor.answer(&id, approve) {
                        Ok(()) if approve => "approved".to_string(),
                        Ok(()) => "denied".to_string(),
                        Err(_) => "This approval has already ended.".to_string(),
                    }
                }
            }
            Some(_) => "You may not answer this approval.".to_string(),
            None => "Unknown button.".to_string(),
        };
        if let Err(e) = self.api.answer_callback_query(&query.id, &text).await {
            eprintln!("odek telegram: could not answer a button press: {e}");
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

/// The session for a chat's turn: its saved one when it still exists, else a new one
/// (origin `telegram`) whose task is the message.
fn open_session(
    runtime: &Runtime,
    existing: Option<String>,
    text: &str,
) -> Result<Arc<SessionHandle>, RuntimeError> {
    if let Some(id) = existing {
        match runtime.open_session(&id, HOLDER) {
            Ok(session) => return Ok(session),
            Err(RuntimeError::Session(SessionError::NotFound { .. })) => {}
            Err(e) => return Err(e),
        }
    }
    let (head, warning) = runtime.first_messages_on(Some(outgoing::SURFACE_NOTE));
    if let Some(w) = warning {
        eprintln!("odek telegram: warning: {w}");
    }
    runtime.new_session(text, head, ORIGIN_TELEGRAM, HOLDER)
}

/// `/plan <text>`, `/plans`, `/plan_view N`, `/plan_delete N`: the reply.
fn plan_note_command(home: &std::path::Path, chat: i64, cmd: &str, args: &str) -> String {
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
fn command(text: &str) -> Option<&str> {
    let first = text
        .trim_start()
        .strip_prefix('/')?
        .split_whitespace()
        .next()?;
    let name = first.split('@').next().unwrap_or(first);
    (!name.is_empty()).then_some(name)
}

fn approval_keyboard(id: &str) -> InlineKeyboard {
    let button = |text: &str, data: String| Button {
        text: text.to_string(),
        callback_data: data,
    };
    InlineKeyboard {
        inline_keyboard: vec![vec![
            button("✅ Approve", format!("ap:{id}:y")),
            button("⛔ Deny", format!("ap:{id}:n")),
        ]],
    }
}

/// `ap:<id>:y|n` → (id, approve).
fn parse_callback(data: &str) -> Option<(String, bool)> {
    let rest = data.strip_prefix("ap:")?;
    let (id, answer) = rest.rsplit_once(':')?;
    match answer {
        "y" => Some((id.to_string(), true)),
        "n" => Some((id.to_string(), false)),
        _ => None,
    }
}

/// A question's options as buttons, one per row (`cq:<id>:<index>`); none without options.
fn question_keyboard(id: &str, options: &[String]) -> Option<InlineKeyboard> {
    if options.is_empty() {
        return None;
    }
    let rows = options
        .iter()
        .enumerate()
        .map(|(i, option)| {
            vec![Button {
                text: crate::text::fit(option, 60).into_owned(),
                callback_data: format!("cq:{id}:{i}"),
            }]
        })
        .collect();
    Some(InlineKeyboard {
        inline_keyboard: rows,
    })
}

/// `cq:<id>:<index>` → (id, index).
fn parse_question_callback(data: &str) -> Option<(String, usize)> {
    let rest = data.strip_prefix("cq:")?;
    let (id, index) = rest.rsplit_once(':')?;
    Some((id.to_string(), index.parse().ok()?))
}

/// How a person is named in the chat: their username, else their first name.
fn display_name(user: &super::api::User) -> String {
    user.username.clone().unwrap_or(user.first_name.clone())
}

/// One finished tool call for the progress message.
struct ToolLine {
    name: String,
    summary: String,
    ok: bool,
    seconds: f64,
}

impl ToolLine {
    fn render(&self) -> String {
        let mark = if self.ok { "✓" } else { "✗" };
        let summary = crate::text::first_line(&self.summary, 60);
        format!(
            "{} {} {summary} {mark} {:.1}s",
            tool_emoji(&self.name),
            self.name,
            self.seconds
        )
    }
}

/// What the progress message hears.
enum Progress {
    /// A tool call ended.
    Line(ToolLine),
    /// The turn ended: the last edit, then done.
    End,
}

/// The turn's output: finished tool calls go to the progress message.
struct ProgressObserver {
    tx: UnboundedSender<Progress>,
}

impl Observer for ProgressObserver {
    fn on_event(&self, event: &EngineEvent<'_>) {
        if let EngineEvent::ToolCallFinished {
            call,
            summary,
            ok,
            duration,
            ..
        } = event
        {
            let _ = self.tx.send(Progress::Line(ToolLine {
                name: call.function.name.clone(),
                summary: summary.to_string(),
                ok: *ok,
                seconds: duration.as_secs_f64(),
            }));
        }
    }
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn tool_lines_use_the_emoji_table() {
        let line = ToolLine {
            name: "plan".into(),
            summary: "create".into(),
            ok: true,
            seconds: 0.04,
        };
        assert_eq!(line.render(), "📋 plan create ✓ 0.0s");
        let failed = ToolLine {
            name: "shell".into(),
            summary: "x".repeat(70),
            ok: false,
            seconds: 1.25,
        };
        assert_eq!(
            failed.render(),
            format!("💻 shell {}… ✗ 1.2s", "x".repeat(60))
        );
    }
}
