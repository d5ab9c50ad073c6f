use std::time::Duration;

use tokio::sync::Semaphore;

use super::*;

/// A clock the test moves.
struct TestClock(Mutex<Timestamp>);

impl TestClock {
    fn at(time: &str) -> Arc<TestClock> {
        Arc::new(TestClock(Mutex::new(time.parse().unwrap())))
    }

    fn set(&self, time: &str) {
        *self.0.lock().unwrap() = time.parse().unwrap();
    }
}

#[async_trait]
impl Clock for TestClock {
    fn now(&self) -> Timestamp {
        *self.0.lock().unwrap()
    }

    async fn sleep_until(&self, _at: Timestamp) {
        tokio::task::yield_now().await;
    }
}

/// Records runs; each waits for a permit when `hold` (to make a run overrun).
struct Recorder {
    runs: Mutex<Vec<(String, Timestamp)>>,
    gate: Semaphore,
    hold: bool,
}

impl Recorder {
    fn new(hold: bool) -> Arc<Recorder> {
        Arc::new(Recorder {
            runs: Mutex::default(),
            gate: Semaphore::new(0),
            hold,
        })
    }

    fn runs(&self) -> Vec<(String, String)> {
        self.runs
            .lock()
            .unwrap()
            .iter()
            .map(|(n, t)| (n.clone(), t.to_string()))
            .collect()
    }
}

#[async_trait]
impl Executor for Recorder {
    async fn run(&self, job: &Job, fire: Timestamp) -> Outcome {
        self.runs.lock().unwrap().push((job.name.clone(), fire));
        if self.hold {
            let _ = self.gate.acquire().await;
        }
        Outcome {
            result: JobResult::Delivered,
            session: Some("s1".into()),
        }
    }
}

fn add_job(home: &Path, name: &str, cron: &str, created: &str, catchup: bool) {
    Store::new(home)
        .update_jobs(|jobs| {
            jobs.push(Job {
                name: name.into(),
                cron: cron.into(),
                tz: Some("UTC".into()),
                task: "report".into(),
                deliver: "log".into(),
                catchup,
                enabled: true,
                dir: home.to_path_buf(),
                allow: vec![],
                created_at: created.into(),
            });
            Ok(())
        })
        .unwrap();
}

fn runner(home: &Path, clock: &Arc<TestClock>, exec: &Arc<Recorder>) -> Runner {
    let lock = RunnerLock::try_acquire(home)
        .unwrap()
        .expect("the lock is free");
    Runner::new(home, lock, clock.clone(), exec.clone(), 2)
}

/// Lets spawned runs reach their first await and finish what they can.
async fn settle() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
    tokio::time::sleep(Duration::from_millis(5)).await;
}

#[tokio::test]
async fn a_due_job_runs_once_for_its_fire_time() {
    let home = tempfile::tempdir().unwrap();
    add_job(
        home.path(),
        "hourly",
        "0 * * * *",
        "2027-01-04T10:30:00Z",
        false,
    );
    let clock = TestClock::at("2027-01-04T10:59:00Z");
    let exec = Recorder::new(false);
    let r = runner(home.path(), &clock, &exec);
    assert!(r.tick().await.unwrap().is_empty(), "not yet");
    clock.set("2027-01-04T11:00:00Z");
    let decided = r.tick().await.unwrap();
    assert_eq!(decided.len(), 1);
    clock.set("2027-01-04T11:00:40Z");
    assert!(r.tick().await.unwrap().is_empty(), "claimed: not twice");
    settle().await;
    assert_eq!(
        exec.runs(),
        [("hourly".into(), "2027-01-04T11:00:00Z".into())]
    );
    let state = Store::new(home.path()).states().unwrap()["hourly"].clone();
    assert_eq!(state.last_outcome.as_deref(), Some("ok"));
    assert_eq!(state.last_fire.as_deref(), Some("2027-01-04T11:00:00Z"));
    drop(r);
    // A restart does not fire the claimed time again.
    let again = runner(home.path(), &clock, &exec);
    assert!(again.tick().await.unwrap().is_empty());
}

#[tokio::test]
async fn two_runners_on_one_home_fire_a_job_once() {
    let home = tempfile::tempdir().unwrap();
    add_job(
        home.path(),
        "hourly",
        "0 * * * *",
        "2027-01-04T10:30:00Z",
        false,
    );
    let clock = TestClock::at("2027-01-04T11:00:00Z");
    let exec = Recorder::new(false);
    let first = runner(home.path(), &clock, &exec);
    assert!(
        RunnerLock::try_acquire(home.path()).unwrap().is_none(),
        "the second runner does not get the lock"
    );
    first.tick().await.unwrap();
    settle().await;
    assert_eq!(exec.runs().len(), 1);
    drop(first);
    assert!(
        RunnerLock::try_acquire(home.path()).unwrap().is_some(),
        "free again"
    );
}

