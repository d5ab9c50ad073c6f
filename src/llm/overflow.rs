//! Recognising "the request does not fit the context window" in the words of the servers
//! people run, and reading the sizes the server names.
//!
//! Each server words the overflow its own way, and gateways wrap the provider's words in
//! theirs. The error's `type`/`code` decides where one is given; its message otherwise — only
//! the message fields (`error.message`, `message`, `detail`, a string `error`), never the
//! whole body, since a validation error may echo the request back; a gateway that re-wraps
//! the provider's JSON error as a string is read inside. The tests hold one sample per
//! server, written in its documented shape.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

/// A context overflow, as the server reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overflow {
    /// Whose wording matched (`llama.cpp`, `LiteLLM`…).
    pub server: &'static str,
    /// The words (a type/code or a phrase) that matched.
    pub words: &'static str,
    /// The context the server has, in tokens, when it said.
    pub limit: Option<u64>,
    /// The tokens the request needed, when it said.
    pub requested: Option<u64>,
}

impl std::fmt::Display for Overflow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} wording \"{}\"", self.server, self.words)?;
        match (self.requested, self.limit) {
            (Some(r), Some(l)) => write!(f, ": {r} tokens sent, {l} available"),
            (None, Some(l)) => write!(f, ": {l} tokens available"),
            (Some(r), None) => write!(f, ": {r} tokens sent"),
            (None, None) => Ok(()),
        }
    }
}

/// One server's way of saying it: error types/codes, then phrases of the message (both
/// matched lowercased). `specific` wordings are trusted on a 5xx too (Ollama answers some
/// overflows with a 500); the generic phrases only on a 4xx.
struct Wording {
    server: &'static str,
    codes: &'static [&'static str],
    phrases: &'static [&'static str],
    specific: bool,
}

/// Most specific first: a gateway's wrapper before the provider words inside it.
const WORDINGS: &[Wording] = &[
    Wording {
        server: "LiteLLM",
        codes: &["contextwindowexceedederror"],
        phrases: &["contextwindowexceedederror"],
        specific: true,
    },
    Wording {
        server: "llama.cpp",
        codes: &["exceed_context_size_error"],
        phrases: &[
            "exceeds the available context size",
            "the request exceeds the available context",
        ],
        specific: true,
    },
    Wording {
        server: "OpenRouter",
        codes: &[],
        phrases: &["endpoint's maximum context length"],
        specific: true,
    },
    Wording {
        server: "Mistral",
        codes: &[],
        phrases: &["too large for model with"],
        specific: true,
    },
    // With truncation off (`truncate: false`, and its embeddings); by default Ollama's chat
    // cuts the prompt to its `num_ctx` without a word.
    Wording {
        server: "Ollama",
        codes: &[],
        phrases: &["input length exceeds the context length"],
        specific: true,
    },
    // Anthropic's Messages API (and gateways that pass its error on): an
    // `invalid_request_error` whose message says the prompt is too long.
    Wording {
        server: "Anthropic",
        codes: &[],
        phrases: &["prompt is too long"],
        specific: false,
    },
    Wording {
        server: "OpenAI-style (OpenAI, vLLM, DeepSeek)",
        codes: &["context_length_exceeded"],
        phrases: &["maximum context length"],
        specific: false,
    },
    // The Go original's list, for every other server that says it plainly.
    Wording {
        server: "generic",
        codes: &[],
        phrases: &[
            "context length",
            "token limit",
            "context window",
            "max_input_tokens",
            "input length",
            "too many tokens",
            "input is too long",
            "reduce the length",
        ],
        specific: false,
    },
];

/// The overflow a failed request's status and body report, if they report one.
pub fn recognise(status: u16, body: &str) -> Option<Overflow> {
    // A 429 is a rate or quota limit, whatever its words ("tokens per minute").
    let client_error = (400..500).contains(&status) && status != 429;
    if !client_error && !(500..600).contains(&status) {
        return None;
    }
    let error = ErrorParts::of(body);
    let (server, words) = WORDINGS
        .iter()
        .filter(|w| client_error || w.specific)
        .find_map(|w| matched_words(w, &error).map(|words| (w.server, words)))?;
    Some(Overflow {
        server,
        words,
        limit: error
            .n_ctx
            .or_else(|| first_number(&LIMIT_PATTERNS, &error.text)),
        requested: error
            .n_prompt_tokens
            .or_else(|| first_number(&REQUESTED_PATTERNS, &error.text)),
    })
}

