//! The pattern layer's machinery: one keyword pass decides which rules can match (and, for
//! the assignment rules, where), only those run, and every secret they find is replaced in
//! one copy of the text.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::{LazyLock, OnceLock};

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use regex::{Captures, Regex};

use super::REDACTED;
use super::patterns::{Check, Finder, RULES, Rule, Screen};

/// Words of a [`RuleSet`].
const SET_WORDS: usize = RULES.len().div_ceil(64);

/// A set of rule indices.
#[derive(Clone, Copy)]
struct RuleSet([u64; SET_WORDS]);

impl RuleSet {
    const EMPTY: RuleSet = RuleSet([0; SET_WORDS]);

    fn insert(&mut self, index: usize) {
        self.0[index / 64] |= 1 << (index % 64);
    }

    fn contains(&self, index: usize) -> bool {
        self.0[index / 64] & (1 << (index % 64)) != 0
    }

    fn union(&mut self, other: &RuleSet) {
        for (word, add) in self.0.iter_mut().zip(other.0) {
            *word |= add;
        }
    }
}

/// What the keyword pass found: the rules that search the whole text, and for the
/// keyword-anchored rules (`at_keyword`) each place one of their keywords starts, as
/// (rule, position) sorted.
struct Woken {
    whole: RuleSet,
    hits: Vec<(usize, usize)>,
}

/// A rule's expression, compiled the first time the rule runs.
struct Compiled {
    regex: Regex,
    /// Capture groups that may hold the secret (the unnamed ones), in order.
    secret_groups: Vec<usize>,
}

impl Compiled {
    fn new(pattern: &str) -> Option<Self> {
        // Every pattern compiles (a unit test checks it); one that did not would be
        // skipped rather than take the process down.
        let regex = Regex::new(pattern).ok()?;
        let secret_groups = regex
            .capture_names()
            .enumerate()
            .skip(1)
            .filter(|(_, name)| name.is_none())
            .map(|(index, _)| index)
            .collect();
        Some(Compiled {
            regex,
            secret_groups,
        })
    }
}

/// The keyword automaton and the compiled rules, built once per process.
struct Layer {
    /// All rules' keywords, ASCII case-insensitive; `None` only if it failed to build, in
    /// which case every rule searches the whole text.
    keywords: Option<AhoCorasick>,
    /// For each keyword (by automaton pattern id), the whole-text rules it wakes.
    wakes: Vec<RuleSet>,
    /// For each keyword, the keyword-anchored rules it belongs to.
    anchors: Vec<Vec<usize>>,
    /// Rules without keywords: they run on every text.
    always: RuleSet,
    compiled: Vec<OnceLock<Option<Compiled>>>,
}

static LAYER: LazyLock<Layer> = LazyLock::new(Layer::build);

fn at_keyword(rule: &Rule) -> bool {
    matches!(
        rule.finder,
        Finder::Regex {
            at_keyword: true,
            ..
        }
    )
}

impl Layer {
    fn build() -> Self {
        let mut words: Vec<String> = Vec::new();
        let mut wakes: Vec<RuleSet> = Vec::new();
        let mut anchors: Vec<Vec<usize>> = Vec::new();
        let mut always = RuleSet::EMPTY;
        for (index, rule) in RULES.iter().enumerate() {
            if rule.keywords.is_empty() {
                always.insert(index);
            }
            for keyword in rule.keywords {
                let keyword = keyword.to_ascii_lowercase();
                let position = match words.iter().position(|word| *word == keyword) {
                    Some(position) => position,
                    None => {
                        words.push(keyword);
                        wakes.push(RuleSet::EMPTY);
                        anchors.push(Vec::new());
                        words.len() - 1
                    }
                };
                if at_keyword(rule) {
                    anchors[position].push(index);
                } else {
                    wakes[position].insert(index);
                }
            }
        }
        // A contiguous NFA. A DFA searches about twice as fast, but costs ~0.75 MB and
        // ~1 ms of every process's start (a fifth of a one-call run's CPU) to save ~2.5 µs
        // per KiB searched: a run would have to redact ~400 KiB to earn it back.
        let keywords = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .kind(Some(AhoCorasickKind::ContiguousNFA))
            .build(&words)
            .ok();
        Layer {
            keywords,
            wakes,
            anchors,
            always,
            compiled: RULES.iter().map(|_| OnceLock::new()).collect(),
        }
    }

