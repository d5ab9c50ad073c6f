//! Schedules: recurring tasks (`odek schedule`, docs/SCHEDULES.md). Jobs and their state in
//! the odek home ([`store`]), when they fire ([`cron`]), and the one runner per home that
//! starts them ([`runner`]).

pub mod cron;
pub mod deliver;
mod error;
pub mod exec;
pub mod runner;
pub mod store;

pub use error::{ChatFailure, CronError, ScheduleError};

use std::path::Path;
use std::sync::Arc;

use jiff::Timestamp;

use crate::config::Config;
use crate::protocol::api::ScheduleView;
use crate::runtime::{Process, Supervisor};
use deliver::ChatDelivery;

/// A runner working in the background of a process (`odek schedule daemon`, `odek serve`,
/// `odek telegram`); its jobs' turns run in the process's one supervisor.
pub struct Background {
    runner: Arc<runner::Runner>,
    supervisor: Supervisor,
    cancel: tokio_util::sync::CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Background {
    /// Shutdown: no new job starts; a running one may finish its turn within the
    /// supervisor's grace period, then it is cancelled (its session saved) and its outcome
    /// recorded. Inside `odek serve` and `odek telegram` the surface's shutdown has cancelled
    /// it already, with every other run. Returns how many were cancelled here.
    pub async fn stop(self) -> usize {
        self.cancel.cancel();
        let _ = self.task.await;
        if self
            .runner
            .wait_for_runs(crate::runtime::SHUTDOWN_GRACE)
            .await
        {
            return 0;
        }
        let cancelled = self.supervisor.shutdown().await;
        self.runner
            .wait_for_runs(std::time::Duration::from_secs(5))
            .await;
        cancelled
    }
}

/// Starts the home's runner in `process` for `surface`, its answers to Telegram through
/// `chat`. Inside `odek serve` and `odek telegram` (`daemon` false) only when
/// `schedules.runner` is `any`; either way only when no other runner holds the home's lock —
/// `Err` says so for the daemon, a line on stderr for the others.
pub fn spawn_background(
    process: &Process,
    surface: &str,
    daemon: bool,
    chat: Option<Arc<dyn ChatDelivery>>,
) -> Result<Option<Background>, ScheduleError> {
    let config = process.runtime.config();
    let home = process.runtime.home();
    let wanted = match config.schedules.runner.as_str() {
        "off" => false,
        "daemon" => daemon,
        _ => true,
    };
    if !wanted {
        return if daemon {
            Err(ScheduleError::RunnerOff(config.schedules.runner.clone()))
        } else {
            Ok(None)
        };
    }
    let Some(lock) = runner::RunnerLock::try_acquire(home)? else {
        let held = ScheduleError::RunnerBusy(home.join(runner::RUNNER_LOCK));
        if daemon {
            return Err(held);
        }
        eprintln!("odek {surface}: scheduled jobs run elsewhere: {held}");
        return Ok(None);
    };
    let store = store::Store::new(home);
    match store.mark_interrupted() {
        Ok(marked) if !marked.is_empty() => eprintln!(
            "odek {surface}: marked as interrupted (odek stopped during the run): {}",
            marked.join(", ")
        ),
        Ok(_) => {}
        Err(e) => eprintln!("odek {surface}: {e}"),
    }
    let supervisor = process.supervisor.clone();
    let exec = Arc::new(exec::TurnExecutor::new(
        config.clone(),
        home.to_path_buf(),
        supervisor.clone(),
        None,
        chat,
    ));
    let slots = usize::try_from(config.schedules.max_concurrent).unwrap_or(2);
    let runner = Arc::new(runner::Runner::new(
        home,
        lock,
        Arc::new(runner::SystemClock),
        exec,
        slots,
    ));
    let cancel = tokio_util::sync::CancellationToken::new();
    let task = process.handle().spawn({
        let runner = runner.clone();
        let stop = cancel.clone();
        async move { runner.run_until(stop).await }
    });
    eprintln!(
        "odek {surface}: running the scheduled jobs of {}",
        home.display()
    );
    Ok(Some(Background {
        runner,
        supervisor,
        cancel,
        task,
    }))
}

/// Runs job `name` now, outside its schedule (`odek schedule run`, the web UI's *Run now*),
/// and records the run as its last one.
pub async fn run_now(
    exec: &exec::TurnExecutor,
    store: &store::Store,
    name: &str,
) -> Result<runner::Outcome, ScheduleError> {
    use runner::Executor;
    let jobs = store.jobs()?;
    let job = jobs
        .into_iter()
        .find(|j| j.name == name)
        .ok_or_else(|| ScheduleError::NoSuchJob(name.to_string()))?;
    let now = Timestamp::now();
    store.update_state(&job.name, |s| s.mark_running(now.to_string()))?;
    let outcome = exec.run(&job, now).await;
    store.update_state(&job.name, |s| {
        s.mark_ended(outcome.result.to_string(), outcome.session.clone());
    })?;
    Ok(outcome)
}

/// Switches job `name` on or off.
pub fn set_enabled(store: &store::Store, name: &str, enabled: bool) -> Result<(), ScheduleError> {
    store.update_jobs(|jobs| {
        let job = jobs
            .iter_mut()
            .find(|j| j.name == name)
            .ok_or_else(|| ScheduleError::NoSuchJob(name.to_string()))?;
        job.enabled = enabled;
        Ok(())
    })
}

/// Removes job `name` and forgets its state (a job added again under the name starts afresh).
pub fn remove_job(store: &store::Store, name: &str) -> Result<(), ScheduleError> {
    store.update_jobs(|jobs| {
        let i = jobs
            .iter()
            .position(|j| j.name == name)
            .ok_or_else(|| ScheduleError::NoSuchJob(name.to_string()))?;
        jobs.remove(i);
        Ok(())
    })?;
    store.forget(name)
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
pub fn views(
    config: &Config,
    home: &Path,
    now: Timestamp,
) -> Result<Vec<ScheduleView>, ScheduleError> {
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
                .map(|s| s.next_text(now));
            let zone = schedule
                .as_ref()
                .map(cron::Schedule::zone_label)
                .unwrap_or_else(|e| e.to_string());
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
