//! Running one job: a turn with nobody to ask, through a supervisor, then its delivery.
//!
//! The job's turn is built by the same runtime as every other turn, from the user's
//! configuration with the schedule's policy on top: nothing asks (a class the job or
//! `schedules.dangerous` allows runs, every other call that would ask is denied; a
//! class the user denies stays denied; `dangerous.allowlist` and MCP `auto_approve`, given
//! for someone at the keyboard, do not apply), the sandbox is on (a job fails where it is
//! not available), `clarify` answers that no user is available, and the working directory
//! is the job's. Each run is a session with
//! `origin: "schedule"` and the job's name (`schedule`).

use std::str::FromStr;
use std::sync::Arc;

use async_trait::async_trait;
use jiff::Timestamp;

use super::ScheduleError;
use super::deliver::{ChatDelivery, Delivery, Target};
use super::runner::{Executor, JobResult, Outcome};
use super::store::Job;
use crate::config::Config;
use crate::engine::{NoopObserver, RunError};
use crate::llm::Message;
use crate::runtime::{Approvals, ModelSource, Runtime, RuntimeOptions, Submission, Supervisor};

/// Who holds a scheduled session while it runs.
const HOLDER: &str = "odek schedule";

/// The configuration of `job`'s turns: `base` with nobody to ask, allowing the classes of
/// `schedules.dangerous` and the job's `--allow`.
pub fn job_config(base: &Config, job: &Job) -> Result<Config, ScheduleError> {
    Ok(base.with_nobody_to_ask(base.schedules.dangerous.iter().chain(&job.allow))?)
}

/// Runs jobs' turns in the process's supervisor and delivers their answers.
pub struct TurnExecutor {
    /// The user's configuration (the global file, the environment).
    pub base: Config,
    /// The odek home.
    pub home: std::path::PathBuf,
    /// The process's supervisor, where the turns run (listed, cancelled and shut down with
    /// every other run of the process).
    pub supervisor: Supervisor,
    /// Where answers go.
    pub delivery: Arc<Delivery>,
    /// Overrides every job's target (`odek schedule run NAME` prints to stdout).
    pub target: Option<Target>,
}

impl TurnExecutor {
    /// An executor over the process's `supervisor`, delivering as the configuration says
    /// (`target` overrides every job's) with `chat` as the chat service.
    pub fn new(
        config: Config,
        home: std::path::PathBuf,
        supervisor: Supervisor,
        target: Option<Target>,
        chat: Option<Arc<dyn ChatDelivery>>,
    ) -> TurnExecutor {
        TurnExecutor {
            delivery: Arc::new(Delivery::from_config(&config, &home, chat)),
            base: config,
            home,
            supervisor,
            target,
        }
    }

    /// The job's turn: its session, its answer (or why none), the runtime's redactor.
    async fn turn(
        &self,
        job: &Job,
    ) -> Result<
        (
            String,
            Result<String, RunError>,
            Arc<crate::redact::Redactor>,
        ),
        ScheduleError,
    > {
        let config = job_config(&self.base, job)?;
        let redactor = crate::runtime::build_redactor(&config);
        let runtime = Runtime::build(
            config,
            RuntimeOptions {
                home: self.home.clone(),
                cwd: job.dir.clone(),
                model_source: ModelSource::Http,
                record: None,
                events: None,
                redactor,
            },
        )?;
        if !runtime.sandbox().is_on() {
            return Err(ScheduleError::NoSandbox);
        }
        let runtime = Arc::new(runtime);
        let (head, _) = runtime.first_messages();
        let session = runtime.new_scheduled_session(&job.task, head, HOLDER, &job.name)?;
        let session_id = session.id().to_string();
        let handle = self.supervisor.submit(Submission {
            runtime: runtime.clone(),
            session: Some(session),
            input: vec![Message::user(job.task.clone())],
            approvals: Approvals::Nobody,
            output: Arc::new(NoopObserver),
            external: Vec::new(),
            origin: crate::session::ORIGIN_SCHEDULE,
            files: None,
            scope: Default::default(),
        })?;
        let outcome = handle.outcome().await?;
        runtime.mcp().shutdown().await;
        Ok((session_id, outcome.run.result, runtime.redactor().clone()))
    }

