//! The command line's definition (clap) and `main`: parse, run the subcommand, map the
//! outcome to an exit code.

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use super::exit::Exit;
use super::{
    acp_cmd, agents_cmd, audit_cmd, commands_cmd, config_cmd, continue_cmd, docs_cmd, error,
    hooks_cmd, init, mcp_cmd, memory_cmd, panic, repl, rewind_cmd, run, schedule_cmd, serve_cmd,
    session_cmd, skill_cmd, subagent_cmd, telegram_cmd, upgrade_cmd, usage_cmd,
};

/// `odek --version` and `odek version`.
pub const VERSION_LINE: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("ODEK_TARGET"),
    ", commit ",
    env!("ODEK_COMMIT"),
    ")"
);

const AFTER_HELP: &str = "\
Examples:
  odek run \"find the TODOs in this repository and summarise them\"
  odek run --replay examples/demo.jsonl \"describe this directory\"   # no server needed
  odek continue \"now write tests for it\"
  odek run --events-jsonl - \"fix the build\" | jq -c .type
  odek repl --base-url http://127.0.0.1:8080/v1 --model local
  odek serve --open                     # the web UI and the HTTP API on 127.0.0.1:8080
  odek telegram                         # the bot (telegram.bot_token, allowed_users)
  odek completions bash > ~/.local/share/bash-completion/completions/odek

The API key comes from ODEK_API_KEY (or DEEPSEEK_API_KEY, OPENAI_API_KEY); `odek config`
shows every setting and where it came from.
Exit codes: 0 done, 1 error, 2 usage, 4 budget exhausted, 10 a newer odek (upgrade --check),
130 interrupted.";

/// odek: an autonomous agent for any OpenAI-compatible chat model.
#[derive(Debug, Parser)]
#[command(
    name = "odek",
    version = VERSION_LINE,
    about,
    long_about = None,
    max_term_width = 100,
    after_help = AFTER_HELP
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one task to a final answer
    Run(run::RunArgs),
    /// Resume the latest (or a given) session with a follow-up
    Continue(continue_cmd::ContinueArgs),
    /// Interactive, multi-turn session with line editing and history
    Repl(repl::ReplArgs),
    /// Manage saved sessions
    Session(session_cmd::SessionArgs),
    /// A session's checkpoints; put its files back as they were before one
    Rewind(rewind_cmd::RewindArgs),
    /// Write a starting config: ./odek.json, or the global one with --global
    Init(init::InitArgs),
    /// Show the resolved configuration and where each value came from
    Config(config_cmd::ConfigArgs),
    /// What untrusted content reached the model in a session, from where, in which turn
    Audit(audit_cmd::AuditArgs),
    /// Token usage (with prompt-cache hits) and plan telemetry of the saved runs
    Usage(usage_cmd::UsageArgs),
    /// HTTP API over the same sessions: runs, approvals, live events, the plan view
    Serve(serve_cmd::ServeArgs),
    /// Telegram bot over the same sessions, with /plan_status
    Telegram(telegram_cmd::TelegramArgs),
    /// Serve the Agent Client Protocol on stdio: odek as the agent inside an editor (Zed,
    /// JetBrains, Neovim, Emacs)
    Acp(acp_cmd::AcpArgs),
    /// MCP: `odek mcp list` shows the configured servers; `odek mcp serve` serves odek's tools
    Mcp(mcp_cmd::McpArgs),
    /// What the agent remembers: facts, pending writes to review, episodes
    Memory(memory_cmd::MemoryArgs),
    /// Skills (SKILL.md folders): list, show, new, validate, trust, import, remove
    Skill(skill_cmd::SkillArgs),
    /// Hooks (your programs around tool calls, in Claude Code's protocol): list, test EVENT
    Hooks(hooks_cmd::HooksArgs),
    /// Custom slash commands (<home>/commands, .odek/commands, .claude/commands, skills):
    /// list, trust, untrust
    Commands(commands_cmd::CommandsArgs),
    /// Named sub-agents (<home>/agents, .odek/agents, .claude/agents): list, show, trust
    Agents(agents_cmd::AgentsArgs),
    /// Recurring tasks: add, list, rm, enable, disable, run, next, daemon
    Schedule(schedule_cmd::ScheduleArgs),
    /// Print the shell completion script (bash, zsh, fish, powershell)
    Completions(docs_cmd::CompletionsArgs),
    /// Print the manual page (roff), or write every page with --dir
    Man(docs_cmd::ManArgs),
    /// Print the version, target and commit
    Version,
    /// Replace this odek with the latest signed release (--check, --to, --rollback, --key)
    Upgrade(upgrade_cmd::UpgradeArgs),
    /// Run one delegated task (started by `delegate_tasks`; not for people)
    #[command(hide = true)]
    Subagent(subagent_cmd::SubagentArgs),
}

