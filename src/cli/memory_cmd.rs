//! `odek memory list|add|edit|rm|review|accept|reject|promote|episodes|export|import`: what
//! the agent remembers, for people (docs/MEMORY.md).

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use super::Exit;
use crate::config::{Config, LoadOptions};
use crate::memory::facts::FactFilter;
use crate::memory::transfer;
use crate::memory::{
    Budgets, Fact, FactStatus, Memory, MemoryError, MemoryTarget, SOURCE_USER, WriteOutcome,
};

/// Arguments of `odek memory`.
#[derive(Debug, Args)]
pub struct MemoryArgs {
    #[command(subcommand)]
    command: MemoryCommand,
}

#[derive(Debug, Subcommand)]
enum MemoryCommand {
    /// The user's facts and this project's, with what each store uses of its budget
    List {
        /// Every project's facts, not only this one's
        #[arg(long)]
        all: bool,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Add a fact (to the user store unless --project)
    Add {
        /// Add to this project's store
        #[arg(long)]
        project: bool,
        /// The fact
        #[arg(required = true, num_args = 1..)]
        text: Vec<String>,
    },
    /// Change a fact's text
    Edit {
        /// The fact's number (`odek memory list`)
        id: i64,
        /// The new text
        #[arg(required = true, num_args = 1..)]
        text: Vec<String>,
    },
    /// Delete a fact or a pending write
    Rm {
        /// Its number
        id: i64,
    },
    /// Writes waiting for review: made by turns that took in external content
    Review {
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Apply a pending write (or all of them)
    Accept {
        /// Its number
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        id: Option<i64>,
        /// Every pending write
        #[arg(long)]
        all: bool,
    },
    /// Drop a pending write (or all of them)
    Reject {
        /// Its number
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        id: Option<i64>,
        /// Every pending write
        #[arg(long)]
        all: bool,
    },
    /// Let a session's episode be recalled although the session took in external content
    Promote {
        /// Session id
        session: String,
    },
    /// The stored episodes (session summaries), newest first
    Episodes,
    /// Write every fact and episode as JSON (default) or Markdown
    Export {
        /// Output format
        #[arg(long, value_enum, default_value_t = Format::Json)]
        format: Format,
        /// Write to FILE instead of stdout
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Add the facts of an export (JSON or Markdown); duplicates are skipped
    Import {
        /// The file
        file: PathBuf,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    Json,
    Markdown,
}

/// What the commands share: the database, the project's key, the budgets.
struct Ctx {
    config: Config,
    home: PathBuf,
    project: String,
}

impl Ctx {
    fn budgets(&self) -> Budgets {
        Budgets::from_config(&self.config.memory)
    }

    fn open(&self) -> Result<Memory, MemoryError> {
        Memory::open(&self.home)
    }
}

/// Runs `odek memory …`.
pub fn run(args: MemoryArgs) -> crate::error::Fallible<Exit> {
    let resolved = crate::config::load(&LoadOptions::from_process(Default::default()))?;
    resolved.warnings.iter().for_each(|w| eprintln!("{w}"));
    let cwd = std::env::current_dir()?;
    let ctx = Ctx {
        project: crate::memory::project_key(&cwd),
        home: resolved.home.clone(),
        config: resolved.config,
    };
    if let MemoryCommand::Export { format, output } = &args.command {
        return export(&ctx, *format, output.as_deref());
    }
    let memory = ctx.open()?;
    let budgets = ctx.budgets();
    match args.command {
        MemoryCommand::List { all, json } => list(&ctx, &memory, all, json),
        MemoryCommand::Add { project, text } => add(&ctx, &memory, project, &text.join(" ")),
        MemoryCommand::Edit { id, text } => {
            let redactor = crate::runtime::build_redactor(&ctx.config);
            let f = memory.edit_fact(id, &redactor.redact(&text.join(" ")), budgets)?;
            println!("#{} {}: {}", f.id, f.target.as_str(), shown(&f.content));
            Ok(Exit::Success)
        }
        MemoryCommand::Rm { id } => {
            if memory.delete_fact(id)? {
                println!("Deleted #{id}");
                Ok(Exit::Success)
            } else {
                crate::error::bail!("no memory fact #{id}")
            }
        }
        MemoryCommand::Review { json } => review(&memory, json),
        MemoryCommand::Accept { id, all } => decide(&memory, id, all, |id| {
            memory.accept(id, budgets).map(|f| describe("Accepted", &f))
        }),
        MemoryCommand::Reject { id, all } => decide(&memory, id, all, |id| {
            memory.reject(id).map(|f| describe("Rejected", &f))
        }),
        MemoryCommand::Promote { session } => {
            if memory.promote(&session)? {
                println!("Session {session} promoted: its episode may be recalled.");
                Ok(Exit::Success)
            } else {
                crate::error::bail!(
                    "session {session} is not in the index (`odek session reindex` adds every saved session)"
                )
            }
        }
        MemoryCommand::Episodes => episodes(&memory),
        MemoryCommand::Import { file } => import(&ctx, &memory, &file),
        MemoryCommand::Export { .. } => Ok(Exit::Success),
    }
}

/// The REPL's `/memory`: `odek memory list` for the REPL's configuration and directory.
pub(super) fn print_memory(
    config: &Config,
    home: &std::path::Path,
    cwd: &std::path::Path,
) -> crate::error::Fallible<()> {
    let ctx = Ctx {
        project: crate::memory::project_key(cwd),
        home: home.to_path_buf(),
        config: config.clone(),
    };
    list(&ctx, &ctx.open()?, false, false)?;
    Ok(())
}

fn list(ctx: &Ctx, memory: &Memory, all: bool, json: bool) -> crate::error::Fallible<Exit> {
    let facts = memory.list_facts(FactFilter {
        project: (!all).then_some(ctx.project.as_str()),
        ..FactFilter::default()
    })?;
    if json {
        println!("{}", serde_json::to_string_pretty(&facts)?);
        return Ok(Exit::Success);
    }
    let budgets = ctx.budgets();
    let active = |f: &&Fact| f.status == FactStatus::Active;
    let user: Vec<&Fact> = facts
        .iter()
        .filter(active)
        .filter(|f| f.target == MemoryTarget::User)
        .collect();
    print_store("User", &user, budgets.user);
    let mut roots: Vec<&str> = facts
        .iter()
        .filter(|f| f.target == MemoryTarget::Project)
        .map(|f| f.project.as_str())
        .collect();
    if !all {
        roots = vec![ctx.project.as_str()];
    }
    roots.sort_unstable();
    roots.dedup();
    for root in roots {
        let mine: Vec<&Fact> = facts
            .iter()
            .filter(active)
            .filter(|f| f.target == MemoryTarget::Project && f.project == root)
            .collect();
        print_store(&format!("Project {root}"), &mine, budgets.project);
    }
    let pending = facts
        .iter()
        .filter(|f| f.status == FactStatus::Pending)
        .count();
    if pending > 0 {
        println!("\n{pending} write(s) wait for review: odek memory review");
    }
    Ok(Exit::Success)
}

fn print_store(title: &str, facts: &[&Fact], budget: usize) {
    let used: usize = facts.iter().map(|f| f.content.chars().count()).sum();
    println!("{title} ({used}/{budget} characters)");
    if facts.is_empty() {
        println!("  (empty)");
    }
    for f in facts {
        println!("  #{:<4} {}", f.id, shown(&f.content));
    }
}

fn add(ctx: &Ctx, memory: &Memory, project: bool, text: &str) -> crate::error::Fallible<Exit> {
    let redactor = crate::runtime::build_redactor(&ctx.config);
    let target = if project {
        MemoryTarget::Project
    } else {
        MemoryTarget::User
    };
    let w = crate::memory::facts::WriteContext {
        project: &ctx.project,
        pending: false,
        session_id: None,
        source: SOURCE_USER,
        budgets: ctx.budgets(),
    };
    match memory.add_fact(&w, target, &redactor.redact(text))? {
        WriteOutcome::Saved { id, used, budget } => println!(
            "Added #{id} to the {} store ({used}/{budget} characters).",
            target.as_str()
        ),
        WriteOutcome::Pending { id } => println!("Pending #{id}"),
    }
    Ok(Exit::Success)
}

fn review(memory: &Memory, json: bool) -> crate::error::Fallible<Exit> {
    let pending = memory.list_facts(FactFilter {
        status: Some(FactStatus::Pending),
        ..FactFilter::default()
    })?;
    if json {
        println!("{}", serde_json::to_string_pretty(&pending)?);
        return Ok(Exit::Success);
    }
    if pending.is_empty() {
        println!("Nothing waits for review.");
        return Ok(Exit::Success);
    }
    for f in &pending {
        let store = match f.target {
            MemoryTarget::User => "user".to_string(),
            MemoryTarget::Project => format!("project {}", shown(&f.project)),
        };
        println!(
            "#{:<4} {:<7} {store}\n      from session {}\n      {}",
            f.id,
            f.action,
            shown(f.session_id.as_deref().unwrap_or("-")),
            shown(&f.content)
        );
    }
    println!("\nodek memory accept ID|--all   ·   odek memory reject ID|--all");
    Ok(Exit::Success)
}

fn describe(verb: &str, f: &Fact) -> String {
    format!(
        "{verb} #{} ({} {}): {}",
        f.id,
        f.action,
        f.target.as_str(),
        f.content
    )
}

/// Accepts or rejects one pending write, or every one (each reported; failures too).
fn decide(
    memory: &Memory,
    id: Option<i64>,
    all: bool,
    apply: impl Fn(i64) -> Result<String, MemoryError>,
) -> crate::error::Fallible<Exit> {
    let ids: Vec<i64> = if all {
        memory
            .list_facts(FactFilter {
                status: Some(FactStatus::Pending),
                ..FactFilter::default()
            })?
            .iter()
            .map(|f| f.id)
            .collect()
    } else {
        id.into_iter().collect()
    };
    if ids.is_empty() {
        println!("Nothing waits for review.");
        return Ok(Exit::Success);
    }
    let mut failed = false;
    for id in ids {
        match apply(id) {
            Ok(line) => println!("{line}"),
            Err(e) if all => {
                failed = true;
                eprintln!("odek: #{id}: {e}");
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(if failed { Exit::Failure } else { Exit::Success })
}

fn episodes(memory: &Memory) -> crate::error::Fallible<Exit> {
    let all = memory.episodes()?;
    if all.is_empty() {
        println!("No episodes yet (a session gets one after 3 user turns).");
    }
    for e in all {
        let flag = match (e.external, e.promoted) {
            (true, false) => "  [external: not recalled; odek memory promote]",
            (true, true) => "  [external, promoted]",
            _ => "",
        };
        println!(
            "{} ({} turns){flag}\n  {}\n",
            e.session_id,
            e.turns,
            crate::text::visible(e.summary.trim(), true)
        );
    }
    Ok(Exit::Success)
}

fn export(
    ctx: &Ctx,
    format: Format,
    output: Option<&std::path::Path>,
) -> crate::error::Fallible<Exit> {
    let data = match ctx.open() {
        Ok(memory) => transfer::export(&memory)?,
        Err(e @ (MemoryError::NewerSchema { .. } | MemoryError::Corrupt { .. })) => {
            eprintln!("odek: warning: {e}");
            eprintln!("odek: reading its facts read-only; episodes are left out");
            let (data, problems) =
                transfer::export_read_only(&crate::memory::db::path_in(&ctx.home))?;
            problems
                .iter()
                .for_each(|p| eprintln!("odek: warning: {p}"));
            data
        }
        Err(e) => return Err(e.into()),
    };
    let text = match format {
        Format::Json => serde_json::to_string_pretty(&data)? + "\n",
        Format::Markdown => transfer::to_markdown(&data),
    };
    match output {
        Some(path) => {
            std::fs::write(path, text)?;
            eprintln!("Wrote {} fact(s) to {}", data.facts.len(), path.display());
        }
        None => print!("{text}"),
    }
    Ok(Exit::Success)
}

fn import(ctx: &Ctx, memory: &Memory, file: &std::path::Path) -> crate::error::Fallible<Exit> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?;
    let facts =
        transfer::parse_import(&text).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    let redactor = crate::runtime::build_redactor(&ctx.config);
    let report = transfer::import(memory, &facts, &ctx.project, ctx.budgets(), &redactor);
    for s in &report.skipped {
        eprintln!("odek: skipped: {s}");
    }
    println!(
        "Imported {} fact(s); {} skipped.",
        report.added,
        report.skipped.len()
    );
    Ok(Exit::Success)
}

/// A fact, a project or a session id as stored, its control characters shown (it may come
/// from a model or a repository).
fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    crate::text::visible(text, false)
}