    /// The target of `job`'s answer.
    fn target_of(&self, job: &Job) -> Result<Target, ScheduleError> {
        match &self.target {
            Some(t) => Ok(t.clone()),
            None => Target::from_str(&job.deliver),
        }
    }
}

#[async_trait]
impl Executor for TurnExecutor {
    async fn run(&self, job: &Job, fire: Timestamp) -> Outcome {
        let (session, result, redactor) = match self.turn(job).await {
            Ok(done) => done,
            Err(e) => {
                return Outcome {
                    result: JobResult::Failed(e.to_string()),
                    session: None,
                };
            }
        };
        let session_id = Some(session.clone());
        let (answer, failure) = match result {
            Ok(answer) => (answer, None),
            Err(RunError::Cancelled) => {
                return Outcome {
                    result: JobResult::Cancelled,
                    session: session_id,
                };
            }
            // The reader is told, and the outcome says it failed.
            Err(e) => (
                format!("odek: the scheduled task {} failed: {e}", job.name),
                Some(JobResult::Failed(e.to_string())),
            ),
        };
        let answer = redactor.redact(&answer).into_owned();
        let header = format!("=== {} {fire} (session {session})", job.name);
        let delivered = match self.target_of(job) {
            Ok(target) => {
                self.delivery
                    .deliver(&target, &job.name, &header, &answer)
                    .await
            }
            Err(e) => Err(e),
        };
        Outcome {
            result: match delivered {
                Ok(()) => failure.unwrap_or(JobResult::Delivered),
                Err(e) => JobResult::DeliveryFailed(e.to_string()),
            },
            session: session_id,
        }
    }

    fn accepting(&self) -> bool {
        !self.supervisor.is_stopping()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::danger_policy::{Action, DangerClass};

    #[test]
    fn a_jobs_policy_asks_nothing_allows_only_what_it_names_and_keeps_denials() {
        let mut base = Config::default();
        base.dangerous.action = Some(Action::Allow);
        base.dangerous
            .classes
            .insert(DangerClass::NetworkEgress, Action::Deny);
        base.dangerous
            .classes
            .insert(DangerClass::LocalWrite, Action::Allow);
        base.schedules.dangerous = vec!["local_write".into()];
        base.sandbox = false;
        base.dangerous.allowlist = vec!["git push".into()];
        let job = Job {
            name: "j".into(),
            cron: "@daily".into(),
            tz: None,
            task: "t".into(),
            deliver: "log".into(),
            catchup: false,
            enabled: true,
            dir: "/w".into(),
            allow: vec!["network_egress".into(), "code_execution".into()],
            created_at: String::new(),
        };
        let c = job_config(&base, &job).unwrap();
        assert_eq!(c.dangerous.action, None, "no --yolo for a schedule");
        assert_eq!(c.dangerous.non_interactive, Some(Action::Deny));
        assert_eq!(
            c.dangerous.classes[&DangerClass::NetworkEgress],
            Action::Deny
        );
        assert_eq!(c.dangerous.classes[&DangerClass::LocalWrite], Action::Allow);
        assert_eq!(
            c.dangerous.classes[&DangerClass::CodeExecution],
            Action::Allow
        );
        assert!(c.sandbox);
        assert!(c.dangerous.allowlist.is_empty(), "no approval given ahead");
        let bad = Job {
            allow: vec!["everything".into()],
            ..job
        };
        assert!(
            job_config(&base, &bad)
                .unwrap_err()
                .to_string()
                .contains("unknown danger class")
        );
    }
}