/// True when the whole command line is `--version`, `-V` or `version`.
fn asks_only_the_version() -> bool {
    let mut args = std::env::args_os().skip(1);
    match (args.next(), args.next()) {
        (Some(only), None) => only == "--version" || only == "-V" || only == "version",
        _ => false,
    }
}

/// Whether `command` makes odek the reaper of its commands' orphans: the commands a person
/// or a parent waits on (`run`, `continue`, `repl`, `subagent`). The long-lived surfaces
/// (`serve`, `telegram`, `acp`, `mcp serve`, the schedule daemon) do not: nothing would reap
/// an adopted orphan that ends (tokio waits only for the children it started), so such
/// orphans would pile up as zombies for as long as the surface runs.
fn adopts_orphans(command: &Command) -> bool {
    matches!(
        command,
        Command::Run(_) | Command::Continue(_) | Command::Repl(_) | Command::Subagent(_)
    )
}

/// Runs the program and returns its exit code.
pub fn main() -> ExitCode {
    if asks_only_the_version() {
        // Without building the command line's whole definition: `odek --version` is what
        // scripts and editors run to find odek (docs/PERFORMANCE.md, "Start-up").
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), "odek {VERSION_LINE}");
        return Exit::Success.into();
    }
    panic::install();
    crate::process_group::harden();
    crate::process_group::wipe_environ_block();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    Exit::Success
                }
                clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => Exit::Usage,
                _ => Exit::Usage,
            }
            .into();
        }
    };
    if adopts_orphans(&cli.command) {
        crate::process_group::adopt_orphans();
    }
    let exit = match cli.command {
        Command::Subagent(args) => {
            let code = subagent_cmd::run(args);
            crate::process_group::end_leftovers();
            return code;
        }
        Command::Version => {
            println!("odek {VERSION_LINE}");
            Ok(Exit::Success)
        }
        Command::Run(args) => run::run(args),
        Command::Continue(args) => continue_cmd::run(args),
        Command::Session(args) => session_cmd::run(args),
        Command::Rewind(args) => rewind_cmd::run(args),
        Command::Repl(args) => repl::run(args),
        Command::Init(args) => init::run(args),
        Command::Config(args) => config_cmd::run(args),
        Command::Usage(args) => usage_cmd::run(args),
        Command::Audit(args) => audit_cmd::run(args),
        Command::Serve(args) => serve_cmd::run(args),
        Command::Telegram(args) => telegram_cmd::run(args),
        Command::Mcp(args) => mcp_cmd::run(args),
        Command::Acp(args) => acp_cmd::run(args),
        Command::Memory(args) => memory_cmd::run(args),
        Command::Skill(args) => skill_cmd::run(args),
        Command::Hooks(args) => hooks_cmd::run(args),
        Command::Commands(args) => commands_cmd::run(args),
        Command::Agents(args) => agents_cmd::run(args),
        Command::Schedule(args) => schedule_cmd::run(args),
        Command::Completions(args) => docs_cmd::completions(args, Cli::command()),
        Command::Man(args) => docs_cmd::man(args, Cli::command()),
        Command::Upgrade(args) => upgrade_cmd::run(args),
    };
    // Nothing a command started outlives odek, whatever group or session it made.
    crate::process_group::end_leftovers();
    match exit {
        Ok(code) => code.into(),
        Err(e) => error::report(&e).into(),
    }
}
