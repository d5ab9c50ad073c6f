//! `odek audit [SESSION] [--list]`: what untrusted content reached the model in a session —
//! tool outputs, attached files, plan renders, compaction digests — from where, in which
//! turn and model call, read from the audit log every turn of a session writes.

use std::collections::HashMap;

use clap::Args;

use super::Exit;
use super::session_cmd::{human_time, local_session_store, one_line, print_out};
use crate::session::SessionStore;
use crate::session::audit::{AuditRecord, AuditTrail, audited_sessions, read_audit};

/// Arguments of `odek audit`.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Session id (default: the latest session)
    #[arg(value_name = "SESSION", conflicts_with = "list")]
    id: Option<String>,
    /// List the sessions that have an audit log, newest first
    #[arg(long)]
    list: bool,
    /// Only this turn (1 = the first)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    turn: Option<u32>,
    /// Print each block's text (redacted) under its line
    #[arg(long, conflicts_with = "list")]
    content: bool,
    /// Print the records as JSON
    #[arg(long)]
    json: bool,
}

/// Runs `odek audit`.
pub fn run(args: AuditArgs) -> crate::error::Fallible<Exit> {
    let store = local_session_store();
    if args.list {
        return list(&store, args.json);
    }
    let id = match args.id {
        Some(id) => id,
        None => match store.latest()? {
            Some(s) => s.id,
            None => crate::error::bail!("no saved sessions (in {})", store.dir().display()),
        },
    };
    crate::session::validate_id(&id)?;
    let Some(mut trail) = read_audit(store.dir(), &id)? else {
        let known = store.load(&id).is_ok();
        if known {
            println!("Session {id}: nothing from outside has reached the model (no audit log).");
            return Ok(Exit::Success);
        }
        crate::error::bail!(
            "no session {id} and no audit log for it (odek audit --list shows them)"
        );
    };
    if let Some(turn) = args.turn {
        trail.records.retain(|r| r.turn == Some(turn));
    }
    for line in &trail.unreadable {
        eprintln!("odek: warning: audit log of {id}: line {line} is not a record (skipped)");
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&trail.records)?);
        return Ok(Exit::Success);
    }
    let title = store.load(&id).ok().map(|s| one_line(&s.task));
    print_out(&render_trail(&id, title.as_deref(), &trail, args.content));
    Ok(Exit::Success)
}

/// One session of `--list`.
#[derive(Debug, serde::Serialize)]
struct Listed {
    id: String,
    records: usize,
    last: String,
    task: Option<String>,
}

fn list(store: &SessionStore, json: bool) -> crate::error::Fallible<Exit> {
    let titles: HashMap<String, String> = store
        .list_recent(usize::MAX)
        .map(|page| page.sessions.into_iter().map(|s| (s.id, s.title)).collect())
        .unwrap_or_default();
    let mut listed = Vec::new();
    for id in audited_sessions(store.dir())? {
        let Some(trail) = read_audit(store.dir(), &id)? else {
            continue;
        };
        listed.push(Listed {
            records: trail.records.len(),
            last: trail
                .records
                .last()
                .map(|r| r.timestamp.clone())
                .unwrap_or_default(),
            task: titles.get(&id).map(|t| one_line(t)),
            id,
        });
    }
    listed.sort_by(|a, b| b.last.cmp(&a.last));
    if json {
        println!("{}", serde_json::to_string_pretty(&listed)?);
        return Ok(Exit::Success);
    }
    if listed.is_empty() {
        println!(
            "No audit logs yet: a session's log starts with the first outside text that reaches the model."
        );
        return Ok(Exit::Success);
    }
    let mut out = format!("{:<41} {:>7}  {:<23}  {}\n", "ID", "Blocks", "Last", "Task");
    for l in &listed {
        let task = crate::text::visible(l.task.as_deref().unwrap_or("(session deleted)"), false);
        out.push_str(&format!(
            "{:<41} {:>7}  {:<23}  {}\n",
            l.id,
            l.records,
            human_time(&l.last),
            crate::text::truncate(&task, 50)
        ));
    }
    print_out(&out);
    Ok(Exit::Success)
}

