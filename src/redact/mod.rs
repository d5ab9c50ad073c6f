//! Secret redaction: nothing secret may reach a saved session, a log line, an event payload
//! or (for tool results) the model.
//!
//! A [`Redactor`] has two layers, applied in this order:
//!
//! 1. **Known values.** Secrets the process actually holds (the API key, the Telegram token,
//!    every environment value whose name looks secret) are registered with
//!    [`Redactor::add_secret`], together with the encodings an agent is likely to print them
//!    in: base64 (standard, standard without padding, URL-safe, URL-safe without padding,
//!    and the part of each that is the value's alone at all three alignments, so the value
//!    is found inside a longer encoded text), base32 (`base32` and `basenc --base32hex`,
//!    padded, and the value's part at all five alignments; `base32.rs`), hex
//!    (lower and upper case; with separators or line breaks too, see `hex.rs`), URL-query
//!    escaping, every byte percent-encoded and the reversed string. One pass of the SIMD
//!    "Teddy" searcher per 64 forms finds them all. Encoded
//!    text wrapped into lines (`base64` and `base32` print 76 characters a line) is joined
//!    block by block and searched again (`wrapped.rs`).
//! 2. **Patterns.** Rules for credential formats (`patterns.rs`): provider keys and tokens
//!    with a recognisable prefix (`ghp_`, `AKIA`, `dop_v1_`, `shpat_`, …), private key
//!    blocks, JWTs, webhook URLs, credentials in URLs, headers and `curl` commands,
//!    Kubernetes `Secret` data, `password = …` and `api_key: …` assignments, and a vendor's
//!    name followed by a value of that vendor's shape (`DATADOG_API_KEY=…`). Coverage is
//!    measured against the default rules of gitleaks at commit
//!    `009e025ad4106ab333aa0b9dc4f2a884390d134c` (`config/gitleaks.toml`, 218 rules): every
//!    rule there has a rule here except `generic-api-key`, which relies on entropy alone,
//!    and `pkcs12-file`, which matches file names. The expressions and checks are our own,
//!    written from the formats; a unit test holds the coverage list to the pinned rule ids
//!    and gives every format a sample.
//!
//! **Keywords.** With 163 rules, running every expression over every text would cost far
//! more than the old 30. Each rule names keywords (lower-case ASCII, like gitleaks'), one of
//! which occurs in any text the rule can match: a token's prefix, a vendor's name, the key
//! word of an assignment. One ASCII case-insensitive Aho-Corasick pass over all keywords
//! (overlapping, so `api_key` inside `dd_api_key` still counts) decides which rules can match,
//! and only those run; a rule's expression is compiled the first time it runs. The three rules
//! without a usable keyword (Discord bot tokens, Twilio `SK…`, Vault's legacy `s.…`) are
//! expressions the regex engine searches cheaply (a literal it skips to, or a DFA that fails
//! fast). Assignment and vendor rules, whose matches start at a keyword and end on its
//! line, search only the rest of each line from their keyword's first occurrence on it.
//! Rules whose matches need a closer look have a check (and the password rule a cheap
//! screen that runs before capture groups are computed). Clean text costs one
//! keyword pass plus the rules its words wake; see `docs/PERFORMANCE.md`.
//!
//! **Replacement.** Every rule runs on the same text and reports byte ranges; overlapping
//! ranges are merged and each becomes [`REDACTED`] in one copy of the text. Contextual rules
//! (`password=…`, `aws_secret_access_key = …`, `Authorization: Bearer …`, webhook URLs)
//! replace only the value, so `password=[REDACTED]` stays readable.
//!
//! **Passwords.** Values of password-like keys are redacted however short
//! (`password=hunter2hunter`, `password: "s3cr3t!"`), but not what is evidently not a
//! password: keys about a password (`password_hint`, `passwordFile`), code
//! (`password = get_password()`, `password: String`, `self.password`), references and
//! templates (`${DB_PASSWORD}`, `<your-password>`, `%(pw)s`), placeholders (`xxx`,
//! `changeme`, `***`) and values under 4 characters. An unquoted plain word counts only in
//! the dotenv form `DB_PASSWORD=supersecret`. The exact rules are on `password_value`.
//!
//! Every match becomes [`REDACTED`]. ASCII word boundaries (`(?-u:\b)`) are used where a
//! boundary is needed: the Unicode one would stop the fast DFA on non-ASCII text.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fmt;
use std::ops::Range;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};

mod base32;
mod engine;
mod hex;
mod patterns;
mod stream;
#[cfg(test)]
mod tests;
mod wrapped;

