//! The server's event hub: every `odek.event/v1` line of every run goes into a ring of the
//! last [`RING_CAPACITY`] events (`GET /api/events`) and out to the live Server-Sent Events
//! streams (`GET /api/events/stream`). Browser-only frames (`answer_delta`,
//! `approval_requested`, `approval_resolved`) go to the live streams only. Every frame gets
//! the next id of one counter, so a reconnecting client resumes after the last id it saw.
//! Events are redacted by their writer and browser frames by the supervisor that makes them:
//! secrets never reach a stream unredacted.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use tokio::sync::broadcast;

use crate::events::EventSink;
use crate::runtime::supervisor::Frame as RunFrame;

/// Events the ring keeps.
pub const RING_CAPACITY: usize = 500;
/// Frames a slow stream may fall behind before it skips some.
const LIVE_CAPACITY: usize = 4096;

/// One frame: an event of the stream or a browser-only frame.
#[derive(Debug)]
pub struct Frame {
    /// Position in the hub's sequence (the SSE `id`).
    pub id: u64,
    /// Event type (the SSE `event`).
    pub kind: String,
    /// The run it belongs to.
    pub run_id: Option<String>,
    /// The session it belongs to.
    pub session_id: Option<String>,
    /// The JSON text (the SSE `data`).
    pub data: String,
}

impl Frame {
    /// True when the frame passes the `run_id` / `session_id` filters of a request.
    pub fn matches(&self, filter: &FrameFilter) -> bool {
        let same = |want: &Option<String>, have: &Option<String>| {
            want.as_ref().is_none_or(|w| have.as_ref() == Some(w))
        };
        same(&filter.run_id, &self.run_id) && same(&filter.session_id, &self.session_id)
    }
}

/// Which frames a reader wants.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct FrameFilter {
    /// Only this run's frames.
    pub run_id: Option<String>,
    /// Only this session's frames.
    pub session_id: Option<String>,
}

/// See the module docs.
pub struct Hub {
    ring: Mutex<Ring>,
    live: broadcast::Sender<Arc<Frame>>,
}

struct Ring {
    frames: VecDeque<Arc<Frame>>,
    last_id: u64,
}

impl Hub {
    /// An empty hub.
    pub fn new() -> Arc<Hub> {
        let (live, _) = broadcast::channel(LIVE_CAPACITY);
        Arc::new(Hub {
            ring: Mutex::new(Ring {
                frames: VecDeque::with_capacity(RING_CAPACITY),
                last_id: 0,
            }),
            live,
        })
    }

    /// Publishes one `odek.event/v1` line: kept in the ring and sent to the live streams.
    pub fn publish_event(&self, line: &str) {
        let parsed: Value = serde_json::from_str(line).unwrap_or(Value::Null);
        let text = |key: &str| parsed.get(key).and_then(Value::as_str).map(str::to_string);
        let kind = text("type").unwrap_or_else(|| "event".into());
        self.publish(
            kind,
            text("run_id"),
            text("session_id"),
            line.to_string(),
            true,
        );
    }

    /// Publishes a browser-only frame of the supervisor (never in the ring, never in
    /// `--events-jsonl`).
    pub fn publish_frame(&self, frame: &RunFrame) {
        let data = frame.event.data();
        self.publish(
            frame.event.kind().to_string(),
            Some(frame.run_id.clone()),
            Some(frame.session_id.clone()),
            data.to_string(),
            false,
        );
    }

    fn publish(
        &self,
        kind: String,
        run_id: Option<String>,
        session_id: Option<String>,
        data: String,
        keep: bool,
    ) {
        let mut ring = self.ring.lock().unwrap_or_else(PoisonError::into_inner);
        ring.last_id += 1;
        let frame = Arc::new(Frame {
            id: ring.last_id,
            kind,
            run_id,
            session_id,
            data,
        });
        if keep {
            if ring.frames.len() == RING_CAPACITY {
                ring.frames.pop_front();
            }
            ring.frames.push_back(frame.clone());
        }
        // Sent under the lock, so a new subscriber sees each frame exactly once: either in
        // its replay or live. No receiver is not an error.
        let _ = self.live.send(frame);
    }

