//! `odek hooks list`: the configured hooks. `odek hooks test EVENT`: runs the hooks of an
//! event on a sample input and shows what they decided (see docs/HOOKS.md).

use clap::{Args, Subcommand};
use serde_json::{Map, Value, json};

use super::Exit;
use super::turn::tokio_runtime;
use crate::config::LoadOptions;
use crate::hooks::{Decision, Hook, HookEvent, HookRun, compile};
use crate::runtime::project_hooks::{
    CLAUDE_FILE, ODEK_FILE, ProjectHooksFile, TRUST_FILE, project_files, trusted_hooks,
};
use crate::skills::trust::{TrustState, TrustStore};

/// Arguments of `odek hooks`.
#[derive(Debug, Args)]
pub struct HooksArgs {
    #[command(subcommand)]
    command: HooksCommand,
}

#[derive(Debug, Subcommand)]
enum HooksCommand {
    /// List the configured hooks (event, matcher, timeout, command) and the project's hooks
    /// files with whether you trust them
    List,
    /// Trust the project's hooks files (.odek/hooks.json; .claude/settings.json with
    /// hooks.import_claude) as they are now: their hooks run until a file changes
    Trust,
    /// Stop trusting the project's hooks files
    Untrust,
    /// Run the hooks of EVENT on a sample input and show what they decide (nothing else
    /// runs: no tool, no model)
    Test {
        /// PreToolUse, PostToolUse, UserPromptSubmit, Stop, SessionStart, SessionEnd or
        /// Notification
        event: String,
        /// The tool of a PreToolUse or PostToolUse sample (odek's name or Claude Code's)
        #[arg(long, default_value = "shell")]
        tool: String,
        /// The tool's input as JSON (default: a sample for the tool)
        #[arg(long, value_name = "JSON")]
        input: Option<String>,
        /// The prompt of a UserPromptSubmit sample
        #[arg(long, default_value = "What does this project do?")]
        prompt: String,
    },
}

/// Runs `odek hooks`.
pub fn run(args: HooksArgs) -> crate::error::Fallible<Exit> {
    let resolved = crate::config::load(&LoadOptions::from_process(Default::default()))?;
    resolved.warnings.iter().for_each(|w| eprintln!("{w}"));
    let mut hooks = compile(&resolved.config.hooks.events, None)?;
    let cwd = std::env::current_dir()?;
    let home = resolved.home.clone();
    let import_claude = resolved.config.hooks.import_claude;
    match args.command {
        HooksCommand::List => {
            list(&hooks, &project_files(&cwd, import_claude), &home, &cwd);
            if resolved.config.hooks.fail_open {
                println!("fail_open: a PreToolUse hook that fails lets the call through");
            }
            Ok(Exit::Success)
        }
        HooksCommand::Trust => trust(&home, &cwd, import_claude),
        HooksCommand::Untrust => untrust(&home, &cwd),
        HooksCommand::Test {
            event,
            tool,
            input,
            prompt,
        } => {
            let Some(event) = HookEvent::parse(&event) else {
                eprintln!(
                    "odek: unknown hook event {event:?} (known: PreToolUse, PostToolUse, UserPromptSubmit, Stop, SessionStart, SessionEnd, Notification)"
                );
                return Ok(Exit::Usage);
            };
            let tool = odek_tool(&tool);
            let fields = match sample(event, &tool, input.as_deref(), &prompt, &cwd) {
                Ok(fields) => fields,
                Err(e) => {
                    eprintln!("odek: --input: {e}");
                    return Ok(Exit::Usage);
                }
            };
            let (project, warnings) = trusted_hooks(&home, &cwd, import_claude);
            warnings.iter().for_each(|w| eprintln!("{w}"));
            hooks.extend(project);
            let mut run = HookRun::new(hooks, resolved.config.hooks.fail_open, cwd);
            run.sandbox = shell_sandbox(&resolved.config, &home, &run.cwd);
            let tool_name = event.is_tool_event().then_some(tool.as_str());
            if !run.wants(event, tool_name) {
                println!("No hook runs at {} for this input.", event.as_str());
                return Ok(Exit::Success);
            }
            let (outcome, reports) = tokio_runtime()?.block_on(run.fire(event, tool_name, fields));
            for r in &reports {
                println!(
                    "{:<6} {:>5} ms  {}",
                    r.decision,
                    r.duration_ms,
                    shown(&r.command)
                );
            }
            println!("decision: {}", shown(&describe(&outcome.decision, event)));
            if let Some(updated) = &outcome.updated_input {
                println!("updated input: {updated}");
            }
            for text in &outcome.context {
                println!("context: {}", shown(text));
            }
            Ok(Exit::Success)
        }
    }
}

