//! `odek session list|show|delete|trim|fork|compact|cleanup|search|reindex`.

use std::sync::Arc;

use clap::{Args, Subcommand};

use super::Exit;
use crate::config::home_dir_from;
use crate::llm::{Message, Role};
use crate::redact::Redactor;
use crate::session::{Session, SessionStore};

/// Arguments of `odek session`.
#[derive(Debug, Args)]
pub struct SessionArgs {
    #[command(subcommand)]
    command: SessionCommand,
}

#[derive(Debug, Subcommand)]
enum SessionCommand {
    /// List saved sessions, newest first
    List {
        /// How many to show
        #[arg(short = 'n', long, default_value_t = 20)]
        limit: usize,
        /// Show all of them
        #[arg(long, conflicts_with = "limit")]
        all: bool,
    },
    /// Print a session's transcript (default: the latest)
    Show {
        /// Session id
        id: Option<String>,
        /// Do not shorten tool results
        #[arg(long)]
        full: bool,
    },
    /// Delete a session
    Delete {
        /// Session id
        id: String,
    },
    /// Keep only the system prompt and the last N messages (tool groups stay whole)
    Trim {
        /// Session id
        id: String,
        /// Messages to keep (at least 2)
        n: usize,
    },
    /// Copy a session's first TURN turns (and its plan as it was then) into a new session;
    /// the old one stays as it is
    Fork {
        /// Session id
        id: String,
        /// The turns to keep (0: none; the fork continues after this turn)
        #[arg(long, value_name = "TURN")]
        at: u32,
    },
    /// Summarise a session's conversation before its last turns (compaction.keep_turns) by
    /// the model; the conversation before is kept as a fork
    Compact {
        /// Session id
        id: String,
        /// What the summary must keep
        #[arg(long, value_name = "TEXT")]
        keep: Option<String>,
    },
    /// Delete sessions not updated for DAYS days (0 = all)
    Cleanup {
        /// Age in days
        days: u64,
    },
    /// Find sessions by what was said in them (full-text, best match first)
    Search {
        /// Words to look for
        #[arg(required = true, num_args = 1..)]
        query: Vec<String>,
        /// How many sessions to show
        #[arg(short = 'n', long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=100))]
        limit: u64,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Rebuild the search index from the session files
    Reindex,
}

/// The session store of this user's home (`ODEK_HOME`, else `~/.odek`), for the commands
/// that read or manage sessions without running a turn.
pub fn local_session_store() -> SessionStore {
    let env = std::env::vars().collect();
    SessionStore::new(&home_dir_from(&env), Arc::new(Redactor::new()))
}

/// Runs `odek session …`.
pub fn run(args: SessionArgs) -> crate::error::Fallible<Exit> {
    let store = local_session_store();
    match args.command {
        SessionCommand::List { limit, all } => list(&store, limit, all),
        SessionCommand::Show { id, full } => show(&store, id.as_deref(), full),
        SessionCommand::Search { query, limit, json } => {
            search(&store, &query.join(" "), limit as usize, json)
        }
        SessionCommand::Reindex => reindex(&store),
        SessionCommand::Delete { id } => {
            forget(std::slice::from_ref(&id));
            if store.delete(&id)? {
                println!("Deleted session {id}");
            } else {
                println!("No session {id} (nothing to delete)");
            }
            Ok(Exit::Success)
        }
        SessionCommand::Trim { id, n } => {
            let t = store.trim(&id, n)?;
            if t.after == t.before {
                println!(
                    "Session {id} already has {} messages (≤ {n}), nothing to trim.",
                    t.before
                );
            } else {
                println!(
                    "Trimmed session {id}: {} → {} messages ({} dropped)",
                    t.before,
                    t.after,
                    t.before - t.after
                );
            }
            Ok(Exit::Success)
        }
        SessionCommand::Fork { id, at } => fork(&store, &id, at),
        SessionCommand::Compact { id, keep } => compact(&id, keep.as_deref()),
        SessionCommand::Cleanup { days } => {
            let outcome = store.cleanup(days)?;
            if outcome.deleted > 0 {
                forget_missing(&store);
            }
            match outcome.deleted {
                0 => println!("No sessions to clean up."),
                n => println!("Cleaned up {n} session(s) older than {days} days."),
            }
            if !outcome.skipped_busy.is_empty() {
                println!(
                    "Skipped {} session(s) in use: {}",
                    outcome.skipped_busy.len(),
                    outcome.skipped_busy.join(", ")
                );
            }
            Ok(Exit::Success)
        }
    }
}

/// `odek session compact ID [--keep TEXT]`: the session opened with its model, compacted
/// by the runtime, the outcome's line printed.
fn compact(id: &str, keep: Option<&str>) -> crate::error::Fallible<Exit> {
    use crate::runtime::Threads;
    let flags = super::flags::TurnFlags::default();
    let (setup, session) =
        super::turn::Setup::resume(&flags, Some(id), "odek session compact", Threads::Caller)?;
    let cancel = tokio_util::sync::CancellationToken::new();
    let runtime = setup.runtime.clone();
    let outcome = setup
        .process
        .block_on(runtime.compact(&session, keep, &cancel))?;
    println!("{}", outcome.line());
    Ok(Exit::Success)
}

/// The newest `limit` sessions — every one with `all`, the sub-agents' too; without it,
/// sub-agents' sessions are left out (their parent's session names them).
fn list(store: &SessionStore, limit: usize, all: bool) -> crate::error::Fallible<Exit> {
    let listing = if all {
        store.list_recent(usize::MAX)?
    } else {
        store.list_recent_where(limit, |s| {
            s.origin.as_deref() != Some(crate::subagent::ORIGIN_SUBAGENT)
        })?
    };
    for p in &listing.problems {
        eprintln!("odek: warning: {p}");
    }
    if listing.sessions.is_empty() {
        println!("No sessions found.");
        return Ok(Exit::Success);
    }
    let mut out = String::new();
    out.push_str(&format!(
        "{:<41} {:>5}  {:<20}  {}\n",
        "ID", "Turns", "Model", "Task"
    ));
    out.push_str(&"─".repeat(100));
    out.push('\n');
    for s in &listing.sessions {
        out.push_str(&format!(
            "{:<41} {:>5}  {:<20}  {}\n",
            s.id,
            s.turns,
            crate::text::truncate(&s.model, 20),
            crate::text::visible(&crate::text::truncate(&one_line(&s.title), 50), false)
        ));
    }
    if listing.total > listing.sessions.len() {
        out.push_str(&format!(
            "… and {} more (--all shows every session)\n",
            listing.total - listing.sessions.len()
        ));
    }
    print_out(&out);
    Ok(Exit::Success)
}

/// The memory database of this home when there is one (never created here), or `None`
/// with a warning when it cannot be used.
fn memory_db() -> Option<crate::memory::Memory> {
    let env = std::env::vars().collect();
    let home = home_dir_from(&env);
    if !crate::memory::db::path_in(&home).exists() {
        return None;
    }
    match crate::memory::Memory::open(&home) {
        Ok(m) => Some(m),
        Err(e) => {
            eprintln!("odek: warning: {e}");
            None
        }
    }
}

/// Drops deleted sessions from the search index (the next search would drop them too).
fn forget(ids: &[String]) {
    if let Some(m) = memory_db() {
        for id in ids {
            if let Err(e) = m.forget_session(id) {
                eprintln!("odek: warning: {e}");
            }
        }
    }
}

/// Drops every indexed session whose file is gone.
fn forget_missing(store: &SessionStore) {
    if let Some(m) = memory_db()
        && let Err(e) = m.forget_missing(store)
    {
        eprintln!("odek: warning: {e}");
    }
}

/// The configuration (for the embeddings endpoint) and this process's redactor (the
/// configured secrets too, as the session files were redacted with).
fn configured() -> crate::error::Fallible<(crate::config::Config, Arc<Redactor>)> {
    let resolved =
        crate::config::load(&crate::config::LoadOptions::from_process(Default::default()))?;
    let redactor = crate::runtime::build_redactor(&resolved.config);
    Ok((resolved.config, redactor))
}

/// `odek session search`: the index (rebuilt first when missing), hybrid with embeddings.
fn search(
    store: &SessionStore,
    query: &str,
    limit: usize,
    json: bool,
) -> crate::error::Fallible<Exit> {
    let (config, redactor) = configured()?;
    let env = std::env::vars().collect();
    let memory = Arc::new(crate::memory::Memory::open(&home_dir_from(&env))?);
    if !memory.index_is_current()? {
        eprintln!("odek: building the session index (once)…");
    }
    let embedder = crate::runtime::embedder_for(&config);
    let searcher = crate::memory::search_tool::Searcher {
        memory: &memory,
        sessions: store,
        embedder: embedder.as_ref(),
        redactor: &redactor,
    };
    let rt = super::turn::tokio_runtime()?;
    let hits = rt.block_on(crate::memory::search_tool::search(
        &searcher, query, limit, None,
    ))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&hits)?);
        return Ok(Exit::Success);
    }
    if hits.is_empty() {
        println!("No session matches \"{query}\".");
        return Ok(Exit::Success);
    }
    let mut out = String::new();
    for h in &hits {
        out.push_str(&format!(
            "{}  {}  {:<8}  {}\n    {}\n",
            h.id,
            h.date.get(..10).unwrap_or(&h.date),
            h.origin.as_deref().unwrap_or("cli"),
            crate::text::truncate(&one_line(&h.title), 60),
            one_line(&h.snippet)
        ));
    }
    print_out(&out);
    Ok(Exit::Success)
}

