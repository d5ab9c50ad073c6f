//! Store semantics: versions, no-ops, events, and serialisation under concurrency.

use std::sync::{Arc, Mutex};
use std::thread;

use serde_json::json;

use super::{busy_store, create_args, recording_store, seed_example};
use crate::plan::{PlanEvent, PlanLimits, PlanState, PlanStore, StepStatus, render};

#[test]
fn version_starts_at_one_and_bumps_per_effective_call() {
    let (store, events) = recording_store(PlanLimits::default());
    assert_eq!(store.version(), 0);
    let out = store
        .call(&create_args(&[("s1", "a"), ("s2", "b")]))
        .unwrap();
    assert_eq!(store.version(), 1);
    assert!(out.starts_with("[Current plan: v1 — 0/2 done, 0 blocked."));
    store.call(r#"{"verb":"complete","step_id":"s1"}"#).unwrap();
    store
        .call(r#"{"verb":"update","updates":[{"id":"s2","note":"n"}]}"#)
        .unwrap();
    store.call(&create_args(&[("x", "replanned")])).unwrap();
    assert_eq!(store.version(), 4);
    let events = events.lock().unwrap();
    assert_eq!(
        *events,
        vec![
            PlanEvent::Created {
                steps: 2,
                version: 1
            },
            PlanEvent::Updated {
                steps: 2,
                done: 1,
                in_progress: 0,
                blocked: 0,
                pending: 1,
                version: 2
            },
            PlanEvent::Updated {
                steps: 2,
                done: 1,
                in_progress: 0,
                blocked: 0,
                pending: 1,
                version: 3
            },
            PlanEvent::Created {
                steps: 1,
                version: 4
            },
        ]
    );
}

#[test]
fn create_replaces_wholesale_and_resets_statuses() {
    let (store, _) = busy_store();
    let args = json!({"verb": "create", "steps": [
        {"id": "s2", "title": "two again", "note": "fresh"},
        {"id": "s9", "title": "new"},
    ]});
    store.call(&args.to_string()).unwrap();
    let state = store.snapshot();
    assert_eq!(state.version, 3);
    assert_eq!(state.steps.len(), 2);
    assert_eq!(state.steps[0].status, StepStatus::Pending);
    assert_eq!(state.steps[0].note, "fresh");
    // Creating the identical plan again still bumps: create is always effective.
    store.call(&args.to_string()).unwrap();
    assert_eq!(store.version(), 4);
}

#[test]
fn idempotent_noops_neither_bump_nor_fire() {
    let (store, events) = busy_store();
    let before = store.snapshot();
    let rendered = render(&before, 2000).unwrap();
    for args in [
        r#"{"verb":"update","updates":[{"id":"s2","status":"in_progress"}]}"#,
        r#"{"verb":"update","updates":[{"id":"s3","note":"waiting"}]}"#,
        r#"{"verb":"update","updates":[{"id":"s3","note":"  "},{"id":"s1","status":""}]}"#,
        r#"{"verb":"update","updates":[{"id":"s1","status":"done"},{"id":"s1","status":"pending"}]}"#,
        r#"{"verb":"get"}"#,
    ] {
        assert_eq!(store.call(args).unwrap(), rendered, "{args}");
    }
    store.call(r#"{"verb":"complete","step_id":"s1"}"#).unwrap();
    let done_render = store.call(r#"{"verb":"get"}"#).unwrap();
    assert_eq!(
        store.call(r#"{"verb":"complete","step_id":"s1"}"#).unwrap(),
        done_render
    );
    assert_eq!(store.version(), before.version + 1);
    assert_eq!(events.lock().unwrap().len(), 1);
}

#[test]
fn note_only_update_bumps_with_unchanged_counts() {
    let (store, events) = busy_store();
    store
        .call(r#"{"verb":"update","updates":[{"id":"s3","note":"new note"}]}"#)
        .unwrap();
    let events = events.lock().unwrap();
    assert_eq!(
        *events,
        vec![PlanEvent::Updated {
            steps: 3,
            done: 0,
            in_progress: 1,
            blocked: 0,
            pending: 2,
            version: 3
        }]
    );
}

#[test]
fn get_restore_and_reset_never_fire() {
    let (store, events) = busy_store();
    store.call(r#"{"verb":"get"}"#).unwrap();
    store.restore(seed_example());
    assert_eq!(store.snapshot(), seed_example());
    assert_eq!(
        store.call(r#"{"verb":"get"}"#).unwrap(),
        render(&seed_example(), 2000).unwrap()
    );
    store.reset();
    assert_eq!(store.snapshot(), PlanState::default());
    assert_eq!(store.call(r#"{"verb":"get"}"#).unwrap(), "No active plan.");
    assert!(events.lock().unwrap().is_empty());
}

#[test]
fn restored_plan_continues_its_version() {
    let (store, events) = recording_store(PlanLimits::default());
    store.restore(seed_example());
    store.call(r#"{"verb":"complete","step_id":"s2"}"#).unwrap();
    assert_eq!(store.version(), 4);
    // A restored collapsed plan has no rows: get says no plan, create continues the version.
    store.restore(PlanState {
        version: 7,
        steps: vec![],
    });
    assert_eq!(store.call(r#"{"verb":"get"}"#).unwrap(), "No active plan.");
    store.call(&create_args(&[("a", "b")])).unwrap();
    assert_eq!(store.version(), 8);
    let versions: Vec<u64> = events.lock().unwrap().iter().map(|e| e.version()).collect();
    assert_eq!(versions, vec![4, 8]);
}

#[test]
fn version_saturates_instead_of_overflowing() {
    let store = PlanStore::default();
    store.restore(PlanState {
        version: u64::MAX,
        steps: seed_example().steps,
    });
    store.call(r#"{"verb":"complete","step_id":"s4"}"#).unwrap();
    assert_eq!(store.version(), u64::MAX);
}

#[test]
fn event_payloads_carry_counts_only() {
    let (store, events) = recording_store(PlanLimits::default());
    let secret = "SECRET-TITLE-TOKEN";
    let args = json!({"verb": "create", "steps": [
        {"id": "s1", "title": secret, "note": "SECRET-NOTE"},
        {"id": "s2", "title": "other"},
    ]});
    store.call(&args.to_string()).unwrap();
    store.call(r#"{"verb":"update","updates":[{"id":"s1","status":"blocked","note":"SECRET-NOTE-2"}]}"#).unwrap();
    let events = events.lock().unwrap();
    // Counts and version only: the event type has no field a title or note could go in.
    assert_eq!(
        events[0],
        PlanEvent::Created {
            steps: 2,
            version: 1
        }
    );
    assert_eq!(
        events[1],
        PlanEvent::Updated {
            steps: 2,
            done: 0,
            in_progress: 0,
            blocked: 1,
            pending: 1,
            version: 2
        }
    );
    assert!(!format!("{events:?}").contains("SECRET"));
}

#[test]
fn concurrent_mutations_are_serialised_and_gapless() {
    const THREADS: usize = 8;
    const PER_THREAD: usize = 50;
    let store = Arc::new(PlanStore::new(PlanLimits::clamped(50, 8000)));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    store.set_on_change(Box::new(move |event| sink.lock().unwrap().push(*event)));
    let ids: Vec<(String, String)> = (0..THREADS)
        .map(|t| (format!("t{t}"), format!("thread {t}")))
        .collect();
    let pairs: Vec<(&str, &str)> = ids.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    store.call(&create_args(&pairs)).unwrap();
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let store = Arc::clone(&store);
            let ids = ids.clone();
            thread::spawn(move || {
                for i in 0..PER_THREAD {
                    if i % 25 == 24 {
                        let pairs: Vec<(&str, &str)> =
                            ids.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
                        store.call(&create_args(&pairs)).unwrap();
                    } else {
                        let args = json!({"verb": "update", "updates": [
                            {"id": format!("t{t}"), "note": format!("thread {t} mutation {i}")}
                        ]});
                        store.call(&args.to_string()).unwrap();
                    }
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    let total = 1 + THREADS * PER_THREAD;
    let versions: Vec<u64> = seen.lock().unwrap().iter().map(|e| e.version()).collect();
    assert_eq!(versions, (1..=total as u64).collect::<Vec<_>>());
    assert_eq!(store.version(), total as u64);
    let created = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, PlanEvent::Created { .. }))
        .count();
    assert_eq!(created, 1 + THREADS * 2);
}

#[test]
fn callback_can_be_replaced() {
    let store = PlanStore::default();
    let first = Arc::new(Mutex::new(0));
    let second = Arc::new(Mutex::new(0));
    let f = Arc::clone(&first);
    store.set_on_change(Box::new(move |_| *f.lock().unwrap() += 1));
    store.call(&create_args(&[("a", "b")])).unwrap();
    let s = Arc::clone(&second);
    store.set_on_change(Box::new(move |_| *s.lock().unwrap() += 1));
    store.call(&create_args(&[("a", "b")])).unwrap();
    assert_eq!((*first.lock().unwrap(), *second.lock().unwrap()), (1, 1));
    assert_eq!(store.limits(), PlanLimits::default());
    assert!(format!("{store:?}").contains("PlanStore"));
}

fn block(store: &PlanStore, updates: &[(&str, &str)]) {
    let updates: Vec<serde_json::Value> = updates
        .iter()
        .map(|(id, status)| json!({"id": id, "status": status}))
        .collect();
    store
        .call(&json!({"verb": "update", "updates": updates}).to_string())
        .unwrap();
}

fn four_steps() -> String {
    create_args(&[("s1", "a"), ("s2", "b"), ("s3", "c"), ("s4", "d")])
}

#[test]
fn three_blocked_transitions_fire_the_streak_once_after_the_update() {
    let (store, events) = recording_store(PlanLimits::default());
    store.call(&four_steps()).unwrap();
    block(&store, &[("s1", "blocked")]);
    block(&store, &[("s2", "blocked")]);
    assert!(!store.take_blocked_streak());
    block(&store, &[("s3", "blocked")]);
    assert!(store.take_blocked_streak(), "fired");
    assert!(!store.take_blocked_streak(), "taken once");
    let events = events.lock().unwrap();
    let n = events.len();
    assert!(matches!(events[n - 2], PlanEvent::Updated { .. }));
    assert_eq!(
        events[n - 1],
        PlanEvent::Blocked {
            steps: 4,
            blocked: 3,
            version: 4
        }
    );
    let activity = store.activity();
    assert_eq!(
        (
            activity.plans_created,
            activity.plans_updated,
            activity.plans_blocked,
            activity.blocked_streaks
        ),
        (1, 3, 3, 1)
    );
}

#[test]
fn progress_or_a_new_plan_ends_a_blocked_streak() {
    let (store, _) = recording_store(PlanLimits::default());
    store.call(&four_steps()).unwrap();
    block(&store, &[("s1", "blocked")]);
    block(&store, &[("s2", "blocked")]);
    block(&store, &[("s3", "in_progress")]);
    block(&store, &[("s3", "blocked")]);
    block(&store, &[("s4", "blocked")]);
    assert!(!store.take_blocked_streak(), "in_progress reset the streak");
    store.call(&four_steps()).unwrap();
    block(&store, &[("s1", "blocked")]);
    block(&store, &[("s2", "blocked")]);
    assert!(!store.take_blocked_streak(), "create reset the streak");
    // A note-only change or a move back to pending neither resets nor counts.
    block(&store, &[("s4", "pending")]);
    store
        .call(r#"{"verb":"update","updates":[{"id":"s1","note":"still stuck"}]}"#)
        .unwrap();
    block(&store, &[("s3", "blocked")]);
    assert!(store.take_blocked_streak());
}

#[test]
fn one_update_that_starts_a_step_and_blocks_three_fires() {
    let (store, _) = recording_store(PlanLimits::default());
    store.call(&four_steps()).unwrap();
    block(
        &store,
        &[
            ("s1", "blocked"),
            ("s2", "blocked"),
            ("s3", "blocked"),
            ("s4", "in_progress"),
        ],
    );
    assert!(
        store.take_blocked_streak(),
        "progress is counted first: the three blocks after it still make a streak"
    );
}
