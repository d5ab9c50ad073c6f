//! `odek schedule add|list|rm|enable|disable|run|next|daemon`: recurring tasks
//! (docs/SCHEDULES.md).

use std::path::PathBuf;

use clap::{Args, Subcommand};
use jiff::Timestamp;

use super::Exit;
use crate::config::{Config, LoadOptions};
use crate::runtime::{Process, StartOptions};
use crate::schedule::ScheduleError;
use crate::schedule::cron::Schedule;
use crate::schedule::deliver::Target;
use crate::schedule::exec::{TurnExecutor, job_config};
use crate::schedule::store::{self, Job, Store};

/// Arguments of `odek schedule`.
#[derive(Debug, Args)]
pub struct ScheduleArgs {
    #[command(subcommand)]
    command: ScheduleCommand,
}

#[derive(Debug, Subcommand)]
enum ScheduleCommand {
    /// Add a job: run TASK whenever the cron expression fires
    Add {
        /// 5-field cron (minute hour day-of-month month day-of-week; names, ranges, lists,
        /// steps) or @hourly, @daily, @weekly, @monthly, @yearly
        #[arg(long)]
        cron: String,
        /// IANA time zone (default: the system's)
        #[arg(long)]
        tz: Option<String>,
        /// The job's name (default: from the task's first words)
        #[arg(long)]
        name: Option<String>,
        /// Where the answer goes: log (default), stdout, file:PATH, telegram, telegram:CHAT_ID
        #[arg(long, default_value = "log")]
        deliver: String,
        /// Run once at start when a fire time passed while nothing ran
        #[arg(long)]
        catchup: bool,
        /// Add it switched off
        #[arg(long)]
        disabled: bool,
        /// The working directory of its turns (default: here)
        #[arg(long)]
        dir: Option<PathBuf>,
        /// A danger class its turns may run with nobody to ask (repeatable)
        #[arg(long = "allow", value_name = "CLASS")]
        allow: Vec<String>,
        /// What the agent is asked to do
        #[arg(required = true, num_args = 1..)]
        task: Vec<String>,
    },
    /// The jobs: cron, zone, next run, last outcome, policy
    List {
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Delete a job
    Rm {
        /// The job's name
        name: String,
    },
    /// Switch a job on
    Enable {
        /// The job's name
        name: String,
    },
    /// Switch a job off (kept; `run` still runs it)
    Disable {
        /// The job's name
        name: String,
    },
    /// Run a job now, in the foreground, and deliver its answer where the job delivers
    Run {
        /// The job's name
        name: String,
        /// Print the answer on stdout instead of delivering it
        #[arg(long)]
        stdout: bool,
    },
    /// The next fire times of one job or of all
    Next {
        /// The job's name
        name: Option<String>,
        /// How many
        #[arg(long, short = 'n', default_value_t = 5)]
        count: usize,
    },
    /// Run due jobs until stopped (SIGTERM, Ctrl-C)
    Daemon,
}

/// Runs `odek schedule …`.
pub fn run(args: ScheduleArgs) -> crate::error::Fallible<Exit> {
    let resolved = crate::config::load(&LoadOptions::from_process(Default::default()))?;
    resolved.warnings.iter().for_each(|w| eprintln!("{w}"));
    let store = Store::new(&resolved.home);
    let config = resolved.config;
    let home = resolved.home;
    match args.command {
        ScheduleCommand::Add {
            cron,
            tz,
            name,
            deliver,
            catchup,
            disabled,
            dir,
            allow,
            task,
        } => {
            let task = task.join(" ");
            let job = Job {
                name: name.unwrap_or_else(|| store::name_from_task(&task)),
                cron,
                tz,
                task,
                deliver,
                catchup,
                enabled: !disabled,
                dir: match dir {
                    Some(d) => d
                        .canonicalize()
                        .map_err(|e| anyhow::anyhow!("{}: {e}", d.display()))?,
                    None => std::env::current_dir()?,
                },
                allow,
                created_at: Timestamp::now().to_string(),
            };
            add(&store, &config, job)
        }
        ScheduleCommand::List { json } => list(&store, &config, json),
        ScheduleCommand::Rm { name } => {
            crate::schedule::remove_job(&store, &name)?;
            println!("Removed {name}");
            Ok(Exit::Success)
        }
        ScheduleCommand::Enable { name } => switch(&store, &name, true),
        ScheduleCommand::Disable { name } => switch(&store, &name, false),
        ScheduleCommand::Next { name, count } => next(&store, name.as_deref(), count),
        ScheduleCommand::Run { name, stdout } => run_now(&store, config, home, &name, stdout),
        ScheduleCommand::Daemon => daemon(config, home),
    }
}

/// Checks a job (name, expression, zone, delivery, policy) and adds it.
fn add(store: &Store, config: &Config, mut job: Job) -> crate::error::Fallible<Exit> {
    store::check_name(&job.name)?;
    // A relative file is the job's, not the runner's.
    if let Some(path) = job.deliver.strip_prefix("file:")
        && !std::path::Path::new(path).is_absolute()
    {
        job.deliver = format!("file:{}", job.dir.join(path).display());
    }
    let schedule = Schedule::parse(&job.cron, job.tz.as_deref())?;
    job.deliver.parse::<Target>()?;
    job_config(config, &job)?;
    let name = job.name.clone();
    store.update_jobs(|jobs| {
        if jobs.iter().any(|j| j.name == name) {
            return Err(ScheduleError::JobExists(name.clone()));
        }
        jobs.push(job);
        Ok(())
    })?;
    let next = schedule.next_text(Timestamp::now());
    println!("Added {name}: next run {next}");
    Ok(Exit::Success)
}

fn switch(store: &Store, name: &str, on: bool) -> crate::error::Fallible<Exit> {
    crate::schedule::set_enabled(store, name, on)?;
    println!("{} {name}", if on { "Enabled" } else { "Disabled" });
    Ok(Exit::Success)
}

fn list(store: &Store, config: &Config, json: bool) -> crate::error::Fallible<Exit> {
    let home = store.home().to_path_buf();
    let rows = crate::schedule::views(config, &home, Timestamp::now())?;
    if json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(Exit::Success);
    }
    if rows.is_empty() {
        println!(
            "No jobs. Add one: odek schedule add --cron '0 8 * * MON-FRI' summarise the open issues"
        );
    }
    for r in &rows {
        let dash = |v: &Option<String>| v.clone().unwrap_or_else(|| "—".into());
        println!(
            "{}  {}  [{}]{}  next: {}  last: {}",
            r.name,
            r.cron,
            r.zone,
            if r.enabled { "" } else { " (disabled)" },
            dash(&r.next_run),
            dash(&r.last_outcome),
        );
        println!(
            "    {} → {}; {}",
            crate::text::visible(&r.task, false),
            r.deliver,
            r.policy
        );
    }
    Ok(Exit::Success)
}

