//! The jobs (`<home>/schedules.json`) and what happened to them
//! (`<home>/schedules-state.json`). Each file is replaced atomically (a crash leaves the old
//! or the new one), changes hold a lock so two writers never lose each other's change, and
//! a damaged file is reported by name, never silently emptied.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::ScheduleError;
use crate::session::DirLock;
use crate::util::files::{Permissions, ensure_dir, write_atomically};

/// The jobs file, in the odek home.
pub const JOBS_FILE: &str = "schedules.json";
/// The state file, in the odek home.
pub const STATE_FILE: &str = "schedules-state.json";
/// Longest job name.
pub const MAX_NAME_CHARS: usize = 64;

/// One scheduled job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    /// Its name: letters, digits, `-` and `_`.
    pub name: String,
    /// The cron expression.
    pub cron: String,
    /// The IANA zone (`None`: the system's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tz: Option<String>,
    /// What the agent is asked to do.
    pub task: String,
    /// Where the answer goes (`stdout`, `log`, `file:PATH`, `telegram`, `telegram:CHAT`).
    #[serde(default = "default_deliver")]
    pub deliver: String,
    /// Run once at start when a fire time passed while nothing ran.
    #[serde(default)]
    pub catchup: bool,
    /// Off: kept, never run by a runner (`run NAME` still runs it).
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// The working directory of its turns.
    pub dir: PathBuf,
    /// Danger classes its turns may run with nobody to ask (`--allow CLASS`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    /// When it was added (RFC 3339, UTC).
    pub created_at: String,
}

fn default_deliver() -> String {
    "log".into()
}

fn default_true() -> bool {
    true
}

/// What happened to a job.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobState {
    /// When it last started (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run: Option<String>,
    /// How that ended: `ok`, `failed: …`, `delivery failed: …`, `cancelled`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_outcome: Option<String>,
    /// The session of that run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_session: Option<String>,
    /// The fire time a runner handled last (so a restart does not fire it again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_fire: Option<String>,
    /// Fire times skipped because the previous run was still going.
    #[serde(default)]
    pub skipped: u64,
    /// The last skip (RFC 3339) and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_skip: Option<String>,
    /// The process running it now (`last_outcome` says `running` meanwhile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_pid: Option<u32>,
}

/// `last_outcome` while a run is going.
pub const RUNNING: &str = "running";
/// `last_outcome` of a run whose process ended before it did (a crash, `kill -9`).
pub const INTERRUPTED: &str = "interrupted: odek stopped during the run";

impl JobState {
    /// Records that this process started a run now.
    pub fn mark_running(&mut self, now: String) {
        self.last_run = Some(now);
        self.last_outcome = Some(RUNNING.to_string());
        self.running_pid = Some(std::process::id());
    }

    /// Records how the run ended.
    pub fn mark_ended(&mut self, outcome: String, session: Option<String>) {
        self.last_outcome = Some(outcome);
        self.last_session = session;
        self.running_pid = None;
    }
}

/// Checks a job name: 1–64 letters, digits, `-` and `_`.
pub fn check_name(name: &str) -> Result<(), ScheduleError> {
    let ok = !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(ScheduleError::BadName {
            name: name.to_string(),
            max: MAX_NAME_CHARS,
        })
    }
}

/// A name for a job from its task's first words (`summarise-the-open-issues`).
pub fn name_from_task(task: &str) -> String {
    let words: Vec<String> = task
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(4)
        .map(str::to_lowercase)
        .collect();
    let name = words.join("-");
    if name.is_empty() {
        "job".into()
    } else {
        name.chars().take(MAX_NAME_CHARS).collect()
    }
}

/// The two files of one odek home.
#[derive(Debug, Clone)]
pub struct Store {
    home: PathBuf,
}

impl Store {
    /// The store of `home`.
    pub fn new(home: &Path) -> Store {
        Store {
            home: home.to_path_buf(),
        }
    }

    /// The odek home.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The jobs, in the order they were added (none when the file does not exist).
    pub fn jobs(&self) -> Result<Vec<Job>, ScheduleError> {
        read_json(&self.home.join(JOBS_FILE))
    }

    /// The state of every job that ran or was skipped.
    pub fn states(&self) -> Result<BTreeMap<String, JobState>, ScheduleError> {
        read_json(&self.home.join(STATE_FILE))
    }

    /// Changes the jobs under the lock: read, `change`, write.
    pub fn update_jobs<T>(
        &self,
        change: impl FnOnce(&mut Vec<Job>) -> Result<T, ScheduleError>,
    ) -> Result<T, ScheduleError> {
        self.update(JOBS_FILE, change)
    }

    /// Forgets what happened to `name` (its job was removed).
    pub fn forget(&self, name: &str) -> Result<(), ScheduleError> {
        self.update(STATE_FILE, |states: &mut BTreeMap<String, JobState>| {
            states.remove(name);
            Ok(())
        })
    }

