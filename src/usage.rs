//! `odek usage` and `GET /api/usage`: token usage (with the share served from providers'
//! prompt caches) and plan telemetry, rolled up over the runs saved with the sessions.

use serde::Serialize;

use crate::session::{RunRecord, SessionError, SessionStore};

/// Seconds in a day.
const DAY: i64 = 86_400;

/// The roll-up: the body of `odek usage --json` and `GET /api/usage`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct UsageReport {
    /// The window in days (`None` = every saved run).
    pub since_days: Option<u64>,
    /// Sessions with figures in the window (a counted run, or the token totals of a
    /// session saved before run records existed).
    pub sessions: u64,
    /// Runs (turns) counted; sessions saved before run records existed add their token
    /// totals but no run.
    pub runs: u64,
    /// Prompt tokens (cached ones included).
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens served from the providers' prompt caches.
    pub cached_tokens: u64,
    /// Model calls of the loop.
    pub iterations: u64,
    /// Tool calls.
    pub tool_calls: u64,
    /// Plans created.
    pub plans_created: u64,
    /// Other version-bumping plan changes.
    pub plans_updated: u64,
    /// Transitions of a step to `blocked`.
    pub plans_blocked: u64,
    /// Times the blocked-step streak fired (`plan_blocked` events).
    pub blocked_streaks: u64,
    /// Runs that ended with a plan.
    pub runs_with_plan: u64,
    /// Steps done at the end of those runs.
    pub steps_done: u64,
    /// Steps in the plan at the end of those runs.
    pub steps_total: u64,
    /// Bytes of plan message sent to the model.
    pub plan_bytes: u64,
    /// What the runs with a known price cost, in millionths of a US dollar.
    pub cost_microusd: u64,
    /// Runs whose model had no known price (not in `cost_microusd`).
    pub unpriced_runs: u64,
    /// Session files that could not be read (named in the text output).
    pub unreadable_sessions: u64,
    /// The runs of each model that answered (a run saved before models were recorded
    /// counts for its session's model).
    pub by_model: std::collections::BTreeMap<String, ModelUsage>,
}

/// What the runs of one model took.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ModelUsage {
    /// Runs (turns) it answered.
    pub runs: u64,
    /// Prompt tokens (cached ones included).
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// What its runs with a known price cost, in millionths of a US dollar.
    pub cost_microusd: u64,
}

impl UsageReport {
    /// Adds one run.
    fn add(&mut self, r: &RunRecord) {
        self.runs += u64::from(r.iterations > 0);
        self.input_tokens += r.input_tokens;
        self.output_tokens += r.output_tokens;
        self.cached_tokens += r.cached_tokens;
        self.iterations += u64::from(r.iterations);
        self.tool_calls += r.tool_calls;
        self.plans_created += r.plans_created;
        self.plans_updated += r.plans_updated;
        self.plans_blocked += r.plans_blocked;
        self.blocked_streaks += r.blocked_streaks;
        self.runs_with_plan += u64::from(r.steps_total > 0);
        self.steps_done += r.steps_done;
        self.steps_total += r.steps_total;
        self.plan_bytes += r.plan_bytes;
        match r.cost_microusd {
            Some(cost) => self.cost_microusd += cost,
            None => self.unpriced_runs += u64::from(r.iterations > 0),
        }
        if let Some(model) = &r.model {
            let m = self.by_model.entry(model.clone()).or_default();
            m.runs += u64::from(r.iterations > 0);
            m.input_tokens += r.input_tokens;
            m.output_tokens += r.output_tokens;
            m.cost_microusd += r.cost_microusd.unwrap_or(0);
        }
    }

    /// Cached share of the prompt tokens, in percent.
    pub fn cached_percent(&self) -> f64 {
        if self.input_tokens == 0 {
            0.0
        } else {
            100.0 * self.cached_tokens as f64 / self.input_tokens as f64
        }
    }
}

/// Rolls up the runs of the last `since_days` days (`None` = all), as of `now` (Unix
/// seconds). Returns the report and the files that could not be read.
pub fn rollup(
    store: &SessionStore,
    since_days: Option<u64>,
    now: i64,
) -> Result<(UsageReport, Vec<String>), SessionError> {
    let since = since_days.map(|d| {
        let days = i64::try_from(d).unwrap_or(i64::MAX);
        now.saturating_sub(days.saturating_mul(DAY))
    });
    let found = store.run_records(since)?;
    let mut report = UsageReport {
        since_days,
        sessions: found.sessions.len() as u64,
        unreadable_sessions: found.problems.len() as u64,
        ..UsageReport::default()
    };
    for (_, runs) in &found.sessions {
        runs.iter().for_each(|r| report.add(r));
    }
    Ok((report, found.problems))
}

/// The report as text for `odek usage`.
pub fn render_text(r: &UsageReport) -> String {
    let window = match r.since_days {
        Some(1) => "the last day".to_string(),
        Some(d) => format!("the last {d} days"),
        None => "all saved sessions".to_string(),
    };
    let mut out = format!(
        "Usage over {window}: {} run(s) in {} session(s)\n",
        r.runs, r.sessions
    );
    out.push_str(&format!(
        "  tokens  {} in ({} cached, {:.1}%) · {} out\n",
        r.input_tokens,
        r.cached_tokens,
        r.cached_percent(),
        r.output_tokens
    ));
    out.push_str(&format!(
        "  loop    {} iterations · {} tool calls\n",
        r.iterations, r.tool_calls
    ));
    out.push_str(&format!(
        "  plans   {} created · {} updated · {} blocked ({} streaks) · {}/{} steps done in {} run(s) with a plan · {} plan bytes sent\n",
        r.plans_created,
        r.plans_updated,
        r.plans_blocked,
        r.blocked_streaks,
        r.steps_done,
        r.steps_total,
        r.runs_with_plan,
        r.plan_bytes
    ));
    if r.cost_microusd > 0 || r.runs > r.unpriced_runs {
        let priced = r.runs.saturating_sub(r.unpriced_runs);
        let dollars = crate::llm::pricing::dollars(r.cost_microusd as f64 / 1_000_000.0);
        out.push_str(&format!(
            "  cost    {dollars} over {priced} run(s) with a known price"
        ));
        if r.unpriced_runs > 0 {
            out.push_str(&format!(" ({} without one)", r.unpriced_runs));
        }
        out.push('\n');
    }
    for (model, m) in r.by_model.iter().filter(|_| r.by_model.len() > 1) {
        let dollars = crate::llm::pricing::dollars(m.cost_microusd as f64 / 1_000_000.0);
        out.push_str(&format!(
            "  model   {} · {} run(s) · {} in · {} out · {dollars}\n",
            crate::text::visible(model, false),
            m.runs,
            m.input_tokens,
            m.output_tokens
        ));
    }
    out
}