/// `odek session reindex`: the whole index again from the session files.
fn reindex(store: &SessionStore) -> crate::error::Fallible<Exit> {
    let (_, redactor) = configured()?;
    let env = std::env::vars().collect();
    let memory = crate::memory::Memory::open(&home_dir_from(&env))?;
    let started = std::time::Instant::now();
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let report = memory.reindex(store, &redactor, &mut |done, total| {
        if tty {
            eprint!("\rindexing sessions: {done}/{total}");
        }
    })?;
    if tty {
        eprintln!();
    }
    for p in &report.problems {
        eprintln!("odek: warning: {p}");
    }
    println!(
        "Indexed {} session(s), {} passage(s) in {:.1} s.",
        report.sessions,
        report.passages,
        started.elapsed().as_secs_f64()
    );
    Ok(Exit::Success)
}

/// Shows `id`, or the most recently updated session of any origin.
fn show(store: &SessionStore, id: Option<&str>, full: bool) -> crate::error::Fallible<Exit> {
    let latest;
    let id = match id {
        Some(id) => id,
        None => match store.latest()? {
            Some(summary) => {
                latest = summary.id;
                &latest
            }
            None => crate::error::bail!("no saved sessions (in {})", store.dir().display()),
        },
    };
    let session = store.load(id)?;
    // Messages are a model's, a file's, a page's text: their control bytes are shown.
    print_out(&crate::text::visible(&render_session(&session, full), true));
    Ok(Exit::Success)
}

