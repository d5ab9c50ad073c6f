//! Secret redaction: nothing secret may reach a saved session, a log line or an event payload.
//!
//! A [`Redactor`] has two layers, applied in this order:
//!
//! 1. **Known values.** Secrets the process actually holds (the API key, the Telegram token,
//!    every environment value whose name looks secret) are registered with
//!    [`Redactor::add_secret`], together with the encodings an agent is likely to print them
//!    in: base64 (standard, standard without padding, URL-safe, URL-safe without padding),
//!    hex (lower and upper case), URL-query escaping and the reversed string. One pass of
//!    the SIMD "Teddy" searcher finds them all (an Aho-Corasick automaton past ~60 forms).
//! 2. **Patterns.** Regular expressions for well-known credential formats (provider API keys,
//!    private key blocks, JWTs, connection strings, `password = "…"` assignments, …). For the
//!    contextual forms only the value is replaced, so `api_key=[REDACTED]` stays readable.
//!
//! Every match becomes [`REDACTED`]. The expressions are compiled once per process. Most
//! start with a literal (`ghp_`, `AKIA`, `-----BEGIN`), which the regex engine finds with a
//! vectorised substring search, so clean text is skipped at memory speed; the few without
//! one have a hand-written prefilter or are cheap for the lazy DFA.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use regex::Regex;

/// What every secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Shortest secret value the known-value layer accepts: shorter values would shred ordinary
/// text, and real keys and tokens are far longer.
const MIN_SECRET_LEN: usize = 8;

/// Redacts secrets from text and JSON values. Cheap to clone; `Default` equals [`Redactor::new`].
#[derive(Clone, Default)]
pub struct Redactor {
    /// Every registered literal form (plain value and encodings), deduplicated.
    known_forms: BTreeSet<String>,
    /// Matcher over `known_forms`; `None` while nothing is registered.
    known_matcher: Option<KnownMatcher>,
}

impl fmt::Debug for Redactor {
    /// Never prints the registered values themselves.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("known_forms", &self.known_forms.len())
            .finish()
    }
}

impl Redactor {
    /// A redactor with the pattern layer only (no known values registered yet).
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a secret value and its common encodings. Surrounding whitespace is trimmed;
    /// values shorter than 8 bytes are ignored.
    pub fn add_secret(&mut self, value: &str) {
        if self.insert_forms(value) {
            self.rebuild_known_matcher();
        }
    }

    /// Registers the values of all variables whose name looks secret (see
    /// [`is_secret_env_name`]), e.g. `std::env::vars()`.
    pub fn add_secrets_from_env(&mut self, vars: impl IntoIterator<Item = (String, String)>) {
        let mut changed = false;
        for (name, value) in vars {
            if is_secret_env_name(&name) {
                changed |= self.insert_forms(&value);
            }
        }
        if changed {
            self.rebuild_known_matcher();
        }
    }

    /// Number of distinct literal forms registered (values times encodings, deduplicated).
    pub fn known_form_count(&self) -> usize {
        self.known_forms.len()
    }

    /// Replaces every secret in `text` with [`REDACTED`]: known values first, then patterns.
    /// Returns `Cow::Borrowed` when nothing matched, so clean text costs no allocation.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if text.is_empty() {
            return Cow::Borrowed(text);
        }
        let text = self.redact_known_values(text);
        redact_patterns(text)
    }

    /// Redacts every string inside `value` in place: object values and array items,
    /// recursively (object keys are left alone).
    pub fn redact_json(&self, value: &mut serde_json::Value) {
        // An explicit stack instead of recursion: a deeply nested value cannot overflow it.
        let mut pending = vec![value];
        while let Some(current) = pending.pop() {
            match current {
                serde_json::Value::String(text) => {
                    if let Cow::Owned(redacted) = self.redact(text) {
                        *text = redacted;
                    }
                }
                serde_json::Value::Array(items) => pending.extend(items.iter_mut()),
                serde_json::Value::Object(map) => pending.extend(map.values_mut()),
                _ => {}
            }
        }
    }

    /// Adds the value's forms to the set; true when anything new was added.
    fn insert_forms(&mut self, value: &str) -> bool {
        let value = value.trim();
        if value.len() < MIN_SECRET_LEN {
            return false;
        }
        let mut changed = false;
        for form in encoded_forms(value) {
            if form.len() >= MIN_SECRET_LEN {
                changed |= self.known_forms.insert(form);
            }
        }
        changed
    }

    fn rebuild_known_matcher(&mut self) {
        self.known_matcher = KnownMatcher::build(&self.known_forms);
    }

    fn redact_known_values<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let Some(matcher) = &self.known_matcher else {
            return Cow::Borrowed(text);
        };
        let mut output = String::new();
        let mut copied_up_to = 0;
        matcher.for_each_match(text, |found| {
            output.push_str(&text[copied_up_to..found.start]);
            output.push_str(REDACTED);
            copied_up_to = found.end;
        });
        if copied_up_to == 0 {
            return Cow::Borrowed(text);
        }
        output.push_str(&text[copied_up_to..]);
        Cow::Owned(output)
    }
}

