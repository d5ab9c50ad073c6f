//! A small shell lexer: enough of POSIX sh and bash syntax to find every simple command a
//! string would run, without running anything.
//!
//! It understands quoting (`'…'`, `"…"`, `$'…'` with escapes, backslashes), operators
//! (`;`, `&&`, `||`, `|`, `|&`, `&`, newlines, `(`/`)`), redirections (with file descriptors,
//! here-documents and here-strings), command substitutions (`$(…)`, backticks), process
//! substitutions (`<(…)`, `>(…)`), parameter and arithmetic expansions, comments, function
//! definitions, `case` patterns, array assignments and brace expansion.
//!
//! The lexer never recurses: the bodies of substitutions are returned as text, and the
//! classifier analyses them with its own depth limit. Anything it does not understand ends
//! up as an ordinary word, which the classifier treats as an unknown command (fail closed).

/// What a process substitution (`<(…)`) becomes as an argument.
const PROCESS_SUBSTITUTION_PATH: &str = "/dev/fd/63";

use super::braces::expand_braces;
use super::syntax::{Parsed, Redirect, RedirectKind, SimpleCommand, Word};

/// Splits shell text into simple commands.
pub(super) fn parse_script(text: &str) -> Parsed {
    Lexer::new(text).run_script()
}

/// Scans text that undergoes expansion without being run (the inside of `${…}`, `$((…))`,
/// an unquoted here-document) for the substitutions it contains.
pub(super) fn parse_expansion(text: &str) -> Parsed {
    Lexer::new(text).run_expansion()
}

struct PendingHereDocument {
    command_index: usize,
    delimiter: String,
    strip_tabs: bool,
    expand: bool,
}

struct Lexer {
    chars: Vec<char>,
    pos: usize,
    out: Parsed,
    current: SimpleCommand,
    pending_here_documents: Vec<PendingHereDocument>,
    case_depth: usize,
    expect_case_pattern: bool,
}

fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r')
}