    /// The newest `limit` events of the ring that pass `filter`, oldest first.
    pub fn recent(&self, filter: &FrameFilter, limit: usize) -> Vec<Arc<Frame>> {
        let ring = self.ring.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out: Vec<Arc<Frame>> = ring
            .frames
            .iter()
            .rev()
            .filter(|f| f.matches(filter))
            .take(limit)
            .cloned()
            .collect();
        out.reverse();
        out
    }

    /// A live subscription, with the ring's events after `last_id` (oldest first) to replay
    /// before it. Nothing published meanwhile is lost or seen twice.
    pub fn subscribe(
        &self,
        last_id: Option<u64>,
    ) -> (Vec<Arc<Frame>>, broadcast::Receiver<Arc<Frame>>) {
        let ring = self.ring.lock().unwrap_or_else(PoisonError::into_inner);
        let receiver = self.live.subscribe();
        let replay = match last_id {
            Some(last) => ring
                .frames
                .iter()
                .filter(|f| f.id > last)
                .cloned()
                .collect(),
            None => Vec::new(),
        };
        (replay, receiver)
    }
}

/// The event writer's sink: every line goes to the hub, and to a JSONL file when the
/// server was started with `--events-jsonl`.
pub struct HubSink {
    /// The hub.
    pub hub: Arc<Hub>,
    /// Also written here.
    pub also: Option<Box<dyn EventSink>>,
}

impl EventSink for HubSink {
    fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        self.hub.publish_event(line);
        match &mut self.also {
            Some(sink) => sink.write_line(line),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(run: &str, text: &str) -> RunFrame {
        RunFrame {
            run_id: run.into(),
            session_id: "s".into(),
            event: crate::protocol::Event::AnswerDelta(crate::protocol::AnswerDelta {
                run_id: run.into(),
                text: text.into(),
                restart: false,
            }),
        }
    }

    fn event(kind: &str, run: &str) -> String {
        serde_json::json!({"schema": "odek.event/v1", "type": kind, "run_id": run, "session_id": "s"})
            .to_string()
    }

    #[test]
    fn the_ring_keeps_the_newest_events_and_replays_after_an_id() {
        let hub = Hub::new();
        for i in 0..(RING_CAPACITY + 10) {
            hub.publish_event(&event("iteration_completed", &format!("r{i}")));
        }
        hub.publish_frame(&delta("r1", "x"));
        let all = hub.recent(&FrameFilter::default(), 1000);
        assert_eq!(all.len(), RING_CAPACITY);
        assert_eq!(all[0].id, 11);
        assert!(all.iter().all(|f| f.kind == "iteration_completed"));
        let (replay, _rx) = hub.subscribe(Some(505));
        let ids: Vec<u64> = replay.iter().map(|f| f.id).collect();
        assert_eq!(ids, vec![506, 507, 508, 509, 510]);
        let one = FrameFilter {
            run_id: Some("r509".into()),
            session_id: None,
        };
        assert_eq!(hub.recent(&one, 10).len(), 1);
    }

    #[tokio::test]
    async fn a_subscriber_gets_browser_frames_live_with_the_next_id() {
        let hub = Hub::new();
        hub.publish_event(&event("run_started", "r"));
        let (replay, mut rx) = hub.subscribe(Some(0));
        assert_eq!(replay.len(), 1);
        hub.publish_frame(&delta("r", "hi"));
        let frame = rx.recv().await.expect("live frame");
        assert_eq!((frame.id, frame.kind.as_str()), (2, "answer_delta"));
        assert_eq!(frame.run_id.as_deref(), Some("r"));
    }
}
