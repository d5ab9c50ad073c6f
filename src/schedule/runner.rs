//! Running due jobs. One runner per odek home — it holds an exclusive lock on
//! `<home>/schedules.lock`, tried and never waited for, so `odek schedule daemon`, `odek serve`
//! and `odek telegram` on one home never fire a job twice. Each fire time is claimed in the
//! state file before the job runs (a restart does not fire it again); a job still running
//! when it is due again is skipped and the skip recorded; fire times missed while nothing ran
//! are run once at start only for jobs with `catchup`, and otherwise passed over.
//!
//! Time comes from a [`Clock`] and runs go to an [`Executor`], so tests drive the runner
//! with an injected clock and never wait for a real minute.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use jiff::Timestamp;

use super::ScheduleError;
use super::cron::Schedule;
use super::store::{Job, Store};

/// The lock file of a home's runner.
pub const RUNNER_LOCK: &str = "schedules.lock";

/// Where time comes from.
#[async_trait]
pub trait Clock: Send + Sync {
    /// Now.
    fn now(&self) -> Timestamp;
    /// Returns at `at` (or at once when it passed).
    async fn sleep_until(&self, at: Timestamp);
}

/// The wall clock.
pub struct SystemClock;

#[async_trait]
impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }

    async fn sleep_until(&self, at: Timestamp) {
        let wait = at.duration_since(Timestamp::now());
        if let Ok(wait) = std::time::Duration::try_from(wait) {
            tokio::time::sleep(wait).await;
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobResult {
    /// The answer was delivered.
    Delivered,
    /// The turn failed or could not start (why); the reader was told when it could be.
    Failed(String),
    /// The answer could not be delivered (why).
    DeliveryFailed(String),
    /// The turn was cancelled (shutdown, or a person).
    Cancelled,
}

impl JobResult {
    /// True when the answer reached its target.
    pub fn is_ok(&self) -> bool {
        *self == JobResult::Delivered
    }
}

impl std::fmt::Display for JobResult {
    /// The state file's words: `ok`, `failed: …`, `delivery failed: …`, `cancelled`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JobResult::Delivered => f.write_str("ok"),
            JobResult::Failed(why) => write!(f, "failed: {why}"),
            JobResult::DeliveryFailed(why) => write!(f, "delivery failed: {why}"),
            JobResult::Cancelled => f.write_str("cancelled"),
        }
    }
}

/// How a run ended, for the state file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// How it went.
    pub result: JobResult,
    /// The run's session.
    pub session: Option<String>,
}

/// Runs one job's turn and delivers its answer.
#[async_trait]
pub trait Executor: Send + Sync {
    /// Runs `job` for its fire time `fire`.
    async fn run(&self, job: &Job, fire: Timestamp) -> Outcome;

    /// False once the process is shutting down: no job is claimed or started any more.
    fn accepting(&self) -> bool {
        true
    }
}

/// What one pass decided for a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Started for this fire time.
    Started(Timestamp),
    /// Due, but the previous run still goes: skipped and recorded.
    Skipped(Timestamp),
    /// Fire times passed while nothing ran and the job has no `catchup`: passed over.
    Missed(Timestamp),
}

/// The held lock of a home's runner; dropping it lets another runner take over.
pub struct RunnerLock {
    _file: std::fs::File,
}

impl RunnerLock {
    /// Tries to become the runner of `home`: `None` when another process (or another
    /// runner of this one) holds the lock.
    pub fn try_acquire(home: &Path) -> Result<Option<RunnerLock>, ScheduleError> {
        let path = home.join(RUNNER_LOCK);
        let failed = |path: &Path| {
            let path = path.to_path_buf();
            move |source| ScheduleError::Write { path, source }
        };
        crate::util::files::ensure_dir(home).map_err(failed(home))?;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(failed(&path))?;
        match file.try_lock() {
            Ok(()) => Ok(Some(RunnerLock { _file: file })),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(failed(&path)(e)),
        }
    }
}

/// Takes a job out of the running set when dropped (the run ended, failed or panicked).
struct Unmark {
    running: Arc<Mutex<HashSet<String>>>,
    name: String,
}

impl Drop for Unmark {
    fn drop(&mut self) {
        if let Ok(mut r) = self.running.lock() {
            r.remove(&self.name);
        }
    }
}

/// The runner of one home.
pub struct Runner {
    store: Store,
    clock: Arc<dyn Clock>,
    executor: Arc<dyn Executor>,
    running: Arc<Mutex<HashSet<String>>>,
    slots: Arc<tokio::sync::Semaphore>,
    /// The runs started, so a shutdown can wait for them.
    tasks: tokio_util::task::TaskTracker,
    started: Timestamp,
    _lock: RunnerLock,
}

fn parse_time(text: Option<&str>) -> Option<Timestamp> {
    text?.parse().ok()
}

impl Runner {
    /// The runner of `home`, holding `lock`, running at most `max_concurrent` jobs at once
    /// (a job due while all slots are taken waits for one); its start (for missed runs) is
    /// the clock's now.
    pub fn new(
        home: &Path,
        lock: RunnerLock,
        clock: Arc<dyn Clock>,
        executor: Arc<dyn Executor>,
        max_concurrent: usize,
    ) -> Runner {
        Runner {
            store: Store::new(home),
            started: clock.now(),
            clock,
            executor,
            running: Arc::default(),
            slots: Arc::new(tokio::sync::Semaphore::new(max_concurrent.max(1))),
            tasks: tokio_util::task::TaskTracker::new(),
            _lock: lock,
        }
    }