/// Finds the registered forms, leftmost-longest.
#[derive(Clone)]
enum KnownMatcher {
    /// The SIMD "Teddy" searcher, for the usual few dozen forms: it skips clean text about
    /// forty times faster than the automaton below (which has no usable prefilter for
    /// forms that start with every kind of byte).
    Packed(aho_corasick::packed::Searcher),
    /// Any number of forms.
    Automaton(AhoCorasick),
}

impl KnownMatcher {
    fn build(forms: &BTreeSet<String>) -> Option<Self> {
        if forms.is_empty() {
            return None;
        }
        let packed = aho_corasick::packed::Config::new()
            .match_kind(aho_corasick::packed::MatchKind::LeftmostLongest)
            .builder()
            .extend(forms)
            .build();
        if let Some(searcher) = packed {
            return Some(KnownMatcher::Packed(searcher));
        }
        AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostLongest)
            .build(forms)
            .ok()
            .map(KnownMatcher::Automaton)
    }

    fn for_each_match(&self, text: &str, mut f: impl FnMut(std::ops::Range<usize>)) {
        match self {
            KnownMatcher::Packed(searcher) => {
                searcher.find_iter(text).for_each(|found| f(found.range()));
            }
            KnownMatcher::Automaton(automaton) => {
                automaton.find_iter(text).for_each(|found| f(found.range()));
            }
        }
    }
}

/// True when an environment variable name looks like it holds a secret: one of its `_`/`-`
/// separated segments is KEY, APIKEY, TOKEN, SECRET, PASSWORD, PASSWD, PASS, CREDENTIAL(S),
/// PRIVATEKEY, ACCESSKEY or SECRETKEY (case-insensitive), or the name with separators removed
/// ends in one of the long words (`OPENAIAPIKEY`, `MYTOKEN`). `MAX_TOKENS` and `MONKEY` do
/// not count.
pub fn is_secret_env_name(name: &str) -> bool {
    const SEGMENTS: &[&str] = &[
        "KEY",
        "APIKEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "PASS",
        "CREDENTIAL",
        "CREDENTIALS",
        "PRIVATEKEY",
        "ACCESSKEY",
        "SECRETKEY",
    ];
    const FUSED_SUFFIXES: &[&str] = &[
        "APIKEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "CREDENTIALS",
        "PRIVATEKEY",
        "ACCESSKEY",
        "SECRETKEY",
    ];
    let upper = name.to_ascii_uppercase();
    if upper
        .split(['_', '-'])
        .any(|segment| SEGMENTS.contains(&segment))
    {
        return true;
    }
    let fused: String = upper.chars().filter(|c| *c != '_' && *c != '-').collect();
    FUSED_SUFFIXES.iter().any(|word| fused.ends_with(word))
}

/// The plain value and every encoding the known-value layer looks for.
fn encoded_forms(value: &str) -> Vec<String> {
    let bytes = value.as_bytes();
    let hex_lower = hex_encode(bytes);
    let hex_upper = hex_lower.to_ascii_uppercase();
    vec![
        value.to_string(),
        STANDARD.encode(bytes),
        STANDARD_NO_PAD.encode(bytes),
        URL_SAFE.encode(bytes),
        URL_SAFE_NO_PAD.encode(bytes),
        hex_lower,
        hex_upper,
        query_escape(value),
        value.chars().rev().collect(),
    ]
}

fn hex_encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    out
}

/// URL query escaping as Go's `url.QueryEscape` does it: unreserved characters stay, a space
/// becomes `+`, every other byte becomes `%XX` (upper-case hex).
fn query_escape(value: &str) -> String {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(value.len() * 3);
    for &byte in value.as_bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(byte));
            }
            b' ' => out.push('+'),
            _ => {
                out.push('%');
                out.push(char::from(DIGITS[usize::from(byte >> 4)]));
                out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
            }
        }
    }
    out
}

