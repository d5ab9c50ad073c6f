//! The REPL's slash commands that make sense in an editor, announced with
//! `available_commands_update` when a session opens and answered by odek itself (no model
//! call, nothing added to the transcript): `/undo`, `/rewind [N] [--force]`, `/info`,
//! `/jobs`, `/kill ID`, `/compact [what to keep]`. The plan is not among them (the editor draws it from the `plan`
//! updates), nor `/exit` (the editor closes sessions).
//!
//! The custom commands of the session's directory (docs/COMMANDS.md) are announced after
//! them; a prompt `/NAME args` of one is a turn of its prompt, narrowed as the command says
//! ([`custom`]).

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};

use super::rpc::Connection;
use super::updates::send_update;
use crate::checkpoint::{self, Checkpoints, History, RewindError};
use crate::commands::Catalog;
use crate::runtime::{Runtime, SessionHandle, TurnScope};

/// One command: its name (without the slash), what it does, the hint for its input.
struct Command {
    name: &'static str,
    description: &'static str,
    input: Option<&'static str>,
}

const COMMANDS: &[Command] = &[
    Command {
        name: "undo",
        description: "Put back the files the last turn changed",
        input: None,
    },
    Command {
        name: "rewind",
        description: "The checkpoints; with N, the files as they were before checkpoint N",
        input: Some("N (a checkpoint's number), --force to overwrite files changed since"),
    },
    Command {
        name: "info",
        description: "Session, model, turns and tokens used",
        input: None,
    },
    Command {
        name: "jobs",
        description: "The background jobs and their last lines",
        input: None,
    },
    Command {
        name: "kill",
        description: "Stop a background job",
        input: Some("the job's id (see /jobs)"),
    },
    Command {
        name: "compact",
        description: "Summarise the conversation before the last turns (the turns before are kept as a fork)",
        input: Some("what the summary must keep"),
    },
];

/// Tells the client which commands `session_id` has: odek's, then the custom ones of
/// `catalog` (a built-in's name is never among them: the catalog leaves those out).
pub(crate) fn announce(conn: &Connection, session_id: &str, catalog: &Catalog) {
    let mut commands: Vec<Value> = COMMANDS
        .iter()
        .map(|c| {
            json!({
                "name": c.name,
                "description": c.description,
                "input": c.input.map(|hint| json!({"hint": hint})),
            })
        })
        .collect();
    commands.extend(catalog.commands.iter().map(|c| {
        let description = match c.file.description.trim() {
            "" => format!("A {} command", c.source.label()),
            said => said.to_string(),
        };
        json!({
            "name": c.name,
            "description": description,
            "input": c.file.argument_hint.as_ref().map(|hint| json!({"hint": hint})),
        })
    }));
    send_update(
        conn,
        session_id,
        json!({"sessionUpdate": "available_commands_update", "availableCommands": commands}),
    );
}

/// The command a prompt is, if it is one: a prompt of one text block whose first word is
/// `/` and a command's name. Its words after the name come along.
pub(crate) fn of_prompt(prompt: &[Value]) -> Option<(&'static str, Vec<String>)> {
    let [block] = prompt else {
        return None;
    };
    if block["type"] != "text" {
        return None;
    }
    let mut words = block["text"].as_str()?.split_whitespace();
    let name = words.next()?.strip_prefix('/')?;
    let command = COMMANDS.iter().find(|c| c.name == name)?;
    Some((command.name, words.map(str::to_string).collect()))
}

/// The typed text of a prompt that may be a custom command: its first block, text that
/// starts with `/`.
pub(crate) fn typed_command(prompt: &[Value]) -> Option<&str> {
    let first = prompt.first()?;
    if first["type"] != "text" {
        return None;
    }
    first["text"].as_str().filter(|t| t.starts_with('/'))
}

/// What a prompt whose first block is `/NAME args` becomes.
pub(crate) enum Custom {
    /// Not a custom command: the prompt as it is.
    Not,
    /// A custom command: the prompt with its first block the command's prompt, the turn's
    /// scope, and the lines to show before the turn.
    Runs {
        prompt: Vec<Value>,
        scope: TurnScope,
        warnings: Vec<String>,
    },
    /// An unknown command or one that may not run: what to tell the user.
    Refused(String),
}