/// The human transcript of `odek session show`.
fn render_session(s: &Session, full: bool) -> String {
    let mut out = format!(
        "Session: {}\nModel:   {}\nTurns:   {}\nCreated: {}\nUpdated: {}\nTask:    {}\n",
        s.id,
        s.model,
        s.turns,
        human_time(&s.created_at),
        human_time(&s.updated_at),
        one_line(&s.task)
    );
    if s.input_tokens + s.output_tokens > 0 {
        out.push_str(&format!(
            "Tokens:  {} in, {} out\n",
            s.input_tokens, s.output_tokens
        ));
    }
    let mut users = 0;
    let mut calls: Vec<(String, String)> = Vec::new();
    for (mi, m) in s.messages.iter().enumerate() {
        out.push('\n');
        match m.role {
            Role::System => out.push_str(&format!("── [SYSTEM] ──\n{}\n", m.content)),
            Role::User => {
                users += 1;
                out.push_str(&format!("── [USER Turn {users}] ──\n{}\n", m.content));
                if !m.images.is_empty() {
                    out.push_str(&format!("[{} image(s) attached]\n", m.images.len()));
                }
            }
            Role::Assistant => render_assistant(m, mi, &mut calls, &mut out),
            Role::Tool => {
                let label = match_call(&mut calls, m.tool_call_id.as_deref());
                let name = m.name.as_deref().unwrap_or("?");
                let body = if full {
                    m.content.clone()
                } else {
                    crate::text::truncate(&m.content, 200).into_owned()
                };
                out.push_str(&format!("── [TOOL RESULT: {name} #{label}] ──\n{body}\n"));
            }
        }
    }
    out
}

