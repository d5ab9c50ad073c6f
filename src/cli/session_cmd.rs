//! `odek session list|show|delete|trim|cleanup`.

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
    /// Delete sessions not updated for DAYS days (0 = all)
    Cleanup {
        /// Age in days
        days: u64,
    },
}

/// The session store of this user's home (`ODEK_HOME`, else `~/.odek`), for the commands
/// that read or manage sessions without running a turn.
pub fn local_session_store() -> SessionStore {
    let env = std::env::vars().collect();
    SessionStore::new(&home_dir_from(&env), Arc::new(Redactor::new()))
}

/// Runs `odek session …`.
pub fn run(args: SessionArgs) -> anyhow::Result<Exit> {
    let store = local_session_store();
    match args.command {
        SessionCommand::List { limit, all } => list(&store, limit, all),
        SessionCommand::Show { id, full } => show(&store, id.as_deref(), full),
        SessionCommand::Delete { id } => {
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
        SessionCommand::Cleanup { days } => {
            let outcome = store.cleanup(days)?;
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

/// The newest `limit` sessions — every one with `all`, the sub-agents' too; without it,
/// sub-agents' sessions are left out (their parent's session names them).
fn list(store: &SessionStore, limit: usize, all: bool) -> anyhow::Result<Exit> {
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
            crate::text::truncate(&one_line(&s.title), 50)
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

/// Shows `id`, or the most recently updated session of any origin.
fn show(store: &SessionStore, id: Option<&str>, full: bool) -> anyhow::Result<Exit> {
    let latest;
    let id = match id {
        Some(id) => id,
        None => match store.latest()? {
            Some(summary) => {
                latest = summary.id;
                &latest
            }
            None => anyhow::bail!("no saved sessions (in {})", store.dir().display()),
        },
    };
    let session = store.load(id)?;
    print_out(&render_session(&session, full));
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
fn human_time(rfc3339: &str) -> String {
    match rfc3339.strip_suffix('Z') {
        Some(t) => format!("{} UTC", t.get(..19).unwrap_or(t).replacen('T', " ", 1)),
        None => rfc3339.to_string(),
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn print_out(text: &str) {
    use std::io::Write;
    // A closed pipe (`odek session list | head`) ends output quietly.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}
