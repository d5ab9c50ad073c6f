//! Reads a sed script far enough to find the commands that run programs (`e`, the `e` flag
//! of `s`) or write files (`w`, `W`, the `w` flag of `s`).

use super::analyzer::{Context, safe, write_target};
use super::syntax::Word;
use crate::danger_policy::Classification;
use crate::danger_policy::DangerClass;

/// Classifies one sed script: safe, a file write, or code execution.
pub(super) fn classify(script: &str, context: &Context) -> Classification {
    let chars: Vec<char> = script.chars().collect();
    let mut result = safe("sed only prints");
    let mut pos = 0;
    while pos < chars.len() {
        let start = pos;
        pos = skip_address(&chars, pos);
        let Some(&command) = chars.get(pos) else {
            break;
        };
        pos += 1;
        match command {
            'e' => {
                result = result.worse(Classification::new(
                    DangerClass::CodeExecution,
                    "sed e runs a shell command",
                ));
                pos = end_of_line(&chars, pos);
            }
            'w' | 'W' => {
                let end = end_of_line(&chars, pos);
                result = result.worse(written_file(&chars[pos..end], context));
                pos = end;
            }
            's' => {
                let (flags, end) = substitution_flags(&chars, pos);
                if flags.contains('e') {
                    result = result.worse(Classification::new(
                        DangerClass::CodeExecution,
                        "sed s///e runs the result as a shell command",
                    ));
                }
                if let Some(w) = flags.find('w') {
                    let file: Vec<char> = flags[w + 1..].chars().collect();
                    result = result.worse(written_file(&file, context));
                }
                pos = end;
            }
            'y' => pos = skip_delimited(&chars, pos, 2),
            'a' | 'i' | 'c' | 'r' | 'R' | ':' => pos = end_of_line(&chars, pos),
            'b' | 't' | 'T' => pos = end_of_command(&chars, pos),
            _ => {}
        }
        if pos <= start {
            pos = start + 1;
        }
    }
    result
}

fn written_file(chars: &[char], context: &Context) -> Classification {
    let name: String = chars.iter().collect();
    let name = name.trim();
    match name {
        "" | "/dev/stdout" | "/dev/stderr" => safe("sed writes to standard output"),
        _ => write_target(&Word::literal(name), context).worse(Classification::new(
            DangerClass::LocalWrite,
            "sed w writes a file",
        )),
    }
}

/// Skips separators and an address (`12`, `$`, `/re/`, `\%re%`, `1,5`, `addr!`).
fn skip_address(chars: &[char], mut pos: usize) -> usize {
    while let Some(&c) = chars.get(pos) {
        match c {
            ' ' | '\t' | '\n' | ';' | '{' | '}' | '!' | ',' | '~' | '+' | '$' => pos += 1,
            '0'..='9' => pos += 1,
            '/' => pos = skip_delimited(chars, pos, 1),
            '\\' => pos = skip_delimited(chars, pos + 1, 1),
            _ => break,
        }
    }
    pos
}

/// At a delimiter: skips `parts` delimited parts (escapes respected) and returns the position
/// after the last delimiter.
fn skip_delimited(chars: &[char], pos: usize, parts: usize) -> usize {
    let Some(&delimiter) = chars.get(pos) else {
        return pos;
    };
    let mut pos = pos + 1;
    let mut remaining = parts;
    while let Some(&c) = chars.get(pos) {
        pos += 1;
        if c == '\\' {
            pos += 1;
        } else if c == delimiter {
            remaining -= 1;
            if remaining == 0 {
                break;
            }
        }
    }
    pos.min(chars.len())
}

/// After `s`: skips pattern and replacement; returns the flags (with a `w` file name, which
/// runs to the end of the line) and the position after them.
fn substitution_flags(chars: &[char], pos: usize) -> (String, usize) {
    let mut pos = skip_delimited(chars, pos, 2);
    let mut flags = String::new();
    while let Some(&c) = chars.get(pos) {
        if c == 'w' {
            let end = end_of_line(chars, pos);
            flags.extend(&chars[pos..end]);
            return (flags, end);
        }
        if !c.is_ascii_alphanumeric() {
            break;
        }
        flags.push(c);
        pos += 1;
    }
    (flags, pos)
}

fn end_of_line(chars: &[char], pos: usize) -> usize {
    chars
        .iter()
        .skip(pos)
        .position(|c| *c == '\n')
        .map_or(chars.len(), |offset| pos + offset)
}

fn end_of_command(chars: &[char], pos: usize) -> usize {
    chars
        .iter()
        .skip(pos)
        .position(|c| matches!(c, '\n' | ';' | '}'))
        .map_or(chars.len(), |offset| pos + offset)
}