fn render_assistant(m: &Message, mi: usize, calls: &mut Vec<(String, String)>, out: &mut String) {
    if !m.content.is_empty() || m.tool_calls.is_empty() {
        out.push_str(&format!("── [ASSISTANT] ──\n{}\n", m.content));
    }
    for (ci, c) in m.tool_calls.iter().enumerate() {
        let label = if c.id.is_empty() {
            format!("m{mi}-c{ci}")
        } else {
            c.id.clone()
        };
        out.push_str(&format!(
            "── [TOOL CALL: {} #{label}] ──\n{}\n",
            c.function.name, c.function.arguments
        ));
        calls.push((c.id.clone(), label));
    }
}

/// Pairs a result with its call: by id, else the oldest unanswered call.
fn match_call(calls: &mut Vec<(String, String)>, id: Option<&str>) -> String {
    let pos = match id.filter(|i| !i.is_empty()) {
        Some(id) => calls.iter().position(|(cid, _)| cid == id),
        None => (!calls.is_empty()).then_some(0),
    };
    match pos {
        Some(p) => calls.remove(p).1,
        None => "unmatched".to_string(),
    }
}

/// `2026-11-30T02:01:20.123Z` (or without the milliseconds) → `2026-11-30 02:01:20 UTC`.
pub(super) fn human_time(rfc3339: &str) -> String {
    match rfc3339.strip_suffix('Z') {
        Some(t) => format!("{} UTC", t.get(..19).unwrap_or(t).replacen('T', " ", 1)),
        None => rfc3339.to_string(),
    }
}

pub(super) fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub(super) fn print_out(text: &str) {
    use std::io::Write;
    // A closed pipe (`odek session list | head`) ends output quietly.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// `odek session fork ID --at TURN` (and `odek rewind --conversation`): the new session's id,
/// and how to continue it.
pub(super) fn fork(store: &SessionStore, id: &str, at: u32) -> crate::error::Fallible<Exit> {
    match store.fork(id, at) {
        Ok(forked) => {
            let new = &forked.session;
            println!("{}", new.id);
            eprintln!(
                "odek: forked session {id} at turn {at} into {} ({} turn(s){}) — continue it with: odek continue --id {}",
                new.id,
                new.turns,
                match (&new.plan, forked.plan_known) {
                    (Some(plan), _) => format!(", its plan at v{}", plan.version),
                    (None, true) => String::new(),
                    (None, false) =>
                        ", without a plan: the session predates the plans noted per turn".into(),
                },
                new.id
            );
            Ok(Exit::Success)
        }
        Err(e @ crate::session::SessionError::NoSuchTurn { .. }) => {
            eprintln!("odek: {e}");
            Ok(Exit::Usage)
        }
        Err(e) => Err(e.into()),
    }
}
