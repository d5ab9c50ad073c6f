//! Telegram text: MarkdownV2 escaping, the agent's answers as MarkdownV2 (code kept as code,
//! everything else literal), and replies split under Telegram's 4096-character cap —
//! lengths counted in UTF-16 code units, as Telegram counts them.

/// Telegram's cap on one message, in UTF-16 code units.
pub const MAX_MESSAGE_UNITS: usize = 4096;

/// Characters MarkdownV2 reserves outside code.
const RESERVED: &[char] = &[
    '_', '*', '[', ']', '(', ')', '~', '`', '>', '#', '+', '-', '=', '|', '{', '}', '.', '!', '\\',
];

/// Length as Telegram counts it.
pub fn utf16_len(text: &str) -> usize {
    text.encode_utf16().count()
}

/// `text` as MarkdownV2 showing exactly these characters.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        if RESERVED.contains(&c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `text` for the inside of a code span or block: only `` ` `` and `\` are escaped.
pub fn escape_code(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '`' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// An answer in MarkdownV2: fenced code blocks and inline code stay code, everything else
/// shows literally. A fence left open is closed at the end.
pub fn answer_markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut in_fence = false;
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if let Some(rest) = line.trim_start().strip_prefix("```") {
            if in_fence {
                out.push_str("```");
            } else {
                // The language tag, if any, must be a plain word.
                let lang: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '+' || *c == '-')
                    .collect();
                out.push_str("```");
                out.push_str(&lang);
            }
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            out.push_str(&escape_code(line));
        } else {
            out.push_str(&inline_code(line));
        }
    }
    if in_fence {
        out.push_str("\n```");
    }
    out
}

/// One line outside fences: `` `code` `` spans kept, the rest escaped; a backtick with no
/// partner on the line is shown literally.
fn inline_code(line: &str) -> String {
    let mut out = String::with_capacity(line.len() + 8);
    let mut rest = line;
    while let Some(open) = rest.find('`') {
        out.push_str(&escape(&rest[..open]));
        let after = &rest[open + 1..];
        match after.find('`') {
            Some(close) if close > 0 => {
                out.push('`');
                out.push_str(&escape_code(&after[..close]));
                out.push('`');
                rest = &after[close + 1..];
            }
            _ => {
                out.push_str("\\`");
                rest = after;
            }
        }
    }
    out.push_str(&escape(rest));
    out
}

/// Splits `text` into pieces of at most `max` UTF-16 units, on line boundaries where it can
/// (a line longer than `max` is cut between characters). No piece is empty.
pub fn split(text: &str, max: usize) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut current = String::new();
    let mut current_len = 0;
    for line in text.split_inclusive('\n') {
        let len = utf16_len(line);
        if current_len + len > max && !current.is_empty() {
            pieces.push(std::mem::take(&mut current));
            current_len = 0;
        }
        if len > max {
            for c in line.chars() {
                let n = c.len_utf16();
                if current_len + n > max {
                    pieces.push(std::mem::take(&mut current));
                    current_len = 0;
                }
                current.push(c);
                current_len += n;
            }
        } else {
            current.push_str(line);
            current_len += len;
        }
    }
    if !current.is_empty() {
        pieces.push(current);
    }
    pieces
        .into_iter()
        .map(|p| p.trim_end_matches('\n').to_string())
        .filter(|p| !p.trim().is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_every_reserved_character() {
        assert_eq!(
            escape("a_b*c[d](e)~`>#+-=|{}.!\\"),
            "a\\_b\\*c\\[d\\]\\(e\\)\\~\\`\\>\\#\\+\\-\\=\\|\\{\\}\\.\\!\\\\"
        );
        assert_eq!(escape("plain words, 42"), "plain words, 42");
        assert_eq!(escape_code("a`b\\c_d"), "a\\`b\\\\c_d");
    }

    #[test]
    fn answers_keep_code_and_show_the_rest_literally() {
        assert_eq!(
            answer_markdown("Run `cargo test` now."),
            "Run `cargo test` now\\."
        );
        assert_eq!(
            answer_markdown("Done!\n```rust\nfn main() { println!(\"hi\"); }\n```\nBye."),
            "Done\\!\n```rust\nfn main() { println!(\"hi\"); }\n```\nBye\\."
        );
        // An unclosed fence is closed; an unpaired backtick is literal.
        assert_eq!(answer_markdown("```\nx_y"), "```\nx_y\n```");
        assert_eq!(answer_markdown("it`s 5 * 3"), "it\\`s 5 \\* 3");
    }

    #[test]
    fn split_respects_the_cap_in_utf16_units_and_line_boundaries() {
        let line = "🙂".repeat(10); // 20 UTF-16 units
        let text = format!("{line}\n{line}\n{line}");
        let pieces = split(&text, 45);
        assert_eq!(pieces, vec![format!("{line}\n{line}"), line.clone()]);
        let long = "x".repeat(10_000);
        let pieces = split(&long, MAX_MESSAGE_UNITS);
        assert_eq!(pieces.len(), 3);
        assert!(pieces.iter().all(|p| utf16_len(p) <= MAX_MESSAGE_UNITS));
        assert_eq!(pieces.concat(), long);
        assert!(split("\n\n", 10).is_empty());
    }
}