/// The custom command `prompt` runs in `runtime`'s directory, if any (reads the command
/// files: call it off the async threads).
pub(crate) fn custom(runtime: &Runtime, prompt: &[Value]) -> Custom {
    let Some(typed) = typed_command(prompt) else {
        return Custom::Not;
    };
    match runtime.expand_command(typed) {
        Ok(None) => Custom::Not,
        Ok(Some(invocation)) => {
            let mut prompt = prompt.to_vec();
            if let Some(first) = prompt.first_mut() {
                *first = json!({"type": "text", "text": invocation.prompt});
            }
            Custom::Runs {
                prompt,
                scope: invocation.scope,
                warnings: invocation.warnings,
            }
        }
        Err(e) => Custom::Refused(match crate::error::Classified::hint(&e) {
            Some(hint) => format!("{e}\nhint: {hint}"),
            None => e.to_string(),
        }),
    }
}

/// Runs command `name` of `session` with `args`: the text to show.
pub(crate) async fn run(
    name: &str,
    args: &[String],
    runtime: &Arc<Runtime>,
    session: &SessionHandle,
) -> String {
    match name {
        "info" => info(runtime, session),
        "jobs" => jobs(session),
        "kill" => kill(session, args).await,
        "compact" => {
            let focus = Some(args.join(" ")).filter(|f| !f.is_empty());
            let cancel = tokio_util::sync::CancellationToken::new();
            match runtime.compact(session, focus.as_deref(), &cancel).await {
                Ok(outcome) => outcome.line().trim_start_matches("odek: ").to_string(),
                Err(e) => format!("Not compacted: {}", e.message_without_paths()),
            }
        }
        "undo" | "rewind" => {
            let (runtime, id, turns) = (
                runtime.clone(),
                session.id().to_string(),
                session.saved().turns,
            );
            let (name, args) = (name.to_string(), args.to_vec());
            tokio::task::spawn_blocking(move || {
                let checkpoints = checkpoint::of_session(runtime.home(), &id, turns);
                match checkpoints.history() {
                    Ok(history) => rewind(&name, &args, &checkpoints, &history, runtime.cwd()),
                    Err(e) => format!("Cannot read the checkpoints: {e}"),
                }
            })
            .await
            .unwrap_or_else(|e| format!("The command failed: {e}"))
        }
        other => format!("No command /{other}."),
    }
}

fn info(runtime: &Runtime, session: &SessionHandle) -> String {
    let s = session.saved();
    let mut lines = vec![
        format!("Session: {}", s.id),
        format!("Model:   {}", s.model),
        format!("Turns:   {}", s.turns),
        match s.cached_tokens {
            0 => format!("Tokens:  {} in, {} out", s.input_tokens, s.output_tokens),
            cached => format!(
                "Tokens:  {} in ({cached} cached), {} out",
                s.input_tokens, s.output_tokens
            ),
        },
        format!("Tools:   {}", runtime.tool_names().join(", ")),
    ];
    if runtime.sandbox().is_on() {
        lines.push("Sandbox: yes".into());
    }
    lines.join("\n")
}

fn jobs(session: &SessionHandle) -> String {
    let jobs = session.jobs().map(|j| j.list()).unwrap_or_default();
    if jobs.is_empty() {
        return "No background jobs.".into();
    }
    let mut out = Vec::new();
    for job in jobs {
        out.push(job.line());
        if job.ended().is_none() {
            let tail = job.tail();
            out.extend(
                crate::text::visible(&tail, false)
                    .lines()
                    .map(|l| format!("    │ {l}")),
            );
        }
    }
    out.join("\n")
}

async fn kill(session: &SessionHandle, args: &[String]) -> String {
    let id = args.first().and_then(|w| w.parse::<u32>().ok());
    let (Some(id), Some(jobs)) = (id, session.jobs()) else {
        return "Usage: /kill ID (see /jobs)".into();
    };
    match jobs.stop(id).await {
        None => format!("There is no job {id} (see /jobs)."),
        Some(false) => format!("Job {id} is not running."),
        Some(true) => format!("Stopped job {id}."),
    }
}

