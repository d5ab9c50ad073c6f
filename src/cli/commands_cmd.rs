//! `odek commands list|trust|untrust`: the custom slash commands, for people
//! (docs/COMMANDS.md).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::Exit;
use crate::commands::{Catalog, Command};
use crate::config::LoadOptions;
use crate::text::visible;

/// Arguments of `odek commands`.
#[derive(Debug, Args)]
pub struct CommandsArgs {
    #[command(subcommand)]
    command: CommandsCommand,
}

#[derive(Debug, Subcommand)]
enum CommandsCommand {
    /// Every command found, with its source (user, project, claude, skill), whether it runs,
    /// and the files hidden by a built-in or by a command of the same name
    List {
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Let a project command that sets `model` or `allowed-tools` run: records a hash of
    /// its file (a change needs trust again)
    Trust {
        /// The command's name, with or without its slash (`review`, `frontend:build`)
        name: String,
    },
    /// Forget the trust in a project command
    Untrust {
        /// The command's name
        name: String,
    },
}

/// Runs `odek commands …`.
pub fn run(args: CommandsArgs) -> crate::error::Fallible<Exit> {
    let resolved = crate::config::load(&LoadOptions::from_process(Default::default()))?;
    resolved.warnings.iter().for_each(|w| eprintln!("{w}"));
    let cwd = std::env::current_dir()?;
    let project = PathBuf::from(crate::memory::project_key(&cwd));
    let catalog = crate::commands::discover_for(&resolved.home, &project, &resolved.config);
    match args.command {
        CommandsCommand::List { json: true } => {
            println!("{}", serde_json::to_string_pretty(&catalog.list())?);
        }
        CommandsCommand::List { json: false } => print_list(&catalog),
        CommandsCommand::Trust { name } => {
            let command = catalog.trust(&resolved.home, &name)?;
            println!(
                "Trusted /{} ({}){}; a change to the file needs `odek commands trust` again.",
                command.name,
                visible(&command.path.display().to_string(), false),
                what_it_sets(command)
            );
        }
        CommandsCommand::Untrust { name } => {
            let name = name.strip_prefix('/').unwrap_or(&name);
            match catalog.untrust(&resolved.home, name)? {
                true => println!("No longer trusting /{name}."),
                false => println!("/{name} was not trusted."),
            }
        }
    }
    Ok(Exit::Success)
}

/// `: it sets the model X and allowed-tools A, B`, or nothing.
fn what_it_sets(command: &Command) -> String {
    let mut parts = Vec::new();
    if let Some(model) = &command.file.model {
        parts.push(format!("the model {}", visible(model, false)));
    }
    if let Some(tools) = &command.file.allowed_tools {
        parts.push(format!(
            "allowed-tools {}",
            visible(&tools.join(", "), false)
        ));
    }
    match parts.is_empty() {
        true => String::new(),
        false => format!(": it sets {}", parts.join(" and ")),
    }
}

/// The list for people: one entry per command, then the hidden and skipped files. Also the
/// REPL's part of `/help`.
pub(super) fn print_list(catalog: &Catalog) {
    if catalog.commands.is_empty() && catalog.shadowed.is_empty() && catalog.broken.is_empty() {
        println!(
            "No custom commands. Write one as a Markdown file in .odek/commands/NAME.md (this project) or in the odek home's commands/ (yours); see docs/COMMANDS.md."
        );
    }
    for c in &catalog.commands {
        println!("{}  [{}] {}", usage(c), c.source.label(), c.status());
        if !c.file.description.is_empty() {
            println!(
                "    {}",
                visible(&crate::text::first_line(&c.file.description, 100), false)
            );
        }
    }
    for s in &catalog.shadowed {
        println!(
            "(hidden) /{} in {} [{}]: hidden by {}",
            s.command.name,
            visible(&s.command.path.display().to_string(), false),
            s.command.source.label(),
            visible(&s.by, false)
        );
    }
    for b in &catalog.broken {
        println!(
            "(skipped) {}: {}",
            visible(&b.path.display().to_string(), false),
            visible(&b.why, false)
        );
    }
    if let Some(problem) = &catalog.trust_problem {
        eprintln!("odek: warning: {problem}");
    }
}

/// `/name ARGUMENT-HINT`.
pub(super) fn usage(command: &Command) -> String {
    match &command.file.argument_hint {
        Some(hint) => format!("/{} {}", command.name, visible(hint, false)),
        None => format!("/{}", command.name),
    }
}
