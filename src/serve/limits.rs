//! Per-client rate limits (`serve.rate_limits`): session reads and prompts, counted per IP
//! address with `governor`'s keyed limiters; a refusal is 429 with `Retry-After`.

use std::net::IpAddr;
use std::num::NonZeroU32;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use super::error::ApiError;
use crate::config::RateLimits;

/// The server's limiters.
pub struct Limiters {
    reads: DefaultKeyedRateLimiter<IpAddr>,
    prompts: DefaultKeyedRateLimiter<IpAddr>,
    clock: DefaultClock,
}

impl Limiters {
    /// Limiters allowing `rates` per minute and client, each with a burst of that size.
    pub fn new(rates: RateLimits) -> Self {
        let quota = |per_minute: u32| {
            Quota::per_minute(NonZeroU32::new(per_minute).unwrap_or(NonZeroU32::MIN))
        };
        Limiters {
            reads: RateLimiter::keyed(quota(rates.reads_per_minute)),
            prompts: RateLimiter::keyed(quota(rates.prompts_per_minute)),
            clock: DefaultClock::default(),
        }
    }

    /// One session read (list, detail, plan, export) by `ip`.
    pub fn read(&self, ip: IpAddr) -> Result<(), ApiError> {
        self.check(&self.reads, ip)
    }

    /// One prompt by `ip`.
    pub fn prompt(&self, ip: IpAddr) -> Result<(), ApiError> {
        self.check(&self.prompts, ip)
    }

    fn check(&self, limiter: &DefaultKeyedRateLimiter<IpAddr>, ip: IpAddr) -> Result<(), ApiError> {
        limiter.check_key(&ip).map_err(|not_until| {
            let wait = not_until.wait_time_from(self.clock.now());
            ApiError::too_many(wait.as_secs() + u64::from(wait.subsec_nanos() > 0))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_over_its_quota_is_told_when_to_retry_and_others_are_not_affected() {
        let limits = Limiters::new(RateLimits {
            reads_per_minute: 2,
            prompts_per_minute: 1,
        });
        let a: IpAddr = "127.0.0.1".parse().expect("ip");
        let b: IpAddr = "127.0.0.2".parse().expect("ip");
        assert!(limits.read(a).is_ok());
        assert!(limits.read(a).is_ok());
        let refused = limits.read(a).expect_err("third read in a minute");
        assert_eq!(refused.status, axum::http::StatusCode::TOO_MANY_REQUESTS);
        assert!(matches!(refused.retry_after, Some(1..=30)));
        assert!(limits.read(b).is_ok());
        assert!(limits.prompt(a).is_ok());
        assert!(limits.prompt(a).is_err());
    }
}
