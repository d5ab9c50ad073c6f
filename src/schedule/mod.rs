//! Schedules: recurring tasks (`odek schedule`, docs/SCHEDULES.md). Jobs and their state in
//! the odek home ([`store`]), when they fire ([`cron`]), and the one runner per home that
//! starts them ([`runner`]).

pub mod cron;
pub mod deliver;
pub mod exec;
pub mod runner;
pub mod store;

use std::path::Path;

use jiff::Timestamp;

use crate::config::Config;
use crate::protocol::api::ScheduleView;
use crate::runtime::Supervisor;

/// A runner inside `odek serve` or `odek telegram`.
pub struct Background {
    cancel: tokio_util::sync::CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Background {
    /// Stops starting jobs (running ones end with the supervisor's shutdown).
    pub async fn stop(self) {
        self.cancel.cancel();
        let _ = self.task.await;
    }
}

/// Starts the home's runner inside a surface when `schedules.runner` is `any` and no other
/// runner holds the home's lock; its turns run on the surface's `supervisor`, so they end
/// with it. Says on stderr what it did.
pub fn spawn_background(
    config: &Config,
    home: &Path,
    supervisor: Supervisor,
    surface: &str,
) -> Option<Background> {
    if config.schedules.runner != "any" {
        return None;
    }
    let lock = match runner::RunnerLock::try_acquire(home) {
        Ok(Some(lock)) => lock,
        Ok(None) => {
            eprintln!(
                "odek {surface}: scheduled jobs run elsewhere (another runner holds {})",
                home.join(runner::RUNNER_LOCK).display()
            );
            return None;
        }
        Err(e) => {
            eprintln!("odek {surface}: warning: scheduled jobs do not run: {e}");
            return None;
        }
    };
    let exec = std::sync::Arc::new(exec::TurnExecutor::new(
        config.clone(),
        home.to_path_buf(),
        supervisor,
        None,
    ));
    let slots = usize::try_from(config.schedules.max_concurrent).unwrap_or(2);
    let runner = runner::Runner::new(
        home,
        lock,
        std::sync::Arc::new(runner::SystemClock),
        exec,
        slots,
    );
    let cancel = tokio_util::sync::CancellationToken::new();
    let stop = cancel.clone();
    let task = tokio::spawn(async move { runner.run_until(stop).await });
    eprintln!(
        "odek {surface}: running the scheduled jobs of {}",
        home.display()
    );
    Some(Background { cancel, task })
}

/// What a job's turns may do with nobody to ask, in a few words.
pub fn policy_text(config: &Config, job: &store::Job) -> String {
    let mut allowed: Vec<&str> = config
        .schedules
        .dangerous
        .iter()
        .chain(&job.allow)
        .map(String::as_str)
        .collect();
    allowed.sort_unstable();
    allowed.dedup();
    if allowed.is_empty() {
        "asks nothing: what would ask is denied".into()
    } else {
        format!("allows {}; denies what else would ask", allowed.join(", "))
    }
}

/// Every job of `home` with its next run (after `now`) and what happened last.
pub fn views(config: &Config, home: &Path, now: Timestamp) -> Result<Vec<ScheduleView>, String> {
    let store = store::Store::new(home);
    let jobs = store.jobs()?;
    let states = store.states()?;
    Ok(jobs
        .iter()
        .map(|job| {
            let schedule = cron::Schedule::parse(&job.cron, job.tz.as_deref());
            let next_run = schedule
                .as_ref()
                .ok()
                .filter(|_| job.enabled)
                .and_then(|s| s.upcoming(now, 1).into_iter().next())
                .map(|z| z.strftime("%Y-%m-%d %H:%M %Z").to_string());
            let zone = schedule
                .as_ref()
                .map(cron::Schedule::zone_label)
                .unwrap_or_else(|e| e.clone());
            let state = states.get(&job.name).cloned().unwrap_or_default();
            ScheduleView {
                name: job.name.clone(),
                cron: job.cron.clone(),
                zone,
                enabled: job.enabled,
                next_run,
                last_run: state.last_run,
                last_outcome: state.last_outcome,
                last_session: state.last_session,
                skipped: state.skipped,
                deliver: job.deliver.clone(),
                dir: job.dir.display().to_string(),
                policy: policy_text(config, job),
                task: job.task.clone(),
            }
        })
        .collect())
}
