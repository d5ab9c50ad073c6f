//! What tokens cost: prices per million tokens by model-name prefix, built in for the
//! built-in providers' current models (dated in `docs/PROVIDERS.md`) and overridable by
//! `pricing` in the global file. A model with no price has no cost: odek never guesses one.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Usage;

/// The date the built-in prices were taken from the providers' price lists.
pub const PRICES_DATED: &str = "2026-12-01";

/// US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Input tokens not served from a cache.
    pub input: f64,
    /// Input tokens read from the provider's cache.
    pub cached_input: f64,
    /// Input tokens written to the provider's cache (Anthropic bills them apart).
    #[serde(default)]
    pub cache_write: f64,
    /// Output tokens (thinking included).
    pub output: f64,
}

const fn price(input: f64, cached_input: f64, cache_write: f64, output: f64) -> Price {
    Price {
        input,
        cached_input,
        cache_write,
        output,
    }
}

/// Built-in prices by model prefix (the longest matching prefix wins).
pub const BUILT_IN_PRICES: &[(&str, Price)] = &[
    ("claude-opus-4-5", price(5.0, 0.5, 6.25, 25.0)),
    ("claude-opus-4", price(15.0, 1.5, 18.75, 75.0)),
    ("claude-sonnet-4", price(3.0, 0.3, 3.75, 15.0)),
    ("claude-haiku-4-5", price(1.0, 0.1, 1.25, 5.0)),
    ("claude-3-5-haiku", price(0.8, 0.08, 1.0, 4.0)),
    ("gpt-5-mini", price(0.25, 0.025, 0.0, 2.0)),
    ("gpt-5-nano", price(0.05, 0.005, 0.0, 0.4)),
    ("gpt-5", price(1.25, 0.125, 0.0, 10.0)),
    ("deepseek-chat", price(0.28, 0.028, 0.28, 0.42)),
    ("deepseek-reasoner", price(0.28, 0.028, 0.28, 0.42)),
    ("gemini-2.5-flash", price(0.3, 0.03, 0.3, 2.5)),
    ("gemini-2.5-pro", price(1.25, 0.125, 1.25, 10.0)),
];

/// The price of `model`: the longest prefix of `custom` (the global file's `pricing`), else
/// of the built-in table; `None` when neither knows it.
pub fn price_for(model: &str, custom: &BTreeMap<String, Price>) -> Option<Price> {
    let longest = |entries: &mut dyn Iterator<Item = (&str, Price)>| {
        entries
            .filter(|(prefix, _)| !prefix.is_empty() && model.starts_with(prefix))
            .max_by_key(|(prefix, _)| prefix.len())
            .map(|(_, p)| p)
    };
    longest(&mut custom.iter().map(|(k, p)| (k.as_str(), *p)))
        .or_else(|| longest(&mut BUILT_IN_PRICES.iter().copied()))
}

impl Price {
    /// What `usage` costs, in US dollars.
    pub fn cost_usd(&self, usage: &Usage) -> f64 {
        let cached = usage.cache_read_tokens;
        let written = usage.cache_write_tokens;
        let fresh = usage.input_tokens.saturating_sub(cached + written);
        let per_million = fresh as f64 * self.input
            + cached as f64 * self.cached_input
            + written as f64 * self.cache_write
            + usage.output_tokens as f64 * self.output;
        per_million / 1_000_000.0
    }
}

/// Dollars in millionths (how budgets, `odek usage` and Telegram's day count them).
pub fn microdollars(usd: f64) -> u64 {
    (usd * 1_000_000.0).round() as u64
}

/// A dollar amount as odek prints it: 4 decimals under a dollar, 2 from a dollar up.
pub fn dollars(amount: f64) -> String {
    if amount < 1.0 {
        format!("${amount:.4}")
    } else {
        format!("${amount:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_prefix_wins_and_custom_prices_come_first() {
        let none = BTreeMap::new();
        assert_eq!(
            price_for("claude-opus-4-5-20251101", &none).map(|p| p.input),
            Some(5.0)
        );
        assert_eq!(
            price_for("claude-opus-4-1", &none).map(|p| p.input),
            Some(15.0)
        );
        assert_eq!(price_for("deepseek-v4-flash", &none), None, "never a guess");
        let mut custom = BTreeMap::new();
        custom.insert("deepseek-v4".to_string(), price(0.1, 0.01, 0.1, 0.2));
        assert_eq!(
            price_for("deepseek-v4-flash", &custom).map(|p| p.output),
            Some(0.2)
        );
    }

    #[test]
    fn cached_and_written_input_are_priced_apart() {
        let p = price(3.0, 0.3, 3.75, 15.0);
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cache_read_tokens: 500_000,
            cache_write_tokens: 100_000,
            reasoning_tokens: 50_000,
        };
        // 400k fresh × 3 + 500k × 0.3 + 100k × 3.75 + 100k × 15, per million.
        let expected = 1.2 + 0.15 + 0.375 + 1.5;
        assert!((p.cost_usd(&usage) - expected).abs() < 1e-9);
        assert_eq!(dollars(0.00123), "$0.0012");
        assert_eq!(dollars(3.2251), "$3.23");
    }
}
