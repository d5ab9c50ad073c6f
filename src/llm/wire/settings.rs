//! What the client adds to every request of a format: the model, the sampling settings and
//! how much the model thinks (mapped onto each format by its encoder).

/// What the client adds to every request of a format: the model and the sampling settings.
pub(crate) struct WireSettings<'a> {
    /// The model name.
    pub model: &'a str,
    /// Sampling temperature (`None` = the server's default).
    pub temperature: Option<f64>,
    /// How much the model thinks.
    pub thinking: Option<ThinkingMode>,
}

/// How much a model thinks before answering, mapped onto each format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThinkingMode {
    /// Chat: `thinking: {type: enabled, budget_tokens: 5000}`, temperature forced to 1;
    /// Anthropic: a budget of 5,000 tokens.
    Enabled,
    /// Chat: `thinking: {type: disabled}`; Anthropic: no thinking.
    Disabled,
    /// Chat: `reasoning_effort: low`; Anthropic: a budget of 2,048 tokens.
    Low,
    /// Chat: `reasoning_effort: medium`; Anthropic: a budget of 8,192 tokens.
    Medium,
    /// Chat: `reasoning_effort: high`; Anthropic: a budget of 24,576 tokens.
    High,
}

impl ThinkingMode {
    /// Parses a configured mode (case-insensitive); `None` for anything unknown.
    pub fn parse(text: &str) -> Option<ThinkingMode> {
        match text.trim().to_ascii_lowercase().as_str() {
            "enabled" => Some(ThinkingMode::Enabled),
            "disabled" => Some(ThinkingMode::Disabled),
            "low" => Some(ThinkingMode::Low),
            "medium" => Some(ThinkingMode::Medium),
            "high" => Some(ThinkingMode::High),
            _ => None,
        }
    }

    /// The thinking budget in tokens of a budgeted format; `None` for no thinking.
    pub(crate) fn budget_tokens(self) -> Option<u32> {
        match self {
            ThinkingMode::Enabled => Some(5_000),
            ThinkingMode::Disabled => None,
            ThinkingMode::Low => Some(2_048),
            ThinkingMode::Medium => Some(8_192),
            ThinkingMode::High => Some(24_576),
        }
    }
}