/// The human view: a header with the totals, then one line per block under its turn.
fn render_trail(id: &str, title: Option<&str>, trail: &AuditTrail, content: bool) -> String {
    let records = &trail.records;
    let mut out = format!("Session {id}");
    if let Some(t) = title {
        let t = crate::text::visible(t, false);
        out.push_str(&format!("  \"{}\"", crate::text::truncate(&t, 60)));
    }
    out.push('\n');
    let blocks: Vec<&AuditRecord> = records.iter().filter(|r| !is_hook(r)).collect();
    let total: usize = blocks.iter().map(|r| r.bytes).sum();
    let sources: std::collections::HashSet<&str> =
        blocks.iter().map(|r| r.source.as_str()).collect();
    out.push_str(&format!(
        "Untrusted content that reached the model: {} block(s), {}, from {} source(s)\n",
        blocks.len(),
        size(total),
        sources.len()
    ));
    let hooks = records.len() - blocks.len();
    if hooks > 0 {
        out.push_str(&format!("Hooks that ran: {hooks}\n"));
    }
    let width = records
        .iter()
        .map(|r| r.source.chars().count().min(60))
        .max()
        .unwrap_or(0);
    let mut turn = None;
    for r in records {
        if turn != Some(r.turn) {
            turn = Some(r.turn);
            match r.turn {
                Some(n) => out.push_str(&format!("\nTurn {n}\n")),
                None => out.push_str("\nTurn not recorded (an older log)\n"),
            }
        }
        out.push_str(&record_line(r, width));
        if content {
            // Outside text: what a terminal would act on is dropped.
            for line in crate::text::visible(&r.content, true).lines() {
                out.push_str(&format!("      │ {line}\n"));
            }
        }
    }
    out
}

fn record_line(r: &AuditRecord, width: usize) -> String {
    let call = r
        .iteration
        .map_or_else(|| "       ".to_string(), |i| format!("call {i:<2}"));
    let clock = human_time(&r.timestamp);
    let clock = clock.get(11..19).unwrap_or(&clock);
    let source = one_line(&crate::text::visible(
        &crate::text::truncate(&r.source, 60),
        false,
    ));
    if is_hook(r) {
        let what = one_line(&crate::text::visible(
            &crate::text::truncate(&r.content, 120),
            false,
        ));
        return format!("  {call}  {clock}  {source:<width$}  {what}\n");
    }
    format!(
        "  {call}  {clock}  {source:<width$}  {:>9}  sha256 {}\n",
        size(r.bytes),
        r.sha256.get(..12).unwrap_or(&r.sha256)
    )
}

/// A hook that ran (`hook:<event>`: its command, decision and duration), not content.
fn is_hook(r: &AuditRecord) -> bool {
    r.source.starts_with("hook:")
}

fn size(bytes: usize) -> String {
    match bytes {
        b if b < 1024 => format!("{b} B"),
        b if b < 1024 * 1024 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(turn: u32, iteration: u32, source: &str, content: &str) -> AuditRecord {
        AuditRecord {
            timestamp: "2026-12-02T03:10:12Z".into(),
            turn: Some(turn),
            iteration: Some(iteration),
            source: source.into(),
            bytes: content.len(),
            sha256: "0123456789abcdef0123".into(),
            content: content.into(),
        }
    }

    #[test]
    fn the_view_groups_blocks_by_turn_with_their_call_source_and_size() {
        let trail = AuditTrail {
            records: vec![
                record(1, 0, "ctx:notes.md", "notes"),
                record(1, 1, "read_file:src/main.rs", &"x".repeat(2048)),
                record(2, 1, "$ cargo test", "ok\nall passed"),
            ],
            unreadable: vec![],
        };
        let out = render_trail("20261202-ab", Some("fix it"), &trail, true);
        let expected = format!(
            "Session 20261202-ab  \"fix it\"\n\
             Untrusted content that reached the model: 3 block(s), 2.0 KiB, from 3 source(s)\n\
             \n\
             Turn 1\n  \
             call 0   03:10:12  ctx:notes.md                 5 B  sha256 0123456789ab\n      │ notes\n  \
             call 1   03:10:12  read_file:src/main.rs    2.0 KiB  sha256 0123456789ab\n      │ {}\n\
             \n\
             Turn 2\n  \
             call 1   03:10:12  $ cargo test                13 B  sha256 0123456789ab\n      │ ok\n      │ all passed\n",
            "x".repeat(2048)
        );
        assert_eq!(out, expected);
    }
}