/// Prints the global hooks, then each project file with its standing and hooks.
fn list(
    global: &[Hook],
    files: &[ProjectHooksFile],
    home: &std::path::Path,
    cwd: &std::path::Path,
) {
    if global.is_empty() && files.is_empty() {
        println!(
            "No hooks configured: add them under \"hooks\" in {}, or in the project's {ODEK_FILE} (see docs/HOOKS.md).",
            home.join(crate::config::GLOBAL_FILE).display()
        );
        return;
    }
    println!(
        "{:<17} {:<20} {:>8}  command",
        "event", "matcher", "timeout"
    );
    print_hooks(global);
    let store = TrustStore::load_in(home, TRUST_FILE).unwrap_or_default();
    for file in files {
        let standing = match (file.state(&store), &file.hooks) {
            (_, Err(why)) => format!("invalid: {}", shown(&why.to_string())),
            (TrustState::Trusted, Ok(_)) => "trusted".into(),
            (TrustState::NotTrusted, Ok(_)) => "not trusted: ignored (odek hooks trust)".into(),
            (TrustState::Changed(_), Ok(_)) => {
                "changed since trusted: ignored (odek hooks trust)".into()
            }
        };
        let relative = file.path.strip_prefix(cwd).unwrap_or(&file.path);
        println!("\n{} — {standing}", shown_path(relative));
        if let Ok(hooks) = &file.hooks {
            print_hooks(hooks);
        }
        print_covers(file, cwd);
        if !file.skipped.is_empty() {
            println!(
                "  (not odek events, left out: {})",
                shown(&file.skipped.join(", "))
            );
        }
    }
}

/// The project files a hooks file's trust covers beside it, when there are any.
fn print_covers(file: &ProjectHooksFile, cwd: &std::path::Path) {
    if file.covers.is_empty() {
        return;
    }
    let names: Vec<String> = file
        .covers
        .iter()
        .map(|p| shown_path(p.strip_prefix(cwd).unwrap_or(p)))
        .collect();
    println!(
        "  (its trust covers what its hooks run: {})",
        names.join(", ")
    );
}

fn print_hooks(hooks: &[Hook]) {
    for h in hooks {
        let matcher = match (h.event.is_tool_event(), h.matcher_text.as_str()) {
            (false, _) => "-",
            (true, "") => "*",
            (true, text) => text,
        };
        println!(
            "{:<17} {:<20} {:>7}s  {}",
            h.event.as_str(),
            shown(matcher),
            h.timeout.as_secs(),
            shown(&h.command)
        );
    }
}

/// `odek hooks trust`: records each project file's hash; an invalid file is refused.
fn trust(
    home: &std::path::Path,
    cwd: &std::path::Path,
    import_claude: bool,
) -> crate::error::Fallible<Exit> {
    let files = project_files(cwd, import_claude);
    if files.is_empty() {
        eprintln!(
            "odek: no project hooks here: neither {ODEK_FILE} nor, with hooks.import_claude, hooks in {CLAUDE_FILE}"
        );
        return Ok(Exit::Failure);
    }
    if let Some((file, why)) = files
        .iter()
        .find_map(|f| f.hooks.as_ref().err().map(|e| (f, e)))
    {
        eprintln!(
            "odek: {} is not trusted: {}",
            shown_path(&file.path),
            shown(&why.to_string())
        );
        return Ok(Exit::Failure);
    }
    TrustStore::update_in(home, TRUST_FILE, |store| {
        for file in &files {
            store.trust_hashed(&file.path, "hooks", file.hash.clone());
        }
        Ok(())
    })?;
    for file in &files {
        let count = file.hooks.as_ref().map_or(0, Vec::len);
        println!(
            "Trusted {} ({count} hook(s), {}): its hooks run until it, or a file they run, changes.",
            shown_path(&file.path),
            file.hash
        );
        print_covers(file, cwd);
    }
    Ok(Exit::Success)
}