pub use patterns::REDACTED;
pub use stream::StreamRedactor;

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
    /// The registered values themselves (trimmed).
    known_values: BTreeSet<String>,
    /// Their hex written with separators or line breaks; `None` while nothing is registered.
    separated_hex: Option<hex::SeparatedHex>,
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
        engine::redact_patterns(text)
    }

    /// True when `text` holds a secret this process knows (a registered value, in any of its
    /// encodings); credential patterns are not looked for. For opaque text that must be kept
    /// whole or not at all (a provider's signed thinking).
    pub fn holds_known_secret(&self, text: &str) -> bool {
        !self.known_spans(text).is_empty()
    }

    /// The byte ranges of every secret in `text`, in the text as given: known values and
    /// pattern matches, sorted and merged (overlapping or touching ranges become one). The
    /// streaming redactor needs positions in the original text to know where a secret
    /// begins; [`Redactor::redact`] replaces the same secrets.
    pub fn secret_spans(&self, text: &str) -> Vec<Range<usize>> {
        let mut spans = engine::pattern_spans(text);
        spans.extend(self.known_spans(text));
        spans.retain(|span| !span.is_empty());
        spans.sort_unstable_by_key(|span| (span.start, span.end));
        let mut merged: Vec<Range<usize>> = Vec::with_capacity(spans.len());
        for span in spans {
            match merged.last_mut() {
                Some(last) if span.start <= last.end => last.end = last.end.max(span.end),
                _ => merged.push(span),
            }
        }
        merged
    }

    /// True when `text` may hold the beginning of a secret that later text completes,
    /// somewhere other than in its last word (which a stream holds back anyway): one of the
    /// rules' keywords occurs in it, a registered value has whitespace inside (its forms
    /// span words), or it ends in a run of hex digits and separators while values are
    /// registered (a value's hex being written out byte by byte). See [`StreamRedactor`].
    pub(super) fn may_begin_secret(&self, text: &str) -> bool {
        engine::has_keyword(text)
            || self
                .known_values
                .iter()
                .any(|v| v.contains(char::is_whitespace))
            || (self.separated_hex.is_some() && hex::ends_in_hex_run(text))
            || (self.known_matcher.is_some() && wrapped::ends_in_encoded_line(text))
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
        let mut changed = self.known_values.insert(value.to_string());
        for form in encoded_forms(value) {
            if form.len() >= MIN_SECRET_LEN {
                changed |= self.known_forms.insert(form);
            }
        }
        changed
    }

    fn rebuild_known_matcher(&mut self) {
        self.known_matcher = KnownMatcher::build(&self.known_forms);
        self.separated_hex = hex::SeparatedHex::build(&self.known_values);
    }

    /// Where the known values are in `text`, in any registered form or as hex with
    /// separators: sorted, overlapping ranges merged.
    fn known_spans(&self, text: &str) -> Vec<Range<usize>> {
        let mut spans = Vec::new();
        let Some(matcher) = &self.known_matcher else {
            return spans;
        };
        matcher.for_each_match(text, |found| spans.push(found));
        wrapped::spans(
            text,
            |joined, report| matcher.for_each_match(joined, report),
            &mut spans,
        );
        if let Some(separated) = &self.separated_hex {
            separated.spans(text, &mut spans);
        }
        if spans.len() > 1 {
            spans.sort_unstable_by_key(|span| (span.start, span.end));
            spans.dedup_by(|next, kept| {
                let overlaps = next.start <= kept.end;
                if overlaps {
                    kept.end = kept.end.max(next.end);
                }
                overlaps
            });
        }
        spans
    }

    fn redact_known_values<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let spans = self.known_spans(text);
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut output = String::with_capacity(text.len());
        let mut copied_up_to = 0;
        for found in spans {
            output.push_str(&text[copied_up_to..found.start]);
            output.push_str(REDACTED);
            copied_up_to = found.end;
        }
        output.push_str(&text[copied_up_to..]);
        Cow::Owned(output)
    }
}

/// Finds the registered forms, leftmost-longest within each group of forms (matches of
/// different groups may overlap: [`Redactor::known_spans`] merges them).
#[derive(Clone)]
enum KnownMatcher {
    /// The SIMD "Teddy" searcher, one per [`PACKED_GROUP`] forms: it skips clean text about
    /// forty times faster than the automaton below (which has no usable prefilter for
    /// forms that start with every kind of byte), so a few passes of it still cost less.
    Packed(Vec<aho_corasick::packed::Searcher>),
    /// Any number of forms, when a group cannot be packed.
    Automaton(AhoCorasick),
}

