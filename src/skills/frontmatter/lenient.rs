//! A front matter that is not YAML, read line by line as Claude Code reads its agent and
//! command files: many published ones hold an unquoted `: ` in their description
//! (`Examples: <example> Context: … user: "…"`) or a bare `argument-hint: [pr] [priority]`,
//! which no YAML parser accepts.
//!
//! A line that starts with one of the reader's keys and a colon starts an entry; every other
//! line continues the entry before it. An entry's value is what YAML reads of it alone (a
//! quoted string, a list, a number) when that is not a mapping, else its text as written.

use serde_yaml_ng::{Mapping, Value};

/// The entries of `yaml` whose keys are among `keys`, read line by line (see the module's
/// comment).
pub fn mapping(yaml: &str, keys: &[&str]) -> Mapping {
    let mut entries: Vec<(&str, String)> = Vec::new();
    for line in yaml.lines() {
        match line.split_once(':').filter(|(key, _)| keys.contains(key)) {
            Some((key, value)) => entries.push((key, value.trim_start().to_string())),
            None => {
                if let Some((_, value)) = entries.last_mut() {
                    value.push('\n');
                    value.push_str(line);
                }
            }
        }
    }
    entries
        .into_iter()
        .map(|(key, value)| (Value::String(key.to_string()), value_of(&value)))
        .collect()
}

/// What YAML reads of `text` alone, unless that fails or is a mapping: then the text.
fn value_of(text: &str) -> Value {
    let dedented = dedent(text);
    let text = dedented.trim();
    if text.is_empty() {
        return Value::Null;
    }
    match serde_yaml_ng::from_str::<Value>(text) {
        Ok(Value::Mapping(_) | Value::Tagged(_)) | Err(_) => Value::String(text.to_string()),
        Ok(value) => value,
    }
}

/// `text` without the indentation its non-blank lines share (a list under a bare `key:` is
/// indented; YAML reads its items only once they start at the left).
fn dedent(text: &str) -> String {
    let indent = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    text.lines()
        .map(|l| l.get(indent..).unwrap_or_else(|| l.trim_start()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_description_with_colons_and_unindented_examples_is_one_entry() {
        let yaml = "name: fixer\n\
description: Use this agent when tests fail. Examples:\n\
<example>\n\
Context: the user ran the tests\n\
user: \"fix it\"\n\
</example>\n\
tools: [Read, Edit]\n\
model: \"sonnet\"\n\
max_iter: 5\n\
color:\n";
        let map = mapping(
            yaml,
            &["name", "description", "tools", "model", "max_iter", "color"],
        );
        let text = |key: &str| map.get(key).and_then(Value::as_str).map(str::to_string);
        assert_eq!(text("name").as_deref(), Some("fixer"));
        let description = text("description").unwrap();
        assert!(description.starts_with("Use this agent when tests fail. Examples:\n<example>"));
        assert!(description.ends_with("user: \"fix it\"\n</example>"));
        assert_eq!(
            map.get("tools").and_then(Value::as_sequence).map(Vec::len),
            Some(2)
        );
        assert_eq!(text("model").as_deref(), Some("sonnet"));
        assert_eq!(map.get("max_iter").and_then(Value::as_u64), Some(5));
        assert_eq!(map.get("color"), Some(&Value::Null));
        assert_eq!(map.len(), 6);
    }

    #[test]
    fn an_indented_list_under_a_bare_key_is_a_list_and_unknown_keys_continue() {
        let yaml = "description: Review: the diff\nallowed-tools:\n  - Read\n  - Bash(git diff:*)\nargument-hint: [pr] [priority]\n";
        let map = mapping(yaml, &["description", "allowed-tools", "argument-hint"]);
        let tools: Vec<&str> = map
            .get("allowed-tools")
            .and_then(Value::as_sequence)
            .map(|items| items.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        assert_eq!(tools, ["Read", "Bash(git diff:*)"]);
        assert_eq!(
            map.get("argument-hint").and_then(Value::as_str),
            Some("[pr] [priority]")
        );
        assert_eq!(
            map.get("description").and_then(Value::as_str),
            Some("Review: the diff")
        );
    }
}
