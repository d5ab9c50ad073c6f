//! One `delegate_tasks` call's share of the parent's cost budget. What is left of
//! `limits.max_cost_usd` when the call starts is a pool: each child, as it starts, gets what
//! the pool has free — less what the children still running hold — divided by the tasks not
//! yet started, itself included; a child's task file carries that share as its own
//! `max_cost_usd`. A child that ends gives back what it did not spend, so later children get
//! more. Once the children that ended have spent the whole pool, the others are stopped and
//! the tasks not yet started never start.

use std::sync::{Mutex, PoisonError};

use tokio_util::sync::CancellationToken;

use crate::tools::CostLeft;

/// Below this many dollars a share is nothing: the task is not started.
const LEAST_SHARE_USD: f64 = 1e-6;

/// The pool of one call.
#[derive(Debug)]
pub(super) struct CostPool {
    left: CostLeft,
    state: Mutex<PoolState>,
    spent: CancellationToken,
}

#[derive(Debug)]
struct PoolState {
    /// What the children that ended spent.
    spent_usd: f64,
    /// The shares of the children still running.
    held_usd: f64,
    /// Tasks not yet started.
    unstarted: usize,
}

impl CostPool {
    /// The pool of a call of `tasks` tasks with `left` of the parent's budget.
    pub(super) fn new(left: CostLeft, tasks: usize) -> Self {
        CostPool {
            left,
            state: Mutex::new(PoolState {
                spent_usd: 0.0,
                held_usd: 0.0,
                unstarted: tasks,
            }),
            spent: CancellationToken::new(),
        }
    }

    /// The share of the next child to start, in dollars; `None` when nothing is left (the
    /// task is not started).
    pub(super) fn take_share(&self) -> Option<f64> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let free = self.left.usd - state.spent_usd - state.held_usd;
        let share = free / state.unstarted.max(1) as f64;
        state.unstarted = state.unstarted.saturating_sub(1);
        if share < LEAST_SHARE_USD || self.spent.is_cancelled() {
            return None;
        }
        state.held_usd += share;
        Some(share)
    }

    /// A child that held `share` ended having used `usage`: its cost counts, its share goes
    /// back; past the pool, every other child is stopped.
    pub(super) fn settle(&self, share: f64, usage: &crate::llm::Usage) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.held_usd = (state.held_usd - share).max(0.0);
        state.spent_usd += self.left.price.cost_usd(usage);
        if state.spent_usd >= self.left.usd {
            self.spent.cancel();
        }
    }

    /// Cancelled once the children that ended have spent the pool.
    pub(super) fn spent(&self) -> &CancellationToken {
        &self.spent
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Usage;
    use crate::llm::pricing::Price;

    /// $1 per thousand tokens, whatever kind.
    fn pool(usd: f64, tasks: usize) -> CostPool {
        let price = Price {
            input: 1000.0,
            cached_input: 1000.0,
            cache_write: 1000.0,
            output: 1000.0,
        };
        CostPool::new(CostLeft { usd, price }, tasks)
    }

    fn tokens(n: u64) -> Usage {
        Usage {
            input_tokens: n,
            ..Default::default()
        }
    }

    #[test]
    fn shares_divide_what_is_free_among_the_tasks_not_started_and_come_back_unspent() {
        let pool = pool(0.8, 4);
        let first = pool.take_share().expect("share");
        let second = pool.take_share().expect("share");
        assert!((first - 0.2).abs() < 1e-9 && (second - 0.2).abs() < 1e-9);
        // The first spent half its share: the rest goes to the two tasks left.
        pool.settle(first, &tokens(100));
        let third = pool.take_share().expect("share");
        assert!((third - 0.25).abs() < 1e-9, "{third}");
        assert!(!pool.spent().is_cancelled());
    }

    #[test]
    fn once_the_pool_is_spent_the_others_stop_and_no_task_starts() {
        let pool = pool(0.3, 3);
        let first = pool.take_share().expect("share");
        pool.settle(first, &tokens(300));
        assert!(pool.spent().is_cancelled());
        assert_eq!(pool.take_share(), None);
    }
}
