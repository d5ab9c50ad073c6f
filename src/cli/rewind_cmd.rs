//! `odek rewind [SESSION] [--list | --to N [--force]]`: the checkpoints of a session, and
//! putting its files back as they were before one of them (see docs/UNDO.md).

use std::path::Path;
use std::sync::Arc;

use clap::Args;

use super::Exit;
use super::session_cmd::local_session_store;
use crate::checkpoint::{Checkpoint, Checkpoints, History, RewindError, plan_rewind};
use crate::session::Holder;

/// Arguments of `odek rewind`.
#[derive(Debug, Args)]
pub struct RewindArgs {
    /// The session (default: the most recently updated one started from the command line)
    #[arg(value_name = "SESSION")]
    session: Option<String>,
    /// List the session's checkpoints (what `rewind` does without --to)
    #[arg(long, conflicts_with = "to")]
    list: bool,
    /// Put the files back as they were before checkpoint N (a rewind is a checkpoint too)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    to: Option<u32>,
    /// Overwrite files that changed since odek last wrote them
    #[arg(long, requires = "to")]
    force: bool,
    /// Also continue the conversation from before checkpoint N's turn, as a new session
    /// forked from this one (this one stays as it is)
    #[arg(long, requires = "to")]
    conversation: bool,
    /// With --conversation: fork the conversation only, leave the files as they are
    #[arg(long, requires = "conversation")]
    no_files: bool,
}

/// Runs `odek rewind`.
pub fn run(args: RewindArgs) -> crate::error::Fallible<Exit> {
    let store = local_session_store();
    let session = super::turn::load_session(&store, args.session.as_deref())?;
    let checkpoints = store.checkpoints(&session.id, session.turns);
    let history = checkpoints.history()?;
    let cwd = std::env::current_dir().unwrap_or_default();
    let Some(to) = args.to else {
        print_list(&session.id, &history.checkpoints, &cwd);
        return Ok(Exit::Success);
    };
    // Held as a writer: no turn of the session runs while its files go back.
    let _held = store.open(&session.id, &Holder::this_process("odek rewind"))?;
    if !args.no_files {
        let done = rewind_files(&checkpoints, &history, to, args.force, &cwd)?;
        if done != Exit::Success || !args.conversation {
            return Ok(done);
        }
    }
    let Some(turn) = history
        .checkpoints
        .iter()
        .find(|c| c.n == to)
        .map(|c| c.turn)
    else {
        eprintln!(
            "odek: no checkpoint {to}: this session has {} (odek rewind --list shows them)",
            history.checkpoints.len()
        );
        return Ok(Exit::Usage);
    };
    super::session_cmd::fork(&store, &session.id, turn.saturating_sub(1))
}

/// Rewinds the files of `checkpoints`' session to before checkpoint `to`, saying what it did
/// (the REPL's `/undo` and `/rewind` too; the caller holds the session).
pub(super) fn rewind_files(
    checkpoints: &Arc<Checkpoints>,
    history: &History,
    to: u32,
    force: bool,
    cwd: &Path,
) -> crate::error::Fallible<Exit> {
    let plan = match plan_rewind(history, to) {
        Ok(plan) => plan,
        Err(e @ (RewindError::NoSuchCheckpoint { .. } | RewindError::Unfinished { .. })) => {
            eprintln!("odek: {e}");
            return Ok(Exit::Usage);
        }
        Err(e) => return Err(e.into()),
    };
    warn_not_covered(&plan.not_covered);
    if plan.restores.is_empty() {
        let others = if plan.not_covered.is_empty() {
            ""
        } else {
            "other "
        };
        eprintln!("odek: the {others}files are already as they were before checkpoint {to}");
        return Ok(Exit::Success);
    }
    match checkpoints.rewind(&plan, force) {
        Ok(done) => {
            for r in &done.restored {
                println!("{:<8} {}", r.action(), shown(&r.path, cwd));
            }
            warn_not_covered(&done.not_covered);
            eprintln!(
                "odek: rewound {} file(s) to before checkpoint {to}{} — undo with: odek rewind {} --to {}",
                done.restored.len(),
                if plan.resuming.is_some() {
                    " (an interrupted rewind, finished)"
                } else {
                    ""
                },
                checkpoints.session(),
                done.checkpoint
            );
            Ok(Exit::Success)
        }
        Err(e @ RewindError::Conflicts(_)) => {
            // The error's first line, then each file as the user reads it (escaped).
            let text = e.to_string();
            eprintln!("odek: {}", text.lines().next().unwrap_or_default());
            if let RewindError::Conflicts(conflicts) = &e {
                for conflict in conflicts {
                    eprintln!("  {}", shown(&conflict.path, cwd));
                }
            }
            Ok(Exit::Failure)
        }
        Err(e) => Err(e.into()),
    }
}

/// What the rewind leaves as it is, one warning each (file names escaped: they may come from
/// the model).
fn warn_not_covered(not_covered: &[String]) {
    for what in not_covered {
        eprintln!(
            "odek: warning: not covered by the checkpoints, left as it is: {}",
            crate::text::visible(what, false)
        );
    }
}

/// Lists the checkpoints, one row each; every file name is escaped (a name the model chose
/// may hold control sequences).
pub(super) fn print_list(session: &str, checkpoints: &[Checkpoint], cwd: &Path) {
    if checkpoints.is_empty() {
        println!("Session {session} has no checkpoints (its file tools changed nothing).");
        return;
    }
    println!(
        "Checkpoints of session {session} (odek rewind --to N puts the files back as they were before N):"
    );
    for c in checkpoints {
        let at = crate::text::visible(c.at.get(..19).unwrap_or(&c.at), false).replace('T', " ");
        let tool = match c.rewound_to {
            Some(to) => format!("rewind to {to}"),
            None => crate::text::visible(&c.tool, false).into_owned(),
        };
        let files: Vec<String> = c
            .files
            .iter()
            .map(|f| {
                let sign = match f.kind() {
                    "added" => '+',
                    "deleted" => '-',
                    _ => '~',
                };
                format!("{sign} {}", shown(&f.path, cwd))
            })
            .collect();
        let mut line = format!(
            "  {:>3}  turn {:<3} {at}  {tool:<12} {}",
            c.n,
            c.turn,
            files.join(", ")
        );
        if !c.not_covered.is_empty() {
            line.push_str(&format!(" (not covered: {})", c.not_covered.len()));
        }
        println!("{line}");
    }
}

/// A path as the user reads it: relative to the working directory when inside it, its
/// control characters shown as pictures (see [`crate::text::visible`]).
fn shown(path: &Path, cwd: &Path) -> String {
    let path = path.strip_prefix(cwd).unwrap_or(path).display().to_string();
    crate::text::visible(&path, false).into_owned()
}