/// Forms per Teddy searcher: it packs at most 64.
const PACKED_GROUP: usize = 64;

impl KnownMatcher {
    fn build(forms: &BTreeSet<String>) -> Option<Self> {
        if forms.is_empty() {
            return None;
        }
        let forms: Vec<&String> = forms.iter().collect();
        let packed: Option<Vec<_>> = forms
            .chunks(PACKED_GROUP)
            .map(|group| {
                aho_corasick::packed::Config::new()
                    .match_kind(aho_corasick::packed::MatchKind::LeftmostLongest)
                    .builder()
                    .extend(group)
                    .build()
            })
            .collect();
        if let Some(searchers) = packed {
            return Some(KnownMatcher::Packed(searchers));
        }
        AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostLongest)
            .build(forms)
            .ok()
            .map(KnownMatcher::Automaton)
    }

    fn for_each_match(&self, text: &str, mut f: impl FnMut(std::ops::Range<usize>)) {
        match self {
            KnownMatcher::Packed(searchers) => {
                for searcher in searchers {
                    searcher.find_iter(text).for_each(|found| f(found.range()));
                }
            }
            KnownMatcher::Automaton(automaton) => {
                automaton.find_iter(text).for_each(|found| f(found.range()));
            }
        }
    }
}

/// The redactor of this process's one start-up (`runtime::Process`), for what is printed
/// when the runtime is gone: the final error line on stderr.
static PROCESS_REDACTOR: std::sync::OnceLock<std::sync::Arc<Redactor>> = std::sync::OnceLock::new();

/// Records the process's redactor (the first one recorded stays).
pub fn set_process_redactor(redactor: std::sync::Arc<Redactor>) {
    let _ = PROCESS_REDACTOR.set(redactor);
}

/// The process's redactor; before one was recorded (an error before the start-up), one with
/// the patterns and the values of this environment's secret-named variables.
pub fn process_redactor() -> std::sync::Arc<Redactor> {
    PROCESS_REDACTOR.get().cloned().unwrap_or_else(|| {
        let mut redactor = Redactor::new();
        redactor.add_secrets_from_env(std::env::vars());
        std::sync::Arc::new(redactor)
    })
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
    let hex_lower = crate::util::hex::encode(bytes);
    let hex_upper = hex_lower.to_ascii_uppercase();
    let percent_upper = percent_encode(bytes);
    let percent_lower = percent_upper.to_ascii_lowercase();
    let mut forms = vec![
        value.to_string(),
        STANDARD.encode(bytes),
        STANDARD_NO_PAD.encode(bytes),
        URL_SAFE.encode(bytes),
        URL_SAFE_NO_PAD.encode(bytes),
        hex_lower,
        hex_upper,
        query_escape(value),
        percent_upper,
        percent_lower,
        value.chars().rev().collect(),
    ];
    for shift in 0..3 {
        forms.push(base64_core(bytes, shift, &STANDARD_NO_PAD));
        forms.push(base64_core(bytes, shift, &URL_SAFE_NO_PAD));
    }
    // Padded (as `base32` prints it); without padding, the core at shift 0 is all but the
    // last character.
    for alphabet in [base32::STANDARD, base32::HEX] {
        forms.push(base32::encode(bytes, alphabet, true));
        for shift in 0..5 {
            forms.push(base32::core(bytes, shift, alphabet));
        }
    }
    forms
}

/// The characters of the value's base64 that do not depend on the bytes around it, when the
/// value starts `shift` bytes (0, 1 or 2) into a 3-byte group: a longer text encoded whole
/// (`ODEK_API_KEY=…` in an encoded environment) holds one of the three.
fn base64_core(bytes: &[u8], shift: usize, engine: &base64::engine::GeneralPurpose) -> String {
    let mut shifted = vec![0u8; shift];
    shifted.extend_from_slice(bytes);
    let encoded = engine.encode(&shifted);
    // Character i holds bits 6i..6i+6 of the shifted bytes: only those wholly inside the
    // value's bits (8·shift .. 8·(shift + len)) are the value's alone.
    let first = (8 * shift).div_ceil(6);
    let end = (8 * (shift + bytes.len())) / 6;
    encoded.get(first..end).unwrap_or_default().to_string()
}

/// Every byte as `%XX` (upper-case hex), as `curl --data-urlencode` of a binary or a script
/// escaping everything writes it.
fn percent_encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(bytes.len() * 3);
    for byte in bytes {
        out.push('%');
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
