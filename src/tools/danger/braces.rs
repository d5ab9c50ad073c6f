//! Bash brace expansion of one word (`{rm,-rf,/}` is three words), as the lexer applies it
//! to every unquoted word with a `{` and a `,`.

use super::syntax::Word;

/// Most words one brace expansion may produce.
const MAX_BRACE_WORDS: usize = 64;

/// Bash brace expansion of one word (`{rm,-rf,/}` is three words, `r{m,}` is `rm r`).
pub(super) fn expand_braces(word: &Word) -> Vec<Word> {
    let mut results = vec![mask_inert(word)];
    // Each round expands the first brace group of every result; a handful of rounds covers
    // any realistic nesting, and the word cap bounds the output.
    for _ in 0..4 {
        let mut next = Vec::new();
        let mut expanded_any = false;
        for text in &results {
            match expand_first_brace_group(text) {
                Some(parts) => {
                    expanded_any = true;
                    next.extend(parts);
                }
                None => next.push(text.clone()),
            }
            if next.len() > MAX_BRACE_WORDS {
                next.truncate(MAX_BRACE_WORDS);
                break;
            }
        }
        results = next;
        if !expanded_any {
            break;
        }
    }
    results
        .into_iter()
        .filter(|text| !text.is_empty())
        .map(|text| Word {
            text: unmask(&text),
            brace: false,
            inert: Vec::new(),
            ..word.clone()
        })
        .collect()
}

/// Stand-ins for quoted `{`, `}` and `,` while braces expand (private-use characters).
const MASKS: [(char, char); 3] = [('{', '\u{E000}'), ('}', '\u{E001}'), (',', '\u{E002}')];

/// The word's text with its quoted braces and commas masked, so expansion passes them by.
fn mask_inert(word: &Word) -> String {
    word.text
        .char_indices()
        .map(|(at, c)| {
            let inert = word
                .inert
                .iter()
                .any(|&(start, end)| (start..end).contains(&at));
            match MASKS.iter().find(|(plain, _)| *plain == c) {
                Some(&(_, mask)) if inert => mask,
                _ => c,
            }
        })
        .collect()
}

/// The masked characters back as they were.
fn unmask(text: &str) -> String {
    text.chars()
        .map(|c| {
            MASKS
                .iter()
                .find(|(_, mask)| *mask == c)
                .map_or(c, |&(plain, _)| plain)
        })
        .collect()
}

/// Expands the first `{a,b,…}` group of `text`, or `None` when there is none.
fn expand_first_brace_group(text: &str) -> Option<Vec<String>> {
    let chars: Vec<char> = text.chars().collect();
    for open in 0..chars.len() {
        if chars[open] != '{' {
            continue;
        }
        let mut depth = 0usize;
        let mut commas = Vec::new();
        for (index, &c) in chars.iter().enumerate().skip(open) {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        if commas.is_empty() {
                            break;
                        }
                        return Some(brace_alternatives(&chars, open, index, &commas));
                    }
                }
                ',' if depth == 1 => commas.push(index),
                _ => {}
            }
        }
    }
    None
}

fn brace_alternatives(chars: &[char], open: usize, close: usize, commas: &[usize]) -> Vec<String> {
    let prefix: String = chars[..open].iter().collect();
    let suffix: String = chars[close + 1..].iter().collect();
    let mut bounds = vec![open];
    bounds.extend_from_slice(commas);
    bounds.push(close);
    bounds
        .windows(2)
        .map(|pair| {
            let middle: String = chars[pair[0] + 1..pair[1]].iter().collect();
            format!("{prefix}{middle}{suffix}")
        })
        .collect()
}
