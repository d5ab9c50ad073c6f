//! A front matter that is not YAML, read line by line as Claude Code has read agent files:
//! many published ones hold an unquoted `: ` in their description (`Examples: <example>
//! Context: … user: "…"`), which no YAML parser accepts.
//!
//! A line that starts with a known key and a colon starts an entry; every other line
//! continues the entry before it. An entry's value is what YAML reads of it alone (a quoted
//! string, a list, a number) when that is not a mapping, else its text as written.

use serde_yaml_ng::{Mapping, Value};

/// The keys that start an entry: odek's and Claude Code's.
const KEYS: &[&str] = &[
    "name",
    "description",
    "tools",
    "model",
    "provider",
    "max_iter",
    "trust_level",
    "color",
    "permissionMode",
    "disallowedTools",
    "skills",
    "hooks",
    "mcpServers",
];

/// The entries of `yaml`, read line by line (see the module's comment).
pub fn mapping(yaml: &str) -> Mapping {
    let mut entries: Vec<(&str, String)> = Vec::new();
    for line in yaml.lines() {
        match line.split_once(':').filter(|(key, _)| KEYS.contains(key)) {
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
    let text = text.trim();
    if text.is_empty() {
        return Value::Null;
    }
    match serde_yaml_ng::from_str::<Value>(text) {
        Ok(Value::Mapping(_) | Value::Tagged(_)) | Err(_) => Value::String(text.to_string()),
        Ok(value) => value,
    }
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
        let map = mapping(yaml);
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
}