#[tokio::test]
async fn a_job_still_running_when_due_again_is_skipped_and_the_skip_recorded() {
    let home = tempfile::tempdir().unwrap();
    add_job(
        home.path(),
        "slow",
        "*/10 * * * *",
        "2027-01-04T10:55:00Z",
        false,
    );
    let clock = TestClock::at("2027-01-04T11:00:00Z");
    let exec = Recorder::new(true);
    let r = runner(home.path(), &clock, &exec);
    assert!(matches!(r.tick().await.unwrap()[0].1, Decision::Started(_)));
    settle().await;
    clock.set("2027-01-04T11:10:00Z");
    assert!(matches!(r.tick().await.unwrap()[0].1, Decision::Skipped(_)));
    let state = Store::new(home.path()).states().unwrap()["slow"].clone();
    assert_eq!(state.skipped, 1);
    assert!(state.last_skip.unwrap().contains("still going"));
    exec.gate.add_permits(1);
    settle().await;
    assert!(r.running().is_empty());
    clock.set("2027-01-04T11:20:00Z");
    assert!(matches!(r.tick().await.unwrap()[0].1, Decision::Started(_)));
    settle().await;
    assert_eq!(exec.runs().len(), 2);
    exec.gate.add_permits(1);
}

#[tokio::test]
async fn missed_runs_are_run_once_at_start_only_with_catchup() {
    let home = tempfile::tempdir().unwrap();
    add_job(
        home.path(),
        "with",
        "0 * * * *",
        "2027-01-04T08:30:00Z",
        true,
    );
    add_job(
        home.path(),
        "without",
        "0 * * * *",
        "2027-01-04T08:30:00Z",
        false,
    );
    // Nothing ran from 08:30 to 12:10: fire times 09:00 … 12:00 were missed.
    let clock = TestClock::at("2027-01-04T12:10:00Z");
    let exec = Recorder::new(false);
    let r = runner(home.path(), &clock, &exec);
    let decided = r.tick().await.unwrap();
    let latest: Timestamp = "2027-01-04T12:00:00Z".parse().unwrap();
    assert_eq!(
        decided,
        [
            ("with".to_string(), Decision::Started(latest)),
            ("without".to_string(), Decision::Missed(latest))
        ]
    );
    settle().await;
    assert_eq!(
        exec.runs(),
        [("with".into(), "2027-01-04T12:00:00Z".into())],
        "once"
    );
    clock.set("2027-01-04T13:00:00Z");
    assert_eq!(r.tick().await.unwrap().len(), 2, "both run from now on");
}

#[tokio::test]
async fn a_disabled_job_never_runs_and_the_next_wake_is_the_nearest_fire() {
    let home = tempfile::tempdir().unwrap();
    add_job(
        home.path(),
        "off",
        "* * * * *",
        "2027-01-04T10:00:00Z",
        false,
    );
    Store::new(home.path())
        .update_jobs(|jobs| {
            jobs[0].enabled = false;
            Ok(())
        })
        .unwrap();
    add_job(
        home.path(),
        "soon",
        "15 11 * * *",
        "2027-01-04T10:00:00Z",
        false,
    );
    let clock = TestClock::at("2027-01-04T11:14:30Z");
    let exec = Recorder::new(false);
    let r = runner(home.path(), &clock, &exec);
    assert!(r.tick().await.unwrap().is_empty());
    assert_eq!(r.next_wake().to_string(), "2027-01-04T11:15:00Z");
    clock.set("2027-01-04T11:15:00Z");
    assert_eq!(r.tick().await.unwrap()[0].0, "soon");
}

#[tokio::test]
async fn at_most_max_concurrent_jobs_run_at_once_the_others_wait_for_a_slot() {
    let home = tempfile::tempdir().unwrap();
    for name in ["a", "b", "c"] {
        add_job(
            home.path(),
            name,
            "0 * * * *",
            "2027-01-04T10:30:00Z",
            false,
        );
    }
    let clock = TestClock::at("2027-01-04T11:00:00Z");
    let exec = Recorder::new(true);
    let r = runner(home.path(), &clock, &exec);
    assert_eq!(r.tick().await.unwrap().len(), 3, "all claimed");
    settle().await;
    assert_eq!(exec.runs().len(), 2, "two slots");
    exec.gate.add_permits(1);
    settle().await;
    assert_eq!(exec.runs().len(), 3, "the third got the freed slot");
    exec.gate.add_permits(2);
}

#[tokio::test]
async fn a_long_outage_of_an_every_minute_job_runs_once_and_a_job_added_again_starts_afresh() {
    let home = tempfile::tempdir().unwrap();
    add_job(
        home.path(),
        "minutely",
        "* * * * *",
        "2026-09-01T00:00:00Z",
        true,
    );
    let clock = TestClock::at("2027-01-04T11:00:30Z");
    let exec = Recorder::new(false);
    let r = runner(home.path(), &clock, &exec);
    let latest: Timestamp = "2027-01-04T11:00:00Z".parse().unwrap();
    assert_eq!(
        r.tick().await.unwrap(),
        [("minutely".to_string(), Decision::Started(latest))]
    );
    assert!(
        r.tick().await.unwrap().is_empty(),
        "four months of minutes run once"
    );
    settle().await;
    // Removed and added again later: its old state is gone, it waits for its next fire.
    let store = Store::new(home.path());
    store
        .update_jobs(|jobs| {
            jobs.clear();
            Ok(())
        })
        .unwrap();
    store.forget("minutely").unwrap();
    add_job(
        home.path(),
        "minutely",
        "0 12 * * *",
        "2027-01-04T11:00:40Z",
        false,
    );
    clock.set("2027-01-04T11:00:50Z");
    assert!(r.tick().await.unwrap().is_empty());
    assert!(!store.states().unwrap().contains_key("minutely"));
}
