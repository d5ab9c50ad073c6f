//! The execution budgets held: the runtime's deadline, tokens, cost and tool calls; each
//! budget that runs out is reported and ends the run with [`RunError::Budget`].

use std::time::{Duration, Instant};

use super::error::RunError;
use super::observer::EngineEvent;
use super::parts::{Engine, RunState};

impl Engine {
    pub(super) fn deadline(&self, started: Instant) -> Option<Instant> {
        match self.settings.budgets.max_runtime_seconds {
            0 => None,
            secs => Some(started + Duration::from_secs(secs)),
        }
    }

    pub(super) fn check_runtime(
        &self,
        state: &RunState,
        deadline: Option<Instant>,
    ) -> Result<(), RunError> {
        match deadline {
            Some(d) if Instant::now() >= d => Err(self.runtime_exceeded(state)),
            _ => Ok(()),
        }
    }

    pub(super) fn runtime_exceeded(&self, state: &RunState) -> RunError {
        self.budget_exceeded(
            "runtime",
            state.started.elapsed().as_secs(),
            self.settings.budgets.max_runtime_seconds,
        )
    }

    /// What is left of `max_cost_usd` after what the run has spent (none: no cost budget, or
    /// the model's price is unknown).
    pub(super) fn cost_left(&self, state: &RunState) -> Option<crate::tools::CostLeft> {
        let b = &self.settings.budgets;
        let price = b.price.filter(|_| b.max_cost_usd > 0.0)?;
        Some(crate::tools::CostLeft {
            usd: (b.max_cost_usd - state.spent_usd).max(0.0),
            price,
        })
    }

    /// Adds a model call's tokens to the run, priced as the model that answered it (after a
    /// fallback, the fallback's own price).
    pub(super) fn charge(&self, state: &mut RunState, usage: &crate::llm::Usage) {
        let price = crate::llm::pricing::price_for(self.model.model_name(), &self.settings.pricing);
        state.charge(usage, price);
    }

    pub(super) fn check_token_budgets(&self, state: &RunState) -> Result<(), RunError> {
        let b = &self.settings.budgets;
        if b.price.is_some() && b.max_cost_usd > 0.0 {
            let spent = state.spent_usd;
            if spent > b.max_cost_usd {
                return Err(self.budget_exceeded(
                    "cost_microusd",
                    crate::llm::pricing::microdollars(spent),
                    crate::llm::pricing::microdollars(b.max_cost_usd),
                ));
            }
        }
        if b.max_input_tokens > 0 && state.usage.input_tokens > b.max_input_tokens {
            return Err(self.budget_exceeded(
                "input_tokens",
                state.usage.input_tokens,
                b.max_input_tokens,
            ));
        }
        if b.max_output_tokens > 0 && state.usage.output_tokens > b.max_output_tokens {
            return Err(self.budget_exceeded(
                "output_tokens",
                state.usage.output_tokens,
                b.max_output_tokens,
            ));
        }
        Ok(())
    }

    pub(super) fn check_tool_budget(&self, state: &RunState, batch: usize) -> Result<(), RunError> {
        let max = self.settings.budgets.max_tool_calls;
        let wanted = state.tool_calls + batch as u64;
        if max > 0 && wanted > max {
            return Err(self.budget_exceeded("tool_calls", wanted, max));
        }
        Ok(())
    }

    fn budget_exceeded(&self, limit: &'static str, observed: u64, max: u64) -> RunError {
        self.observer.on_event(&EngineEvent::BudgetExceeded {
            limit,
            observed,
            max,
        });
        RunError::Budget {
            limit,
            observed,
            max,
        }
    }
}