    /// One overlapping pass over `text` for every keyword (a keyword inside another, like
    /// `api_key` in `dd_api_key`, is still seen).
    fn woken(&self, text: &str) -> Woken {
        let Some(keywords) = &self.keywords else {
            let mut all = RuleSet::EMPTY;
            (0..RULES.len()).for_each(|index| all.insert(index));
            return Woken {
                whole: all,
                hits: Vec::new(),
            };
        };
        let mut whole = self.always;
        let mut hits = Vec::new();
        for found in keywords.find_overlapping_iter(text) {
            let keyword = found.pattern().as_usize();
            whole.union(&self.wakes[keyword]);
            hits.extend(
                self.anchors[keyword]
                    .iter()
                    .map(|&rule| (rule, found.start())),
            );
        }
        hits.sort_unstable();
        hits.dedup();
        Woken { whole, hits }
    }

    fn compiled(&self, index: usize, pattern: &str) -> Option<&Compiled> {
        self.compiled[index]
            .get_or_init(|| Compiled::new(pattern))
            .as_ref()
    }

    /// Pushes the secret spans rule `index` finds in `text`: in the whole text, or, with
    /// `hits` (the sorted positions of the rule's keywords), in the rest of each line from
    /// its first hit.
    fn find(
        &self,
        index: usize,
        text: &str,
        hits: Option<&[usize]>,
        spans: &mut Vec<Range<usize>>,
    ) {
        let rule = &RULES[index];
        let (pattern, check, screen) = match &rule.finder {
            Finder::Custom(find) => return find(text, spans),
            Finder::Regex {
                regex,
                check,
                screen,
                ..
            } => (regex, *check, *screen),
        };
        let Some(compiled) = self.compiled(index, pattern) else {
            return;
        };
        let Some(hits) = hits else {
            return search(compiled, check, screen, text, 0, spans);
        };
        let mut searched_up_to = 0;
        for &hit in hits {
            if hit < searched_up_to {
                continue;
            }
            let line_end = text[hit..].find('\n').map_or(text.len(), |end| hit + end);
            // The window keeps the text before the hit, so look-behind (`\b`) and the
            // checks see the real context.
            search(compiled, check, screen, &text[..line_end], hit, spans);
            searched_up_to = line_end;
        }
    }
}

/// Every match of `compiled` in `haystack` from `start` on, its secret pushed unless the
/// screen or the check rejects it.
fn search(
    compiled: &Compiled,
    check: Option<Check>,
    screen: Option<Screen>,
    haystack: &str,
    start: usize,
    spans: &mut Vec<Range<usize>>,
) {
    let regex = &compiled.regex;
    if compiled.secret_groups.is_empty() && check.is_none() && screen.is_none() {
        let mut at = start;
        while let Some(found) = regex.find_at(haystack, at) {
            spans.push(found.range());
            at = found.end().max(found.start() + 1);
        }
        return;
    }
    let mut at = start;
    while at <= haystack.len() {
        // With a screen: the bare match first, capture groups only when it passes (they
        // cost about a microsecond a match).
        let captures = match screen {
            Some(screen) => {
                let Some(found) = regex.find_at(haystack, at) else {
                    return;
                };
                at = found.end().max(found.start() + 1);
                if !screen(haystack, found.range()) {
                    continue;
                }
                match regex.captures_at(haystack, found.start()) {
                    Some(captures) => captures,
                    None => continue,
                }
            }
            None => {
                let Some(captures) = regex.captures_at(haystack, at) else {
                    return;
                };
                let whole = captures.get(0).map_or(at..at + 1, |m| m.range());
                at = whole.end.max(whole.start + 1);
                captures
            }
        };
        push_secret(compiled, check, haystack, &captures, spans);
    }
}

/// Pushes the secret of one match (see [`Finder::Regex`]) unless the check rejects it.
fn push_secret(
    compiled: &Compiled,
    check: Option<Check>,
    text: &str,
    captures: &Captures<'_>,
    spans: &mut Vec<Range<usize>>,
) {
    let secret = compiled
        .secret_groups
        .iter()
        .find_map(|&group| captures.get(group))
        .or_else(|| captures.get(0));
    let Some(secret) = secret else { return };
    if check.is_none_or(|accept| accept(text, captures, secret.range())) {
        spans.push(secret.range());
    }
}

/// Every secret span the rules find in `text`.
fn find_all(text: &str) -> Vec<Range<usize>> {
    let layer = &*LAYER;
    let woken = layer.woken(text);
    let mut spans = Vec::new();
    for index in 0..RULES.len() {
        if woken.whole.contains(index) {
            layer.find(index, text, None, &mut spans);
        }
    }
    for_each_anchored_rule(&woken.hits, |index, positions| {
        layer.find(index, text, Some(positions), &mut spans);
    });
    spans
}