fn ends_word(c: char) -> bool {
    is_blank(c) || matches!(c, '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>')
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// True for `NAME=` and `NAME+=` (the start of an assignment).
fn is_assignment_prefix(text: &str) -> bool {
    let name = text
        .strip_suffix("+=")
        .or_else(|| text.strip_suffix('='))
        .unwrap_or("");
    let mut chars = name.chars();
    chars.next().is_some_and(is_name_start) && chars.all(is_name_char)
}

impl Lexer {
    fn new(text: &str) -> Self {
        Self {
            chars: text.chars().collect(),
            pos: 0,
            out: Parsed::default(),
            current: SimpleCommand::default(),
            pending_here_documents: Vec::new(),
            case_depth: 0,
            expect_case_pattern: false,
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn run_script(mut self) -> Parsed {
        loop {
            if self.expect_case_pattern && self.skip_case_pattern() {
                continue;
            }
            let Some(c) = self.peek() else {
                break;
            };
            match c {
                ' ' | '\t' | '\r' => self.pos += 1,
                '\\' if self.peek_at(1) == Some('\n') => self.pos += 2,
                '\n' => {
                    self.pos += 1;
                    self.finish_command(false);
                    self.read_here_document_bodies();
                }
                '#' => self.skip_comment(),
                ';' => self.read_semicolon(),
                '&' => self.read_ampersand(),
                '|' => self.read_pipe(),
                '(' => self.read_open_paren(),
                ')' => {
                    self.pos += 1;
                    self.finish_command(false);
                }
                '<' | '>' => self.read_redirect(),
                _ => self.read_word_or_fd_redirect(),
            }
        }
        self.finish_command(false);
        self.out
    }

    fn run_expansion(mut self) -> Parsed {
        let mut scratch = Word::default();
        while let Some(c) = self.peek() {
            match c {
                '\\' => self.pos += 2,
                '$' => self.read_dollar(&mut scratch, true),
                '`' => self.read_backtick(&mut scratch),
                _ => self.pos += 1,
            }
        }
        self.out
    }

    fn skip_comment(&mut self) {
        while let Some(c) = self.peek() {
            if c == '\n' {
                break;
            }
            self.pos += 1;
        }
    }

    fn read_semicolon(&mut self) {
        self.pos += 1;
        let mut case_separator = false;
        if self.peek() == Some(';') {
            self.pos += 1;
            case_separator = true;
        }
        if self.peek() == Some('&') {
            self.pos += 1;
            case_separator = true;
        }
        self.finish_command(false);
        if case_separator && self.case_depth > 0 {
            self.expect_case_pattern = true;
        }
    }

    fn read_ampersand(&mut self) {
        match self.peek_at(1) {
            Some('&') => {
                self.pos += 2;
                self.finish_command(false);
            }
            Some('>') => self.read_redirect(),
            _ => {
                self.pos += 1;
                self.finish_command(false);
            }
        }
    }

    fn read_pipe(&mut self) {
        match self.peek_at(1) {
            Some('|') => {
                self.pos += 2;
                self.finish_command(false);
            }
            Some('&') => {
                self.pos += 2;
                self.finish_command(true);
            }
            _ => {
                self.pos += 1;
                self.finish_command(true);
            }
        }
    }

    /// `((…))` arithmetic command, `name()` function definition, or a subshell `(`.
    fn read_open_paren(&mut self) {
        if self.peek_at(1) == Some('(') && self.current.words.is_empty() {
            let body = self.read_balanced('(', ')');
            self.out.expansions.push(body);
            return;
        }
        if self.current.words.len() == 1 && self.next_non_blank_after(1) == Some(')') {
            let name = self.current.words[0].text.clone();
            self.out.functions.push(name);
            self.current.words.clear();
            self.pos += 1;
            self.skip_past(')');
            return;
        }
        self.pos += 1;
        self.finish_command(false);
    }

    fn next_non_blank_after(&self, offset: usize) -> Option<char> {
        self.chars
            .iter()
            .skip(self.pos + offset)
            .copied()
            .find(|c| !is_blank(*c))
    }

    /// At the start of a `case` pattern: skips it up to and including its `)`. Returns false
    /// (and stops expecting a pattern) when the next word is `esac`.
    fn skip_case_pattern(&mut self) -> bool {
        while let Some(c) = self.peek() {
            if is_blank(c) || c == '\n' {
                self.pos += 1;
            } else {
                break;
            }
        }
        self.expect_case_pattern = false;
        let rest: String = self.chars.iter().skip(self.pos).take(5).collect();
        if rest.starts_with("esac") && rest.chars().nth(4).is_none_or(ends_word) {
            return false;
        }
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                ')' => break,
                '\\' => self.pos += 1,
                '\'' => self.skip_past('\''),
                '"' => self.skip_past('"'),
                _ => {}
            }
        }
        true
    }

    fn skip_past(&mut self, close: char) {
        while let Some(c) = self.peek() {
            self.pos += 1;
            if c == close {
                return;
            }
        }
        self.out.incomplete = true;
    }

    fn finish_command(&mut self, pipes_to_next: bool) {
        let command = std::mem::take(&mut self.current);
        let is_empty = command.words.is_empty()
            && command.redirects.is_empty()
            && command.stdin_text.is_none();
        if !is_empty {
            self.note_function_keyword(&command);
            self.out.commands.push(command);
        }
        self.current.piped_from_previous = pipes_to_next;
    }

    /// Records `function name …` definitions.
    fn note_function_keyword(&mut self, command: &SimpleCommand) {
        if let [first, name, ..] = command.words.as_slice()
            && first.text == "function"
            && !first.quoted
        {
            let name = name.text.trim_end_matches("()").to_string();
            self.out.functions.push(name);
        }
    }

    fn push_word(&mut self, word: Word) {
        let is_first = self.current.words.is_empty();
        if !word.quoted && is_first && word.text == "case" {
            self.case_depth += 1;
        }
        if !word.quoted && is_first && word.text == "esac" {
            self.case_depth = self.case_depth.saturating_sub(1);
        }
        let closes_case_header = !word.quoted
            && word.text == "in"
            && self.current.words.len() == 2
            && self.current.words[0].text == "case";
        if word.brace {
            self.current.words.extend(expand_braces(&word));
        } else {
            self.current.words.push(word);
        }
        if closes_case_header {
            self.finish_command(false);
            self.expect_case_pattern = true;
        }
    }

    fn read_word_or_fd_redirect(&mut self) {
        let word = self.read_word();
        let is_fd = !word.quoted
            && !word.text.is_empty()
            && word.text.chars().all(|c| c.is_ascii_digit())
            && matches!(self.peek(), Some('<' | '>'));
        if is_fd {
            self.read_redirect();
        } else {
            self.push_word(word);
        }
    }

    fn read_word(&mut self) -> Word {
        let mut word = Word::default();
        let mut saw_open_brace = false;
        let mut saw_comma = false;
        // Inside a tilde-prefix (up to the first unquoted `/`): anything quoted there means
        // no expansion.
        let mut in_tilde_prefix = false;
        while let Some(c) = self.peek() {
            if in_tilde_prefix && (c == '/' || ends_word(c)) {
                in_tilde_prefix = false;
            } else if in_tilde_prefix && matches!(c, '\'' | '"' | '\\' | '$' | '`') {
                in_tilde_prefix = false;
                word.tilde = false;
            }
            if c == '~' && word.text.is_empty() && !word.quoted {
                word.tilde = true;
                in_tilde_prefix = true;
            }
            if c == '(' && !word.quoted && is_assignment_prefix(&word.text) {
                let body = self.read_balanced('(', ')');
                self.out.expansions.push(body);
                word.text.push_str("(…)");
                continue;
            }
            if ends_word(c) {
                break;
            }
            let start = word.text.len();
            match c {
                '\'' => {
                    self.pos += 1;
                    word.quoted = true;
                    self.read_single_quoted(&mut word);
                    word.inert.push((start, word.text.len()));
                }
                '"' => {
                    self.pos += 1;
                    word.quoted = true;
                    self.read_double_quoted(&mut word);
                    word.inert.push((start, word.text.len()));
                }
                '\\' => {
                    self.read_backslash(&mut word);
                    word.inert.push((start, word.text.len()));
                }
                '$' => self.read_dollar(&mut word, false),
                '`' => self.read_backtick(&mut word),
                _ => {
                    match c {
                        '*' | '?' | '[' => word.glob = true,
                        '{' => saw_open_brace = true,
                        ',' => saw_comma = true,
                        _ => {}
                    }
                    word.text.push(c);
                    self.pos += 1;
                }
            }
        }
        word.brace = saw_open_brace && saw_comma;
        word
    }

    fn read_backslash(&mut self, word: &mut Word) {
        self.pos += 1;
        match self.peek() {
            Some('\n') => self.pos += 1,
            Some(next) => {
                word.text.push(next);
                word.quoted = true;
                self.pos += 1;
            }
            None => word.text.push('\\'),
        }
    }

    fn read_single_quoted(&mut self, word: &mut Word) {
        while let Some(c) = self.peek() {
            self.pos += 1;
            if c == '\'' {
                return;
            }
            word.text.push(c);
        }
        self.out.incomplete = true;
    }

    fn read_double_quoted(&mut self, word: &mut Word) {
        while let Some(c) = self.peek() {
            match c {
                '"' => {
                    self.pos += 1;
                    return;
                }
                '\\' => {
                    self.pos += 1;
                    match self.peek() {
                        Some('\n') => self.pos += 1,
                        Some(next @ ('$' | '`' | '"' | '\\')) => {
                            word.text.push(next);
                            self.pos += 1;
                        }
                        _ => word.text.push('\\'),
                    }
                }
                '$' => self.read_dollar(word, true),
                '`' => self.read_backtick(word),
                _ => {
                    word.text.push(c);
                    self.pos += 1;
                }
            }
        }
        self.out.incomplete = true;
    }

    /// At a `$`: an expansion, a substitution, ANSI-C quoting, or a literal dollar.
    fn read_dollar(&mut self, word: &mut Word, in_double_quotes: bool) {
        self.pos += 1;
        match self.peek() {
            Some('(') if self.peek_at(1) == Some('(') => {
                let body = self.read_balanced('(', ')');
                word.text.push_str(&format!("$({body})"));
                self.out.expansions.push(body);
                word.dynamic = true;
            }
            Some('(') => {
                let body = self.read_balanced('(', ')');
                word.text.push_str(&format!("$({body})"));
                self.out.substitutions.push(body);
                word.dynamic = true;
                word.substitution = true;
            }
            Some('{') => {
                let body = self.read_balanced('{', '}');
                word.text.push_str("${");
                word.text.push_str(&body);
                word.text.push('}');
                self.out.expansions.push(body);
                word.dynamic = true;
            }
            Some('\'') if !in_double_quotes => {
                self.pos += 1;
                word.quoted = true;
                self.read_ansi_c_quoted(word);
            }
            Some('"') if !in_double_quotes => {
                self.pos += 1;
                word.quoted = true;
                self.read_double_quoted(word);
            }
            Some(c) if is_name_start(c) => {
                word.text.push('$');
                while let Some(c) = self.peek().filter(|c| is_name_char(*c)) {
                    word.text.push(c);
                    self.pos += 1;
                }
                word.dynamic = true;
            }
            Some(c) if c.is_ascii_digit() || "@*#?$!-".contains(c) => {
                word.text.push('$');
                word.text.push(c);
                self.pos += 1;
                word.dynamic = true;
            }
            _ => word.text.push('$'),
        }
    }

    fn read_backtick(&mut self, word: &mut Word) {
        self.pos += 1;
        let mut body = String::new();
        let mut closed = false;
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                '`' => {
                    closed = true;
                    break;
                }
                '\\' => match self.peek() {
                    Some(next @ ('`' | '\\' | '$')) => {
                        body.push(next);
                        self.pos += 1;
                    }
                    _ => body.push('\\'),
                },
                _ => body.push(c),
            }
        }
        self.out.incomplete |= !closed;
        word.text.push_str(&format!("$({body})"));
        self.out.substitutions.push(body);
        word.dynamic = true;
        word.substitution = true;
    }

    /// `$'…'`: decodes the escapes bash understands there (`\x72\x6d` is `rm`).
    fn read_ansi_c_quoted(&mut self, word: &mut Word) {
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                '\'' => return,
                '\\' => self.read_ansi_c_escape(word),
                _ => word.text.push(c),
            }
        }
        self.out.incomplete = true;
    }

    fn read_ansi_c_escape(&mut self, word: &mut Word) {
        let Some(c) = self.peek() else {
            word.text.push('\\');
            return;
        };
        self.pos += 1;
        let simple = match c {
            'a' => Some('\u{7}'),
            'b' => Some('\u{8}'),
            'e' | 'E' => Some('\u{1b}'),
            'f' => Some('\u{c}'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\u{b}'),
            '\\' | '\'' | '"' | '?' => Some(c),
            _ => None,
        };
        if let Some(decoded) = simple {
            word.text.push(decoded);
            return;
        }
        let decoded = match c {
            // `\cX`: the control character of X (`\cA` is 0x01).
            'c' => self.peek().map(|x| {
                self.pos += 1;
                char::from_u32(u32::from(x) & 0x1f).unwrap_or(x)
            }),
            'x' => self.read_code_point(16, 2),
            'u' => self.read_code_point(16, 4),
            'U' => self.read_code_point(16, 8),
            '0'..='7' => {
                self.pos -= 1;
                self.read_code_point(8, 3)
            }
            _ => None,
        };
        match decoded {
            Some(decoded) => word.text.push(decoded),
            None => {
                word.text.push('\\');
                word.text.push(c);
            }
        }
    }

    fn read_code_point(&mut self, radix: u32, max_digits: usize) -> Option<char> {
        let mut value: u32 = 0;
        let mut digits = 0;
        while digits < max_digits {
            let Some(digit) = self.peek().and_then(|c| c.to_digit(radix)) else {
                break;
            };
            value = value.saturating_mul(radix).saturating_add(digit);
            self.pos += 1;
            digits += 1;
        }
        if digits == 0 {
            return None;
        }
        char::from_u32(value)
    }

    /// At `open`: returns the text up to the matching `close` (exclusive) and moves past it.
    /// Quotes and escapes are respected; an unterminated body runs to the end of the input.
    fn read_balanced(&mut self, open: char, close: char) -> String {
        self.pos += 1;
        let start = self.pos;
        let mut depth = 1usize;
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                '\\' => self.pos += 1,
                '\'' => self.skip_past('\''),
                '"' => self.skip_double_quoted(),
                '`' => self.skip_past('`'),
                _ if c == open => depth += 1,
                _ if c == close => {
                    depth -= 1;
                    if depth == 0 {
                        let end = self.pos - 1;
                        return self.chars[start..end].iter().collect();
                    }
                }
                _ => {}
            }
        }
        let end = self.chars.len().min(self.pos).max(start);
        self.pos = self.chars.len();
        self.out.incomplete = true;
        self.chars[start..end].iter().collect()
    }

    fn skip_double_quoted(&mut self) {
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                '"' => return,
                '\\' => self.pos += 1,
                _ => {}
            }
        }
        self.out.incomplete = true;
    }

    /// At `<`, `>` or `&>`: one redirection and its target.
    fn read_redirect(&mut self) {
        let operator: String = self.chars.iter().skip(self.pos).take(3).collect();
        let (kind, length) = redirect_operator(&operator);
        if matches!(operator.as_bytes(), [b'<' | b'>', b'(', ..]) {
            self.pos += 1;
            let body = self.read_balanced('(', ')');
            self.out.substitutions.push(body);
            self.current.words.push(Word {
                process_substitution: true,
                ..Word::literal(PROCESS_SUBSTITUTION_PATH)
            });
            return;
        }
        self.pos += length;
        loop {
            match self.peek() {
                Some(c) if is_blank(c) => self.pos += 1,
                Some('\\') if self.peek_at(1) == Some('\n') => self.pos += 2,
                _ => break,
            }
        }
        let target = match self.peek() {
            Some(c) if !ends_word(c) => self.read_word(),
            _ => Word::default(),
        };
        match kind {
            OperatorKind::HereDocument { strip_tabs } => {
                self.pending_here_documents.push(PendingHereDocument {
                    command_index: self.out.commands.len(),
                    delimiter: target.text.clone(),
                    strip_tabs,
                    expand: !target.quoted,
                });
                self.push_redirect(RedirectKind::HereDocument, target);
            }
            OperatorKind::HereString => {
                self.current.stdin_text = Some(target.text.clone());
                self.push_redirect(RedirectKind::HereString, target);
            }
            OperatorKind::WriteOrDuplicate => {
                let is_descriptor =
                    target.text == "-" || target.text.chars().all(|c| c.is_ascii_digit());
                let kind = if is_descriptor && !target.text.is_empty() {
                    RedirectKind::Duplicate
                } else {
                    RedirectKind::Write
                };
                self.push_redirect(kind, target);
            }
            OperatorKind::Plain(kind) => self.push_redirect(kind, target),
        }
    }

    fn push_redirect(&mut self, kind: RedirectKind, target: Word) {
        self.current.redirects.push(Redirect { kind, target });
    }

    /// After a newline: the bodies of the here-documents opened on the line just ended.
    fn read_here_document_bodies(&mut self) {
        for pending in std::mem::take(&mut self.pending_here_documents) {
            let body = self.read_here_document_body(&pending);
            if pending.expand {
                self.out.expansions.push(body.clone());
            }
            if let Some(command) = self.out.commands.get_mut(pending.command_index) {
                command.stdin_text = Some(body);
            }
        }
    }

    fn read_here_document_body(&mut self, pending: &PendingHereDocument) -> String {
        let mut body = String::new();
        while self.pos < self.chars.len() {
            let mut line = String::new();
            while let Some(c) = self.peek() {
                self.pos += 1;
                if c == '\n' {
                    break;
                }
                line.push(c);
            }
            let line = if pending.strip_tabs {
                line.trim_start_matches('\t').to_string()
            } else {
                line
            };
            if line == pending.delimiter {
                break;
            }
            body.push_str(&line);
            body.push('\n');
        }
        body
    }
}