    /// Marks as [`INTERRUPTED`] every run whose process is gone; returns their jobs' names.
    /// Runs of a process still alive (`odek schedule run` elsewhere) are left alone.
    pub fn mark_interrupted(&self) -> Result<Vec<String>, ScheduleError> {
        if !self.home.join(STATE_FILE).exists() {
            return Ok(Vec::new());
        }
        self.update(STATE_FILE, |states: &mut BTreeMap<String, JobState>| {
            let mut marked = Vec::new();
            for (name, state) in states.iter_mut() {
                let gone = state.running_pid.is_some_and(|pid| {
                    !i32::try_from(pid).is_ok_and(crate::process_group::process_alive)
                });
                if gone {
                    state.mark_ended(INTERRUPTED.to_string(), state.last_session.clone());
                    marked.push(name.clone());
                }
            }
            Ok(marked)
        })
    }

    /// Changes the state of `name` under the lock.
    pub fn update_state(
        &self,
        name: &str,
        change: impl FnOnce(&mut JobState),
    ) -> Result<(), ScheduleError> {
        self.update(STATE_FILE, |states: &mut BTreeMap<String, JobState>| {
            change(states.entry(name.to_string()).or_default());
            Ok(())
        })
    }

    fn update<V, T>(
        &self,
        file: &str,
        change: impl FnOnce(&mut V) -> Result<T, ScheduleError>,
    ) -> Result<T, ScheduleError>
    where
        V: Serialize + for<'de> Deserialize<'de> + Default,
    {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| ScheduleError::Write { path, source }
        };
        ensure_dir(&self.home).map_err(io(&self.home))?;
        let lock = self.home.join(format!(".{file}.lock"));
        let _held = DirLock::acquire(&lock).map_err(io(&lock))?;
        let mut value: V = read_json(&self.home.join(file))?;
        let result = change(&mut value)?;
        let mut bytes = serde_json::to_vec_pretty(&value).map_err(|e| ScheduleError::Write {
            path: self.home.join(file),
            source: std::io::Error::other(e),
        })?;
        bytes.push(b'\n');
        let path = self.home.join(file);
        write_atomically(&path, &bytes, Permissions::Private).map_err(io(&path))?;
        Ok(result)
    }
}

/// A JSON file's value; the default when it does not exist; an error naming the file when
/// it cannot be read or parsed.
fn read_json<V: for<'de> Deserialize<'de> + Default>(path: &Path) -> Result<V, ScheduleError> {
    match std::fs::read(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(V::default()),
        Err(source) => Err(ScheduleError::Read {
            path: path.to_path_buf(),
            source,
        }),
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|source| ScheduleError::Damaged {
            path: path.to_path_buf(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(name: &str) -> Job {
        Job {
            name: name.into(),
            cron: "@daily".into(),
            tz: None,
            task: "summarise".into(),
            deliver: "log".into(),
            catchup: false,
            enabled: true,
            dir: PathBuf::from("/w"),
            allow: vec![],
            created_at: "2027-01-01T00:00:00Z".into(),
        }
    }

    #[test]
    fn jobs_and_states_round_trip_under_the_lock() {
        let home = tempfile::tempdir().unwrap();
        let store = Store::new(home.path());
        assert!(store.jobs().unwrap().is_empty());
        store
            .update_jobs(|jobs| {
                jobs.push(job("daily-report"));
                Ok(())
            })
            .unwrap();
        assert_eq!(store.jobs().unwrap(), vec![job("daily-report")]);
        store
            .update_state("daily-report", |s| s.last_outcome = Some("ok".into()))
            .unwrap();
        assert_eq!(
            store.states().unwrap()["daily-report"]
                .last_outcome
                .as_deref(),
            Some("ok")
        );
    }

    #[test]
    fn two_threads_adding_jobs_lose_neither() {
        let home = tempfile::tempdir().unwrap();
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let store = Store::new(home.path());
                std::thread::spawn(move || {
                    store
                        .update_jobs(|jobs| {
                            jobs.push(job(&format!("job-{i}")));
                            Ok(())
                        })
                        .unwrap();
                })
            })
            .collect();
        handles.into_iter().for_each(|h| h.join().unwrap());
        assert_eq!(Store::new(home.path()).jobs().unwrap().len(), 8);
    }

    #[test]
    fn a_damaged_file_is_named_and_names_are_checked() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join(JOBS_FILE), "[{").unwrap();
        let e = Store::new(home.path()).jobs().unwrap_err().to_string();
        assert!(e.contains("schedules.json is damaged"), "{e}");
        assert!(check_name("daily_report-2").is_ok());
        assert!(check_name("no spaces").is_err() && check_name("").is_err());
        assert_eq!(
            name_from_task("Summarise the open issues, then mail them"),
            "summarise-the-open-issues"
        );
    }
}