/// True when one of the rules' keywords occurs in `text` (every rule with keywords matches
/// only where one occurs), or a word after which a secret may come that later text reveals
/// ([`super::patterns::LATE_CONTEXT`]): a secret may be starting there.
pub(super) fn has_keyword(text: &str) -> bool {
    LAYER.keywords.as_ref().is_none_or(|k| k.is_match(text))
        || super::patterns::LATE_CONTEXT.iter().any(|word| {
            text.as_bytes()
                .windows(word.len())
                .any(|w| w.eq_ignore_ascii_case(word.as_bytes()))
        })
}

/// Every secret span the rules find in `text`, unsorted and unmerged.
pub(super) fn pattern_spans(text: &str) -> Vec<Range<usize>> {
    find_all(text)
}

/// Calls `f` with each keyword-anchored rule and its sorted hit positions.
fn for_each_anchored_rule(hits: &[(usize, usize)], mut f: impl FnMut(usize, &[usize])) {
    let mut positions = Vec::new();
    let mut rest = hits;
    while let Some(&(rule, _)) = rest.first() {
        let same = rest.iter().take_while(|(other, _)| *other == rule).count();
        positions.clear();
        positions.extend(rest[..same].iter().map(|(_, position)| *position));
        f(rule, &positions);
        rest = &rest[same..];
    }
}

/// Runs the pattern layer over `text`: every rule that can match runs, and each secret
/// span found becomes [`REDACTED`] (overlapping and adjacent spans become one). Returns the
/// text unchanged when nothing matched.
pub(super) fn redact_patterns(text: Cow<'_, str>) -> Cow<'_, str> {
    let spans = find_all(&text);
    match replace_spans(&text, spans) {
        Some(redacted) => Cow::Owned(redacted),
        None => text,
    }
}

/// `text` with each span replaced by [`REDACTED`]; `None` when there is nothing to replace
/// (no spans, or only spans that already read `[REDACTED]`).
fn replace_spans(text: &str, mut spans: Vec<Range<usize>>) -> Option<String> {
    spans.retain(|span| !span.is_empty() && text[span.clone()] != *REDACTED);
    if spans.is_empty() {
        return None;
    }
    spans.sort_unstable_by_key(|span| (span.start, span.end));
    let mut output = String::with_capacity(text.len());
    let mut copied_up_to = 0;
    let mut replaced_any = false;
    for span in spans {
        if replaced_any && span.start <= copied_up_to {
            copied_up_to = copied_up_to.max(span.end);
            continue;
        }
        output.push_str(&text[copied_up_to..span.start]);
        output.push_str(REDACTED);
        copied_up_to = span.end;
        replaced_any = true;
    }
    output.push_str(&text[copied_up_to..]);
    Some(output)
}

/// The rules the keyword pass wakes for `text`, by name (for tests).
#[cfg(test)]
pub(super) fn woken_rule_names(text: &str) -> Vec<&'static str> {
    let woken = LAYER.woken(text);
    RULES
        .iter()
        .enumerate()
        .filter(|(index, _)| {
            woken.whole.contains(*index) || woken.hits.iter().any(|(rule, _)| rule == index)
        })
        .map(|(_, rule)| rule.name)
        .collect()
}

/// The rules that find at least one secret in `text`, by index (for tests).
#[cfg(test)]
pub(super) fn matching_rules(text: &str) -> Vec<usize> {
    let woken = LAYER.woken(text);
    let mut matching = Vec::new();
    for index in 0..RULES.len() {
        let mut spans = Vec::new();
        if woken.whole.contains(index) {
            LAYER.find(index, text, None, &mut spans);
        }
        if !spans.is_empty() {
            matching.push(index);
        }
    }
    for_each_anchored_rule(&woken.hits, |index, positions| {
        let mut spans = Vec::new();
        LAYER.find(index, text, Some(positions), &mut spans);
        if !spans.is_empty() {
            matching.push(index);
        }
    });
    matching.sort_unstable();
    matching
}

/// For a keyword-anchored rule: the spans of a whole-text search and of the search from
/// its keywords (for the test that they agree).
#[cfg(test)]
pub(super) fn anchored_and_whole_spans(
    index: usize,
    text: &str,
) -> (Vec<Range<usize>>, Vec<Range<usize>>) {
    let woken = LAYER.woken(text);
    let positions: Vec<usize> = woken
        .hits
        .iter()
        .filter(|(rule, _)| *rule == index)
        .map(|(_, position)| *position)
        .collect();
    let mut anchored = Vec::new();
    LAYER.find(index, text, Some(&positions), &mut anchored);
    let mut whole = Vec::new();
    LAYER.find(index, text, None, &mut whole);
    (anchored, whole)
}