/// One credential format.
struct PatternSpec {
    /// Short name, for test failure messages.
    #[cfg_attr(not(test), expect(dead_code, reason = "read by tests only"))]
    name: &'static str,
    /// The expression. When it has capture groups, only the first group that participates
    /// in a match is replaced (the key name around it stays visible); otherwise the whole
    /// match is. Groups that are not the secret must be non-capturing.
    regex: &'static str,
    /// A cheap test that is true whenever the text may contain a match. Patterns that start
    /// with a literal need none: the regex engine already skips to that literal with a
    /// vectorised search.
    prefilter: Option<fn(&str) -> bool>,
}

/// ASCII word boundary: the Unicode one would stop the fast DFA on non-ASCII text.
macro_rules! wb {
    () => {
        r"(?-u:\b)"
    };
}

/// The pattern table, most specific first (facts §6.4, plus the decisions in the module
/// documentation of each entry).
const PATTERN_SPECS: &[PatternSpec] = &[
    PatternSpec {
        name: "groq",
        regex: r"gsk_[A-Za-z0-9]{32,}",
        prefilter: None,
    },
    PatternSpec {
        name: "xai",
        regex: r"xai-[A-Za-z0-9_-]{32,}",
        prefilter: None,
    },
    PatternSpec {
        name: "huggingface",
        regex: r"hf_[A-Za-z0-9]{32,}",
        prefilter: None,
    },
    PatternSpec {
        name: "openai",
        regex: concat!(wb!(), r"sk-[A-Za-z0-9_-]{32,}"),
        prefilter: None,
    },
    PatternSpec {
        name: "github",
        regex: r"gh[pousr]_[A-Za-z0-9]{36,}",
        prefilter: None,
    },
    PatternSpec {
        name: "github_pat",
        regex: r"github_pat_[A-Za-z0-9_]{22,}",
        prefilter: None,
    },
    PatternSpec {
        name: "npm",
        regex: r"npm_[A-Za-z0-9]{36,}",
        prefilter: None,
    },
    PatternSpec {
        name: "gitlab",
        regex: r"glpat-[A-Za-z0-9_-]{20,}",
        prefilter: None,
    },
    PatternSpec {
        name: "pypi",
        regex: r"pypi-[A-Za-z0-9_-]{20,}",
        prefilter: None,
    },
    PatternSpec {
        name: "aws_access_key",
        regex: r"A[SK]IA[0-9A-Z]{16}",
        prefilter: None,
    },
    PatternSpec {
        name: "pem_private_key",
        regex: r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----(?s:.)*?-----END[A-Z0-9 ]*PRIVATE KEY-----",
        prefilter: None,
    },
    PatternSpec {
        name: "pgp_private_key",
        regex: r"-----BEGIN PGP PRIVATE KEY BLOCK-----(?s:.)*?-----END PGP PRIVATE KEY BLOCK-----",
        prefilter: None,
    },
    // A private key block whose END line never came (truncated output): the header, armor
    // headers and every following base64 line.
    PatternSpec {
        name: "truncated_private_key",
        regex: r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:\r?\n(?:[A-Za-z0-9+/=]{16,}|[A-Za-z-]+: [^\r\n]*|[ \t]*))*",
        prefilter: None,
    },
    PatternSpec {
        name: "jwt",
        regex: r"eyJ[A-Za-z0-9_-]{17,}\.[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}",
        prefilter: None,
    },
    // `api_key = "…"`, `"password": "…"`, `client-secret: …`: a quoted value of 8+ or an
    // unquoted one of 20+ characters; only the value is replaced.
    PatternSpec {
        name: "contextual_assignment",
        regex: r#"(?i)(?:api[_-]?key|api[_-]?secret|auth[_-]?token|access[_-]?token|bearer[_-]?token|client[_-]?secret|private[_-]?key|secret[_-]?key|password|passwd)["'`]?[ \t]*[:=][ \t]*(?:"([^"\r\n]{8,})"|'([^'\r\n]{8,})'|`([^`\r\n]{8,})`|([^\s"'`]\S{19,}))"#,
        prefilter: None,
    },
    PatternSpec {
        name: "authorization_header",
        regex: r"(?i)authorization[ \t]*:[ \t]*(?:bearer|basic|token)[ \t]+([A-Za-z0-9+/=._~-]{16,})",
        prefilter: None,
    },
    PatternSpec {
        name: "slack",
        regex: r"xox[abpose]-[A-Za-z0-9-]{20,}",
        prefilter: None,
    },
    PatternSpec {
        name: "slack_app",
        regex: r"xapp-[0-9]+-[A-Za-z0-9-]{20,}",
        prefilter: None,
    },
    PatternSpec {
        name: "azure_account_key",
        regex: r"(?i:AccountKey)=([A-Za-z0-9+/=]{40,})",
        prefilter: None,
    },
    PatternSpec {
        name: "stripe_webhook",
        regex: r"whsec_[A-Za-z0-9+/=]{24,}",
        prefilter: None,
    },
    PatternSpec {
        name: "stripe",
        regex: r"[rs]k_(?:live|test)_[A-Za-z0-9]{20,}",
        prefilter: None,
    },
    PatternSpec {
        name: "telegram_bot",
        regex: concat!(wb!(), r"[0-9]{5,}:[A-Za-z0-9_-]{30,}", wb!()),
        prefilter: Some(may_contain_telegram_token),
    },
    PatternSpec {
        name: "google_api_key",
        regex: r"AIza[0-9A-Za-z_-]{35,}",
        prefilter: None,
    },
    PatternSpec {
        name: "twilio",
        regex: concat!(wb!(), r"SK[0-9a-fA-F]{32}", wb!()),
        prefilter: None,
    },
    // `export GITHUB_TOKEN=…`, `DB_PASSWORD="…"`: upper-case names only, so ordinary code
    // like `token = next_token()` is left alone; only the value is replaced. The match
    // starts at the keyword (the rest of the name is not replaced anyway), which lets the
    // regex engine skip to the keyword literals.
    PatternSpec {
        name: "env_assignment",
        regex: r#"(?:API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)[A-Z0-9_]*[ \t]*=[ \t]*["'`]?([^\s"'`]{20,})"#,
        prefilter: None,
    },
    PatternSpec {
        name: "vault",
        regex: r"hv[sb]\.[A-Za-z0-9_-]{30,}",
        prefilter: None,
    },
    PatternSpec {
        name: "google_oauth_access",
        regex: r"ya29\.[A-Za-z0-9_.-]{20,}",
        prefilter: None,
    },
    PatternSpec {
        name: "google_oauth_refresh",
        regex: concat!(wb!(), r"1//0[A-Za-z0-9_-]{30,}"),
        prefilter: None,
    },
    PatternSpec {
        name: "sendgrid",
        regex: r"SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{30,}",
        prefilter: None,
    },
    PatternSpec {
        name: "discord_bot",
        regex: concat!(
            wb!(),
            r"[MNO][A-Za-z0-9_-]{22,27}\.[A-Za-z0-9_-]{5,7}\.[A-Za-z0-9_-]{27,40}",
            wb!()
        ),
        prefilter: None,
    },
    // `scheme://user:password@host`: only the password is replaced. Any scheme counts (the
    // original limited this to database schemes; credentials in an https or amqp URL are
    // just as secret). Passwords shorter than 6 are placeholders like `:x@`.
    PatternSpec {
        name: "url_credentials",
        regex: r"(?i)[a-z][a-z0-9+.-]*://[^:@/\s]*:([^@/\s]{6,})@",
        prefilter: None,
    },
];