#[derive(Clone, Copy)]
enum OperatorKind {
    Plain(RedirectKind),
    WriteOrDuplicate,
    HereDocument { strip_tabs: bool },
    HereString,
}

/// The redirection operator at the start of `text` and its length in characters.
fn redirect_operator(text: &str) -> (OperatorKind, usize) {
    use OperatorKind::{HereDocument, HereString, Plain, WriteOrDuplicate};
    let table = [
        ("&>>", Plain(RedirectKind::Write)),
        ("&>", Plain(RedirectKind::Write)),
        ("<<<", HereString),
        ("<<-", HereDocument { strip_tabs: true }),
        ("<<", HereDocument { strip_tabs: false }),
        ("<&", Plain(RedirectKind::Duplicate)),
        ("<>", Plain(RedirectKind::Write)),
        (">>", Plain(RedirectKind::Write)),
        (">|", Plain(RedirectKind::Write)),
        (">&", WriteOrDuplicate),
        ("<", Plain(RedirectKind::Read)),
        (">", Plain(RedirectKind::Write)),
    ];
    for (operator, kind) in table {
        if text.starts_with(operator) {
            return (kind, operator.chars().count());
        }
    }
    (Plain(RedirectKind::Read), 1)
}

#[cfg(test)]
mod tests;
