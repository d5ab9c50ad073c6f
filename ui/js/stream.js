// The live event stream (`GET /api/events/stream`, Server-Sent Events). EventSource
// reconnects by itself and sends Last-Event-ID, so no event is missed across a drop.

export const EVENT_TYPES = Object.freeze([
  'run_started', 'iteration_completed', 'tool_call_started', 'tool_call_completed',
  'tool_call_failed', 'session_saved', 'context_trimmed', 'budget_exceeded',
  'plan_created', 'plan_updated', 'plan_blocked', 'subagent_started', 'subagent_finished',
  'checkpoint', 'rewound', 'hook', 'background_finished', 'model_fallback', 'user_steer',
  'compaction_started', 'compacted',
  'run_completed', 'run_failed',
  'answer_delta', 'approval_requested', 'approval_resolved', 'clarify_requested',
  'clarify_resolved',
]);

/** Opens the stream and calls `onFrame(type, payload)` for every frame. */
export function openStream(onFrame, onState = () => {}) {
  const source = new EventSource('/api/events/stream');
  for (const type of EVENT_TYPES) {
    source.addEventListener(type, (e) => {
      let payload;
      try {
        payload = JSON.parse(e.data);
      } catch {
        return;
      }
      onFrame(type, payload);
    });
  }
  source.addEventListener('open', () => onState('live'));
  source.addEventListener('error', () => onState(source.readyState === 2 ? 'closed' : 'reconnecting'));
  return source;
}