/// The compiled pattern layer, built once per process.
struct CompiledPattern {
    regex: Regex,
    prefilter: Option<fn(&str) -> bool>,
}

static PATTERN_LAYER: LazyLock<Vec<CompiledPattern>> = LazyLock::new(build_pattern_layer);

fn build_pattern_layer() -> Vec<CompiledPattern> {
    // Every spec compiles (a unit test checks it); one that did not would be skipped rather
    // than take the process down.
    PATTERN_SPECS
        .iter()
        .filter_map(|spec| {
            let regex = Regex::new(spec.regex).ok()?;
            Some(CompiledPattern {
                regex,
                prefilter: spec.prefilter,
            })
        })
        .collect()
}

fn redact_patterns(text: Cow<'_, str>) -> Cow<'_, str> {
    let mut text = text;
    for pattern in PATTERN_LAYER.iter() {
        if pattern.prefilter.is_none_or(|may_match| may_match(&text)) {
            text = replace_secret_spans(&pattern.regex, text);
        }
    }
    text
}

/// A colon with at least 5 digits before it and 30 token characters after it: the shape of
/// a Telegram bot token. Colons are found with a vectorised search, so code full of `::`
/// costs little, where the regex alone would scan every byte.
fn may_contain_telegram_token(text: &str) -> bool {
    let bytes = text.as_bytes();
    text.match_indices(':').any(|(colon, _)| {
        let digits_before = colon >= 5 && bytes[colon - 5..colon].iter().all(u8::is_ascii_digit);
        let token_after = bytes.get(colon + 1..colon + 31).is_some_and(|after| {
            after
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-')
        });
        digits_before && token_after
    })
}

/// Replaces the secret span of every match of `regex` (see [`PatternSpec::regex`]).
fn replace_secret_spans<'a>(regex: &Regex, text: Cow<'a, str>) -> Cow<'a, str> {
    let mut output = String::new();
    let mut copied_up_to = 0;
    let mut changed = false;
    for captures in regex.captures_iter(&text) {
        let span = captures
            .iter()
            .skip(1)
            .flatten()
            .next()
            .or_else(|| captures.get(0));
        let Some(span) = span else {
            continue;
        };
        if span.as_str() == REDACTED {
            continue;
        }
        output.push_str(&text[copied_up_to..span.start()]);
        output.push_str(REDACTED);
        copied_up_to = span.end();
        changed = true;
    }
    if !changed {
        return text;
    }
    output.push_str(&text[copied_up_to..]);
    Cow::Owned(output)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redact(text: &str) -> String {
        Redactor::new().redact(text).into_owned()
    }

    fn assert_redacted(text: &str, secret: &str) {
        let out = redact(text);
        assert!(!out.contains(secret), "{secret:?} survived in {out:?}");
        assert!(out.contains(REDACTED), "nothing redacted in {out:?}");
    }

    fn assert_clean(text: &str) {
        let redactor = Redactor::new();
        let out = redactor.redact(text);
        assert!(
            matches!(out, Cow::Borrowed(_)),
            "{text:?} was changed to {out:?}"
        );
    }

    #[test]
    fn every_pattern_compiles() {
        for spec in PATTERN_SPECS {
            assert!(Regex::new(spec.regex).is_ok(), "{} fails", spec.name);
        }
        assert_eq!(PATTERN_LAYER.len(), PATTERN_SPECS.len());
    }

    #[test]
    fn provider_keys_are_redacted() {
        let cases = [
            "gsk_abcdefghijklmnopqrstuvwxyz0123456789",
            "xai-abcdefghijklmnopqrstuvwxyz0123456789AB",
            "hf_abcdefghijklmnopqrstuvwxyz0123456789",
            "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
            "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "gho_abcdefghijklmnopqrstuvwxyz0123456789",
            "ghs_abcdefghijklmnopqrstuvwxyz0123456789",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
            "npm_abcdefghijklmnopqrstuvwxyz0123456789",
            "glpat-abcdefghij0123456789",
            "pypi-AgEIcHlwaS5vcmcCJGFiY2Rl",
            "AKIAIOSFODNN7EXAMPLE",
            "ASIAIOSFODNN7EXAMPLE",
            "xoxb-1234567890-1234567890-abcdefghijklmnopqrstuvwx",
            "xapp-1-A0123456789-1234567890-abcdef0123456789abcdef",
            "whsec_abcdefghijklmnopqrstuvwxyz01",
            "sk_live_abcdefghijklmnopqrstuvwx",
            "rk_live_abcdefghijklmnopqrstuvwx",
            "sk_test_abcdefghijklmnopqrstuvwx",
            "123456789:AAHfakeTokenValueExample0123456789abc",
            "AIzaSyA-abcdefghijklmnopqrstuvwxyz012345",
            "SK0123456789abcdef0123456789abcdef",
            "hvs.CAESIabcdefghijklmnopqrstuvwxyz0123",
            "ya29.a0AfH6SMBabcdefghijklmnopqrstuvwxyz",
            "1//0abcdefghijklmnopqrstuvwxyz0123456789",
            "SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",
            "MTIzNDU2Nzg5MDEyMzQ1Njc4.GaBcDe.abcdefghijklmnopqrstuvwxyz0123456",
        ];
        for secret in cases {
            assert_redacted(&format!("value: {secret} end"), secret);
        }
    }

    #[test]
    fn look_alikes_are_left_alone() {
        let cases = [
            "gsk_short",
            "xai-short-value",
            "hf_tooshort",
            "task-notes-abcdefghijklmnopqrstuvwxyz0123456789",
            "risk-assessment-abcdefghijklmnopqrstuvwxyz",
            "ghp_short",
            "github_pat_short",
            "npm_install",
            "glpat-short",
            "pypi-short",
            "AKIA_NOT_A_KEY",
            "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkq\n-----END PUBLIC KEY-----",
            "eyJhbGciOi.short.token",
            "xoxb-short",
            "xapp-1-short",
            "AccountKey=short",
            "whsec_short",
            "sk_live_short",
            "12345:short",
            "AIzaShort",
            "SKIPPED the step",
            "hvs.short",
            "ya29.short",
            "1//0short",
            "SG.short.short",
            "Mshort.abc.def",
            "postgres://localhost:5432/db",
            "https://example.com/path",
        ];
        for text in cases {
            assert_clean(text);
        }
    }

    #[test]
    fn pem_blocks_are_redacted_whole() {
        let key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA0123456789abcdef\nProc-Type: 4,ENCRYPTED\nabcdefghijklmnopqrstuvwxyz012345\n-----END RSA PRIVATE KEY-----";
        let out = redact(&format!("before\n{key}\nafter"));
        assert_eq!(out, "before\n[REDACTED]\nafter");
        for kind in ["", "EC ", "OPENSSH ", "DSA ", "ED25519 ", "ENCRYPTED "] {
            let block = format!(
                "-----BEGIN {kind}PRIVATE KEY-----\nQUJDRA==\n-----END {kind}PRIVATE KEY-----"
            );
            assert_eq!(redact(&block), REDACTED, "{kind}");
        }
    }

    #[test]
    fn pgp_private_key_block_is_redacted() {
        let block = "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF0abcdefghijkl\n=abcd\n-----END PGP PRIVATE KEY BLOCK-----";
        assert_eq!(redact(block), REDACTED);
        assert_clean(
            "-----BEGIN PGP PUBLIC KEY BLOCK-----\nmQINBF\n-----END PGP PUBLIC KEY BLOCK-----",
        );
    }

    #[test]
    fn truncated_private_key_body_is_redacted() {
        let text = "$ cat id_rsa\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\nAAAAAAABAAABlwAAAAdzc2gtcn\n\n... [output truncated]";
        let out = redact(text);
        assert!(!out.contains("b3BlbnNzaC1rZXkt"), "{out}");
        assert!(out.starts_with("$ cat id_rsa\n[REDACTED]"), "{out}");
        assert!(out.ends_with("... [output truncated]"), "{out}");
    }

    #[test]
    fn code_mentioning_pem_headers_is_not_eaten() {
        let code = "if line == \"-----BEGIN RSA PRIVATE KEY-----\" {\n    return parse(rest);\n}";
        let out = redact(code);
        assert!(out.contains("return parse(rest);"), "{out}");
    }

    #[test]
    fn jwt_is_redacted() {
        let jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
        assert_redacted(&format!("token={jwt}"), jwt);
        assert_clean("eyJ.a.b and eyJhbGciOiJIUzI1NiJ9.e30.x");
    }

    #[test]
    fn contextual_assignments_keep_the_key_visible() {
        assert_eq!(
            redact("api_key=abcdefghijklmnopqrstuvwxyz"),
            "api_key=[REDACTED]"
        );
        assert_eq!(
            redact(r#"{"password": "hunter2hunter2"}"#),
            r#"{"password": "[REDACTED]"}"#
        );
        assert_eq!(
            redact("client-secret: 'abcdefghij'"),
            "client-secret: '[REDACTED]'"
        );
        assert_eq!(
            redact("ACCESS_TOKEN: abcdefghijklmnopqrstuvwxyz more"),
            "ACCESS_TOKEN: [REDACTED] more"
        );
        assert_eq!(
            redact("db_password = `correct horse battery`"),
            "db_password = `[REDACTED]`"
        );
    }

    #[test]
    fn contextual_assignments_ignore_code_and_short_values() {
        assert_clean("let password = get_pw();");
        assert_clean("password: String,");
        assert_clean("api_key = \"short\"");
        assert_clean("fn check_password(input: &str) -> bool");
    }

    #[test]
    fn telegram_prefilter_accepts_tokens_and_skips_code() {
        assert!(may_contain_telegram_token(
            "bot 123456789:AAHfakeTokenValueExample0123456789abc"
        ));
        assert!(!may_contain_telegram_token(
            "12:34:56 std::mem 1234:short 99999:"
        ));
    }

    #[test]
    fn already_redacted_text_stays_borrowed() {
        assert_clean(r#"{"password": "[REDACTED]"}"#);
        assert_clean("api_key=[REDACTED]");
    }

    #[test]
    fn authorization_header_keeps_the_scheme() {
        assert_eq!(
            redact("Authorization: Bearer abcdefghijklmnopqrstuvwxyz.0123"),
            "Authorization: Bearer [REDACTED]"
        );
        assert_eq!(
            redact("-H 'authorization: basic dXNlcjpwYXNzd29yZDEyMw=='"),
            "-H 'authorization: basic [REDACTED]'"
        );
        assert_clean("Authorization: Bearer $TOKEN");
        assert_clean("Authorization: Bearer <your token>");
    }

    #[test]
    fn azure_account_key_keeps_the_name() {
        let key = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ+/==";
        assert_eq!(
            redact(&format!("DefaultEndpointsProtocol=https;AccountKey={key};")),
            "DefaultEndpointsProtocol=https;AccountKey=[REDACTED];"
        );
    }

    #[test]
    fn env_style_assignments_redact_the_value() {
        assert_eq!(
            redact("export GITHUB_TOKEN=abcdefghijklmnopqrstuvwxyz"),
            "export GITHUB_TOKEN=[REDACTED]"
        );
        assert_eq!(
            redact("MY_SERVICE_SECRET=\"abcdefghijklmnopqrstuvwxyz\""),
            "MY_SERVICE_SECRET=\"[REDACTED]\""
        );
        assert_clean("MAX_TOKENS=4096");
        assert_clean("let token = self.next_token_from_the_lexer();");
    }

    #[test]
    fn url_credentials_redact_the_password_only() {
        assert_eq!(
            redact("DATABASE_URL_X postgres://app:s3cretpass@db.internal:5432/app"),
            "DATABASE_URL_X postgres://app:[REDACTED]@db.internal:5432/app"
        );
        for scheme in [
            "postgresql",
            "mysql",
            "mongodb+srv",
            "redis",
            "amqps",
            "mssql",
            "clickhouse",
        ] {
            let out = redact(&format!("{scheme}://user:longpassword@host/db"));
            assert_eq!(out, format!("{scheme}://user:[REDACTED]@host/db"));
        }
        assert_clean("mysql://user:x@host/db");
        assert_clean("ssh://git@github.com:22/org/repo.git");
    }

    #[test]
    fn registered_values_are_redacted_in_every_form() {
        let secret = "my-very-secret value/42";
        let mut redactor = Redactor::new();
        redactor.add_secret(secret);
        let bytes = secret.as_bytes();
        let forms = [
            secret.to_string(),
            STANDARD.encode(bytes),
            STANDARD_NO_PAD.encode(bytes),
            URL_SAFE.encode(bytes),
            URL_SAFE_NO_PAD.encode(bytes),
            hex_encode(bytes),
            hex_encode(bytes).to_ascii_uppercase(),
            "my-very-secret+value%2F42".to_string(),
            secret.chars().rev().collect(),
        ];
        for form in forms {
            let out = redactor.redact(&format!("output: {form}\n")).into_owned();
            assert_eq!(out, "output: [REDACTED]\n", "form {form:?}");
        }
    }

    #[test]
    fn many_registered_values_are_all_found() {
        // 40 values, 360 forms: more than the SIMD searcher takes, so the automaton serves.
        let values: Vec<String> = (0..40)
            .map(|i| format!("registered-value-{i:03}-xyz"))
            .collect();
        let mut redactor = Redactor::new();
        redactor.add_secrets_from_env(
            values
                .iter()
                .enumerate()
                .map(|(i, value)| (format!("SECRET_{i}"), value.clone())),
        );
        for value in &values {
            let hex = hex_encode(value.as_bytes());
            let out = redactor
                .redact(&format!("a {value} b {hex} c"))
                .into_owned();
            assert_eq!(out, "a [REDACTED] b [REDACTED] c");
        }
    }

    #[test]
    fn short_values_are_not_registered() {
        let mut redactor = Redactor::new();
        redactor.add_secret("short");
        redactor.add_secret("  1234567 \n");
        assert_eq!(redactor.known_form_count(), 0);
        assert_eq!(redactor.redact("short 1234567"), "short 1234567");
        redactor.add_secret(" 12345678\n");
        assert_eq!(redactor.redact("pin 12345678."), "pin [REDACTED].");
    }

    #[test]
    fn env_values_are_registered_by_name() {
        let mut redactor = Redactor::new();
        redactor.add_secrets_from_env([
            ("MY_API_TOKEN".to_string(), "tok-value-123456".to_string()),
            ("HOME".to_string(), "/home/someone".to_string()),
            ("MAX_TOKENS".to_string(), "4096000000".to_string()),
        ]);
        assert_eq!(
            redactor.redact("a tok-value-123456 b /home/someone 4096000000"),
            "a [REDACTED] b /home/someone 4096000000"
        );
    }

    #[test]
    fn secret_env_names() {
        for name in [
            "API_KEY",
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "aws-secret-access-key",
            "DB_PASSWORD",
            "MYSQL_PASSWD",
            "FTP_PASS",
            "GOOGLE_CREDENTIALS",
            "AZURE_CREDENTIAL",
            "SSH_PRIVATEKEY",
            "S3_ACCESSKEY",
            "S3_SECRETKEY",
            "OPENAIAPIKEY",
            "MYTOKEN",
            "APPSECRET",
            "ROOTPASSWORD",
            "GCPCREDENTIALS",
            "TOKEN",
        ] {
            assert!(is_secret_env_name(name), "{name}");
        }
        for name in [
            "HOME",
            "PATH",
            "MAX_TOKENS",
            "MONKEY",
            "KEYBOARD",
            "TOKENBUCKET",
            "GIT_AUTHOR_NAME",
            "COMPASS",
            "BYPASS",
            "PASSAGE_DIR",
        ] {
            assert!(!is_secret_env_name(name), "{name}");
        }
    }

    #[test]
    fn unicode_text_is_untouched() {
        let text = "héllo wörld — 日本語のテキスト 🚀 Ünïcödé ключ=значение";
        assert_clean(text);
        let mut redactor = Redactor::new();
        redactor.add_secret("日本語のテキスト");
        assert_eq!(
            redactor.redact(text),
            "héllo wörld — [REDACTED] 🚀 Ünïcödé ключ=значение"
        );
    }

    #[test]
    fn clean_text_is_borrowed() {
        let mut redactor = Redactor::new();
        redactor.add_secret("registered-secret-value");
        let text = "fn main() {\n    println!(\"hello\");\n}\n";
        assert!(matches!(redactor.redact(text), Cow::Borrowed(_)));
        assert!(matches!(redactor.redact(""), Cow::Borrowed(_)));
    }

    #[test]
    fn source_like_text_is_clean() {
        let snippet = "/// Handles request 7 (see https://example.com/docs/7).\n\
            pub fn handle_7(ctx: &mut Context, input: &str) -> Result<Output, Error> {\n\
            let value = ctx.lookup(\"key_7\").unwrap_or_default();\n\
            let password_hint = Some(\"Enter the password\");\n\
            tracing::debug!(target: \"odek::tools\", \"value={value} at 12:34:56\");\n\
            Ok(Output::new(value, MAX_TOKENS, \"Ünïcödé – 日本語\"))\n}\n";
        let mut redactor = Redactor::new();
        redactor.add_secret("registered-known-secret-value");
        assert!(matches!(redactor.redact(snippet), Cow::Borrowed(_)));
    }

    #[test]
    fn redact_json_walks_nested_values_but_not_keys() {
        let mut redactor = Redactor::new();
        redactor.add_secret("super-secret-value");
        let mut value = serde_json::json!({
            "super-secret-value": "key stays",
            "list": ["a", "super-secret-value", {"deep": ["x super-secret-value y"]}],
            "token": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "n": 5,
            "b": true,
            "nothing": null,
        });
        redactor.redact_json(&mut value);
        let expected = serde_json::json!({
            "super-secret-value": "key stays",
            "list": ["a", "[REDACTED]", {"deep": ["x [REDACTED] y"]}],
            "token": "[REDACTED]",
            "n": 5,
            "b": true,
            "nothing": null,
        });
        assert_eq!(value, expected);
    }

    #[test]
    fn debug_output_hides_values() {
        let mut redactor = Redactor::new();
        redactor.add_secret("super-secret-value");
        let printed = format!("{redactor:?}");
        assert!(!printed.contains("super-secret-value"));
    }

    proptest::proptest! {
        #[test]
        fn redaction_never_panics_and_removes_registered_values(
            prefix in "\\PC{0,40}", suffix in "\\PC{0,40}", secret in "[a-zA-Z0-9]{8,24}"
        ) {
            proptest::prop_assume!(secret != "REDACTED");
            let mut redactor = Redactor::new();
            redactor.add_secret(&secret);
            let out = redactor.redact(&format!("{prefix}{secret}{suffix}")).into_owned();
            proptest::prop_assert!(!out.contains(secret.as_str()));
        }
    }
}