/// `/undo`: before the last turn that changed files; `/rewind`: the list, or before N.
fn rewind(
    name: &str,
    args: &[String],
    checkpoints: &Arc<Checkpoints>,
    history: &History,
    cwd: &Path,
) -> String {
    let force = args.iter().any(|a| a == "--force");
    let to = match (name, args.first().filter(|a| *a != "--force")) {
        ("undo", _) => match history.last_turn_start() {
            Some(c) => c.n,
            None => return "No turn of this session changed files with odek's file tools.".into(),
        },
        (_, None) => return checkpoint_list(history, cwd),
        (_, Some(n)) => match n.parse::<u32>() {
            Ok(n) if n > 0 => n,
            _ => {
                return "Usage: /rewind [N] [--force]  (N: a checkpoint's number from /rewind)"
                    .into();
            }
        },
    };
    let plan = match checkpoint::plan_rewind(history, to) {
        Ok(plan) => plan,
        Err(e) => return shown_paths(&e.to_string(), cwd),
    };
    let mut out: Vec<String> = plan
        .not_covered
        .iter()
        .map(|what| format!("Not covered by the checkpoints, left as it is: {what}"))
        .collect();
    if plan.restores.is_empty() {
        out.push(format!(
            "The files are already as they were before checkpoint {to}."
        ));
        return out.join("\n");
    }
    match checkpoints.rewind(&plan, force) {
        Ok(done) => {
            out.extend(
                done.restored
                    .iter()
                    .map(|r| format!("{:<8} {}", r.action(), shown(&r.path, cwd))),
            );
            out.extend(
                done.not_covered
                    .iter()
                    .map(|what| format!("Not covered by the checkpoints, left as it is: {what}")),
            );
            out.push(format!(
                "Rewound {} file(s) to before checkpoint {to} — /rewind {} puts them back.",
                done.restored.len(),
                done.checkpoint
            ));
        }
        Err(e @ RewindError::Conflicts(_)) => {
            out.push(shown_paths(&e.to_string(), cwd));
            out.push("Nothing was changed; /rewind N --force overwrites them.".into());
        }
        Err(e) => out.push(format!(
            "The rewind failed: {}",
            shown_paths(&e.to_string(), cwd)
        )),
    }
    out.join("\n")
}

fn checkpoint_list(history: &History, cwd: &Path) -> String {
    if history.checkpoints.is_empty() {
        return "This session has no checkpoints (its file tools changed nothing).".into();
    }
    let mut out =
        vec!["Checkpoints (/rewind N puts the files back as they were before N):".to_string()];
    for c in &history.checkpoints {
        let tool = match c.rewound_to {
            Some(to) => format!("rewind to {to}"),
            None => c.tool.clone(),
        };
        let files: Vec<String> = c.files.iter().map(|f| shown(&f.path, cwd)).collect();
        out.push(format!(
            "{:>3}  turn {}  {tool}  {}",
            c.n,
            c.turn,
            files.join(", ")
        ));
    }
    out.join("\n")
}

fn shown(path: &Path, cwd: &Path) -> String {
    path.strip_prefix(cwd)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| path.display().to_string())
}

fn shown_paths(text: &str, cwd: &Path) -> String {
    text.replace(&format!("{}/", cwd.display()), "")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: &str) -> Vec<Value> {
        vec![json!({"type": "text", "text": t})]
    }

    #[test]
    fn a_prompt_is_a_command_only_when_it_starts_with_one_of_the_names() {
        assert_eq!(of_prompt(&text("/undo")), Some(("undo", vec![])));
        assert_eq!(
            of_prompt(&text("  /rewind 3 --force")),
            Some(("rewind", vec!["3".into(), "--force".into()]))
        );
        assert_eq!(of_prompt(&text("/plan")), None);
        assert_eq!(of_prompt(&text("please /undo that")), None);
        assert_eq!(of_prompt(&text("/usr/bin is where it lives")), None);
        let two = [text("/undo"), text("and more")].concat();
        assert_eq!(of_prompt(&two), None);
    }

    #[test]
    fn a_custom_command_is_looked_for_only_in_a_first_text_block_starting_with_a_slash() {
        assert_eq!(typed_command(&text("/review a b")), Some("/review a b"));
        let with_file = [
            text("/review"),
            vec![json!({"type": "resource_link", "name": "a", "uri": "file:///a"})],
        ]
        .concat();
        assert_eq!(typed_command(&with_file), Some("/review"));
        assert_eq!(typed_command(&text(" /review")), None);
        assert_eq!(typed_command(&with_file[1..]), None);
        assert_eq!(typed_command(&[]), None);
    }
}