fn next(store: &Store, name: Option<&str>, count: usize) -> crate::error::Fallible<Exit> {
    let jobs = store.jobs()?;
    let chosen: Vec<&Job> = match name {
        Some(n) => vec![jobs.iter().find(|j| j.name == n).ok_or_else(|| {
            anyhow::anyhow!("no job named \"{n}\" (odek schedule list shows them)")
        })?],
        None => jobs.iter().collect(),
    };
    for job in chosen {
        let schedule = Schedule::parse(&job.cron, job.tz.as_deref())?;
        println!("{} ({}, {}):", job.name, job.cron, schedule.zone_label());
        for at in schedule.upcoming(Timestamp::now(), count) {
            println!("  {}", at.strftime("%a %Y-%m-%d %H:%M %Z (%:z)"));
        }
    }
    Ok(Exit::Success)
}

/// `odek schedule run NAME`: the job's turn now, delivered where the job delivers (a line
/// on stderr says where), or printed with `--stdout`.
fn run_now(
    store: &Store,
    config: Config,
    home: PathBuf,
    name: &str,
    stdout: bool,
) -> crate::error::Fallible<Exit> {
    let deliver = store
        .jobs()?
        .into_iter()
        .find(|j| j.name == name)
        .map(|j| j.deliver);
    let process = start(config, home)?;
    let exec = TurnExecutor::new(
        process.runtime.config().clone(),
        process.runtime.home().to_path_buf(),
        process.supervisor.clone(),
        stdout.then_some(Target::Stdout),
        crate::telegram::chat_delivery(process.runtime.config()),
    );
    let outcome = process.block_on(crate::schedule::run_now(&exec, store, name))?;
    if outcome.result.is_ok() {
        if let Some(deliver) = deliver.filter(|d| !stdout && d != "stdout") {
            eprintln!("odek: {name}: delivered to {deliver}");
        }
        Ok(Exit::Success)
    } else {
        eprintln!("odek: {name}: {}", outcome.result);
        Ok(Exit::Failure)
    }
}

/// The process of a runner: the one start-up, with the supervisor its jobs run in.
fn start(config: Config, home: PathBuf) -> crate::error::Fallible<Process> {
    let cwd = std::env::current_dir()?;
    Ok(Process::start(StartOptions::new(config, home, cwd))?)
}

fn daemon(config: Config, home: PathBuf) -> crate::error::Fallible<Exit> {
    let process = start(config, home)?;
    let chat = crate::telegram::chat_delivery(process.runtime.config());
    let background = crate::schedule::spawn_background(&process, "schedule daemon", true, chat)?
        .ok_or_else(|| anyhow::anyhow!("the runner did not start"))?;
    process.block_on(async {
        crate::process_group::termination().await;
        eprintln!("odek schedule daemon: stopping; a running job may finish its turn first");
        let cancelled = background.stop().await;
        if cancelled > 0 {
            eprintln!("odek schedule daemon: {cancelled} running job(s) cancelled, saved");
        }
    });
    Ok(Exit::Success)
}