    /// One pass at the clock's now: every enabled job whose next fire time has come is
    /// claimed, then started (or skipped, or passed over). Returns what was decided, by job.
    pub async fn tick(&self) -> Result<Vec<(String, Decision)>, ScheduleError> {
        if !self.executor.accepting() {
            return Ok(Vec::new());
        }
        let now = self.clock.now();
        let jobs = self.store.jobs()?;
        let states = self.store.states()?;
        let mut decided = Vec::new();
        for job in jobs.into_iter().filter(|j| j.enabled) {
            let state = states.get(&job.name).cloned().unwrap_or_default();
            let schedule = match Schedule::parse(&job.cron, job.tz.as_deref()) {
                Ok(s) => s,
                Err(e) => {
                    // Never silent: the job's state says why it does not run.
                    tracing::warn!("schedule {}: {e}", job.name);
                    let _ = self.store.update_state(&job.name, |s| {
                        s.last_outcome = Some(format!("not run: {e}"));
                    });
                    continue;
                }
            };
            // The later of the last handled fire time and the job's creation (a job removed
            // and added again starts afresh).
            let since = [
                parse_time(state.last_fire.as_deref()),
                parse_time(Some(&job.created_at)),
            ]
            .into_iter()
            .flatten()
            .max()
            .unwrap_or(self.started);
            let Some(first_due) = schedule.next_after(since).filter(|t| *t <= now) else {
                continue;
            };
            let latest = schedule
                .latest_at_or_before(now)
                .unwrap_or(first_due)
                .max(first_due);
            match self.decide(&job, first_due, latest) {
                Ok(decision) => decided.push((job.name.clone(), decision)),
                Err(e) => tracing::warn!("schedule {}: {e}", job.name),
            }
        }
        Ok(decided)
    }

    /// Claims the fire time `latest` for `job`, then starts it, skips it or passes it over.
    fn decide(
        &self,
        job: &Job,
        first_due: Timestamp,
        latest: Timestamp,
    ) -> Result<Decision, ScheduleError> {
        let missed_before_start = first_due < self.started;
        let stamp = latest.to_string();
        let busy = self
            .running
            .lock()
            .map(|r| r.contains(&job.name))
            .unwrap_or(false);
        if missed_before_start && !job.catchup {
            self.store
                .update_state(&job.name, |s| s.last_fire = Some(stamp))?;
            return Ok(Decision::Missed(latest));
        }
        if busy {
            self.store.update_state(&job.name, |s| {
                s.last_fire = Some(stamp.clone());
                s.skipped += 1;
                s.last_skip = Some(format!("{stamp}: the previous run was still going"));
            })?;
            return Ok(Decision::Skipped(latest));
        }
        self.store.update_state(&job.name, |s| {
            s.last_fire = Some(stamp.clone());
            s.mark_running(self.clock.now().to_string());
        })?;
        self.start(job.clone(), latest);
        Ok(Decision::Started(latest))
    }

    fn start(&self, job: Job, fire: Timestamp) {
        if let Ok(mut r) = self.running.lock() {
            r.insert(job.name.clone());
        }
        let executor = self.executor.clone();
        let running = self.running.clone();
        let store = self.store.clone();
        let slots = self.slots.clone();
        self.tasks.spawn(async move {
            // Whatever happens to the run, the job is no longer running afterwards.
            let _running = Unmark {
                running,
                name: job.name.clone(),
            };
            let _slot = slots.acquire_owned().await;
            let outcome = executor.run(&job, fire).await;
            if let Err(e) = store.update_state(&job.name, |s| {
                s.mark_ended(outcome.result.to_string(), outcome.session.clone());
            }) {
                tracing::warn!(
                    "schedule {}: the outcome could not be recorded: {e}",
                    job.name
                );
            }
        });
    }

    /// Names of the jobs running now.
    pub fn running(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .running
            .lock()
            .map(|r| r.iter().cloned().collect())
            .unwrap_or_default();
        names.sort();
        names
    }

    /// When the next pass is due: the earliest next fire time of the enabled jobs (a minute
    /// from now when there is none, so added jobs are seen).
    pub fn next_wake(&self) -> Timestamp {
        let now = self.clock.now();
        let minute = now
            .checked_add(jiff::SignedDuration::from_secs(60))
            .unwrap_or(now);
        let Ok(jobs) = self.store.jobs() else {
            return minute;
        };
        jobs.iter()
            .filter(|j| j.enabled)
            .filter_map(|j| Schedule::parse(&j.cron, j.tz.as_deref()).ok())
            .filter_map(|s| s.next_after(now))
            .min()
            .map_or(minute, |t| t.min(minute))
    }

    /// Runs passes until `cancel`: one now, then at each next wake.
    pub async fn run_until(&self, cancel: tokio_util::sync::CancellationToken) {
        loop {
            if let Err(e) = self.tick().await {
                tracing::warn!("schedules: {e}");
            }
            let wake = self.next_wake();
            tokio::select! {
                () = cancel.cancelled() => return,
                () = self.clock.sleep_until(wake) => {}
            }
        }
    }

    /// Waits up to `limit` for the runs started to end (their outcomes recorded); true when
    /// none is left. Call once passes have stopped.
    pub async fn wait_for_runs(&self, limit: std::time::Duration) -> bool {
        self.tasks.close();
        tokio::time::timeout(limit, self.tasks.wait()).await.is_ok()
    }
}

#[cfg(test)]
mod tests;