fn matched_words(w: &Wording, error: &ErrorParts) -> Option<&'static str> {
    let code = w.codes.iter().find(|c| error.codes.iter().any(|x| x == *c));
    code.or_else(|| w.phrases.iter().find(|p| error.text.contains(*p)))
        .copied()
}

/// What an error body says, lowercased: its message texts, its `type`/`code` strings, and
/// llama.cpp's counts.
#[derive(Default)]
struct ErrorParts {
    text: String,
    codes: Vec<String>,
    n_ctx: Option<u64>,
    n_prompt_tokens: Option<u64>,
}

/// How deep a gateway may have re-wrapped an error as a JSON string.
const MAX_REWRAPS: u32 = 3;

impl ErrorParts {
    fn of(body: &str) -> ErrorParts {
        let mut parts = ErrorParts::default();
        match serde_json::from_str::<Value>(body) {
            Ok(json) => parts.read(&json, MAX_REWRAPS),
            Err(_) => parts.text = body.to_lowercase(),
        }
        parts
    }

    fn read(&mut self, json: &Value, depth: u32) {
        let error = json.get("error");
        for place in [error, Some(json)].into_iter().flatten() {
            for key in ["type", "code"] {
                if let Some(code) = place.get(key).and_then(Value::as_str) {
                    self.codes.push(code.to_lowercase());
                }
            }
        }
        if let Some(e) = error {
            self.n_ctx = self.n_ctx.or_else(|| positive(e.get("n_ctx")));
            self.n_prompt_tokens = self
                .n_prompt_tokens
                .or_else(|| positive(e.get("n_prompt_tokens")));
        }
        let texts = [
            error.and_then(|e| e.get("message")),
            error,
            json.get("message"),
            json.get("detail"),
        ];
        for text in texts.into_iter().flatten().filter_map(Value::as_str) {
            match serde_json::from_str::<Value>(text) {
                Ok(inner) if depth > 0 && inner.is_object() => self.read(&inner, depth - 1),
                _ => {
                    self.text.push_str(&text.to_lowercase());
                    self.text.push('\n');
                }
            }
        }
    }
}

fn positive(value: Option<&Value>) -> Option<u64> {
    value?.as_u64().filter(|n| *n > 0)
}

/// Where the servers put the context size in their messages (lowercased text).
static LIMIT_PATTERNS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    compile(&[
        r"available context size \(([\d,]+) tokens\)",
        r"maximum context length is ([\d,]+)",
        r"too large for model with ([\d,]+) maximum context length",
        r"tokens > ([\d,]+) maximum",
        r"context length of ([\d,]+)",
    ])
});

/// Where they put the size of the request: the prompt's share first where the figure given
/// includes the answer's room (vLLM, DeepSeek, OpenRouter), which trimming cannot reduce.
static REQUESTED_PATTERNS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    compile(&[
        r"\(([\d,]+) in the messages",
        r"\(([\d,]+) of text input",
        r"request \(([\d,]+) tokens\)",
        r"resulted in ([\d,]+) tokens",
        r"you requested (?:about )?([\d,]+) tokens",
        r"your request has ([\d,]+) input tokens",
        r"prompt contains ([\d,]+) tokens",
        r"prompt is too long: ([\d,]+) tokens",
    ])
});

/// The patterns that compile (all of them: a test checks).
fn compile(patterns: &[&str]) -> Vec<Regex> {
    patterns.iter().filter_map(|p| Regex::new(p).ok()).collect()
}

fn first_number(patterns: &[Regex], text: &str) -> Option<u64> {
    patterns.iter().find_map(|re| {
        let digits: String = re
            .captures(text)?
            .get(1)?
            .as_str()
            .chars()
            .filter(char::is_ascii_digit)
            .collect();
        digits.parse().ok().filter(|n| *n > 0)
    })
}

#[cfg(test)]
mod tests;