/// `odek hooks untrust`: forgets the project's files (present or not).
fn untrust(home: &std::path::Path, cwd: &std::path::Path) -> crate::error::Fallible<Exit> {
    let paths = [cwd.join(ODEK_FILE), cwd.join(CLAUDE_FILE)];
    let removed = TrustStore::update_in(home, TRUST_FILE, |store| {
        Ok(paths
            .iter()
            .filter(|p| store.untrust(p))
            .cloned()
            .collect::<Vec<_>>())
    })?;
    if removed.is_empty() {
        println!("No project hooks file here was trusted.");
    }
    for path in removed {
        println!("No longer trusted: {}", shown_path(&path));
    }
    Ok(Exit::Success)
}

/// The sandbox a session's shell commands would run in here, for the project's hooks (as
/// in a session); its warnings are printed.
fn shell_sandbox(
    config: &crate::config::Config,
    home: &std::path::Path,
    cwd: &std::path::Path,
) -> Option<std::sync::Arc<crate::sandbox::Sandbox>> {
    let mut warnings = Vec::new();
    let status = crate::runtime::sandbox_status(config, cwd, home, &mut warnings);
    warnings.iter().for_each(|w| eprintln!("{w}"));
    status.sandbox()
}

/// Text from a hooks file (a command, a matcher, an error quoting it) as the terminal
/// should show it: control bytes as pictures, so an `ESC[8m` cannot hide part of a command
/// from the review `odek hooks trust` asks for.
fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    crate::text::visible(text, false)
}

/// A path, escaped as [`shown`].
fn shown_path(path: &std::path::Path) -> String {
    shown(&path.display().to_string()).into_owned()
}

/// odek's name of a tool given by either name.
fn odek_tool(name: &str) -> String {
    let aliases = [
        "shell",
        "read_file",
        "write_file",
        "patch",
        "batch_patch",
        "glob",
        "search_files",
        "web_fetch",
        "web_search",
    ];
    aliases
        .iter()
        .find(|odek| crate::hooks::claude_name(odek) == Some(name))
        .map_or_else(|| name.to_string(), |odek| (*odek).to_string())
}

/// The sample input of `event`.
fn sample(
    event: HookEvent,
    tool: &str,
    input: Option<&str>,
    prompt: &str,
    cwd: &std::path::Path,
) -> Result<Map<String, Value>, serde_json::Error> {
    let mut fields = Map::new();
    match event {
        HookEvent::PreToolUse | HookEvent::PostToolUse => {
            let args = match input {
                Some(text) => serde_json::from_str(text)?,
                None => match tool {
                    "shell" => json!({"command": "echo hello"}),
                    "write_file" => json!({"path": "example.txt", "content": "hello\n"}),
                    "patch" => {
                        json!({"path": "example.txt", "old_string": "hello", "new_string": "hi"})
                    }
                    "read_file" => json!({"path": "example.txt"}),
                    _ => json!({}),
                },
            };
            fields.insert(
                "tool_input".into(),
                crate::hooks::tool_input_for_hook(&args, cwd),
            );
            if event == HookEvent::PostToolUse {
                fields.insert("tool_response".into(), json!("(the tool's result)"));
            }
        }
        HookEvent::UserPromptSubmit => {
            fields.insert("prompt".into(), json!(prompt));
        }
        HookEvent::Stop => {
            fields.insert("stop_hook_active".into(), json!(false));
            fields.insert("last_assistant_message".into(), json!("Done."));
        }
        HookEvent::SessionStart => {
            fields.insert("source".into(), json!("startup"));
        }
        HookEvent::SessionEnd => {
            fields.insert("reason".into(), json!("exit"));
        }
        HookEvent::Notification => {
            fields.insert(
                "message".into(),
                json!("odek needs your approval to run a shell command"),
            );
        }
    }
    Ok(fields)
}

fn describe(decision: &Decision, event: HookEvent) -> String {
    match decision {
        Decision::None => "none (things go on)".into(),
        Decision::Allow => "allow (run without asking)".into(),
        Decision::Ask(why) => format!("ask ({why})"),
        Decision::Block(why) => format!("{}: {why}", decision.as_str(event)),
    }
}
