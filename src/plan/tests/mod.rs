//! Tests of the plan module. Helpers shared by the test files live here.

mod extract;
mod fuzz_smoke;
mod parse_rejections;
mod properties;
mod render;
mod round_trip;
mod store;
mod validation;

use std::sync::{Arc, Mutex};

use super::{PlanEvent, PlanLimits, PlanState, PlanStep, PlanStore, StepStatus};

/// The nonce the tests wrap plan bodies with.
pub(super) const NONCE: &str = "0123456789abcdef";

pub(super) fn step(id: &str, status: StepStatus, title: &str, note: &str) -> PlanStep {
    PlanStep {
        id: id.to_owned(),
        title: title.to_owned(),
        status,
        note: note.to_owned(),
    }
}

pub(super) fn plan(version: u64, steps: Vec<PlanStep>) -> PlanState {
    PlanState { version, steps }
}

/// The seed's five-step example plan (v3, 1/5 done, 1 blocked).
pub(super) fn seed_example() -> PlanState {
    use StepStatus::*;
    plan(
        3,
        vec![
            step("s1", Done, "Scaffold command skeleton", ""),
            step("s2", InProgress, "Wire flag parsing", ""),
            step(
                "s3",
                Blocked,
                "Resolve schema mismatch",
                "provider rejects nested arrays",
            ),
            step("s4", Pending, "Add tests", ""),
            step("s5", Pending, "Update docs", ""),
        ],
    )
}

/// A store whose change callback records every event.
pub(super) fn recording_store(limits: PlanLimits) -> (PlanStore, Arc<Mutex<Vec<PlanEvent>>>) {
    let store = PlanStore::new(limits);
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    store.set_on_change(Box::new(move |event| sink.lock().unwrap().push(*event)));
    (store, events)
}

/// `create` arguments for `(id, title)` pairs.
pub(super) fn create_args(steps: &[(&str, &str)]) -> String {
    let steps: Vec<_> = steps
        .iter()
        .map(|(id, title)| serde_json::json!({ "id": id, "title": title }))
        .collect();
    serde_json::json!({ "verb": "create", "steps": steps }).to_string()
}

/// A store holding s1..s3 (s2 in progress, s3 with a note) at version 2, events cleared.
pub(super) fn busy_store() -> (PlanStore, Arc<Mutex<Vec<PlanEvent>>>) {
    let (store, events) = recording_store(PlanLimits::default());
    store
        .call(&create_args(&[
            ("s1", "one"),
            ("s2", "two"),
            ("s3", "three"),
        ]))
        .unwrap();
    store
        .call(r#"{"verb":"update","updates":[{"id":"s2","status":"in_progress"},{"id":"s3","note":"waiting"}]}"#)
        .unwrap();
    events.lock().unwrap().clear();
    (store, events)
}
