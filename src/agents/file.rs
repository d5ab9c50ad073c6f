//! An agent file: `NAME.md` with a YAML front matter (`name`, `description`, `tools`,
//! `model`, and odek's `provider`, `max_iter`, `trust_level`) and the child's system prompt
//! as its body. Claude Code's files read unchanged: its tool names are mapped
//! ([`crate::tools::claude_names`]) and keys odek does not know (`color`, …) are kept aside,
//! never an error.

use serde_yaml_ng::{Mapping, Value};

use super::AgentRule;
use crate::protocol::subagent::Trust;
use crate::skills::Rule;
use crate::skills::frontmatter::{front_matter, split_front_matter};
use crate::tools::claude_names;

/// Largest agent file read.
pub const MAX_AGENT_FILE_BYTES: u64 = 256 * 1024;
/// Longest agent name.
pub const MAX_NAME_CHARS: usize = 64;
/// Largest `max_iter` an agent may ask for.
pub const MAX_ITER_LIMIT: u32 = 10_000;

/// The note of a front matter that is not YAML.
pub const LENIENT_NOTE: &str = "the front matter is not valid YAML (an unquoted `: ` in a value?): read line by line, as Claude Code reads it; quoting the value makes it YAML";

/// The keys odek reads; every other key is kept in [`AgentFile::other_keys`].
const KNOWN: [&str; 7] = [
    "name",
    "description",
    "tools",
    "model",
    "provider",
    "max_iter",
    "trust_level",
];

/// A parsed, checked agent file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentFile {
    /// `name` (the file's stem when the front matter has none).
    pub name: String,
    /// `description`: when to use the agent (what the model reads).
    pub description: String,
    /// `tools` read as odek's names (`None`: every tool the parent may give).
    pub tools: Option<Vec<String>>,
    /// What reading the file found to say: a front matter read line by line, unknown tool
    /// names, dropped patterns.
    pub notes: Vec<String>,
    /// `model` as written (`inherit`, a Claude Code alias or a model id).
    pub model: Option<String>,
    /// `provider`: an odek provider id.
    pub provider: Option<String>,
    /// `max_iter`: the child's model calls.
    pub max_iter: Option<u32>,
    /// `trust_level`.
    pub trust_level: Option<Trust>,
    /// The body: the child's system prompt, trimmed.
    pub prompt: String,
    /// Front matter keys odek does not read (`color`, …), in their order.
    pub other_keys: Vec<String>,
}

/// Claude Code's keys odek does not read: with [`KNOWN`], the keys that start an entry of a
/// front matter read line by line.
const CLAUDE_ONLY: [&str; 6] = [
    "color",
    "permissionMode",
    "disallowedTools",
    "skills",
    "hooks",
    "mcpServers",
];

/// Reads the text of an agent file whose stem is `stem`; the error is the rule broken.
pub fn parse(text: &str, stem: &str) -> Result<AgentFile, AgentRule> {
    let (yaml, body) = split_front_matter(text)?;
    let mut notes = Vec::new();
    let map = match front_matter(text) {
        Ok((map, _)) => map,
        Err(Rule::NotYaml(_)) => {
            notes.push(LENIENT_NOTE.to_string());
            crate::skills::frontmatter::lenient::mapping(
                yaml,
                &[&KNOWN[..], &CLAUDE_ONLY[..]].concat(),
            )
        }
        Err(rule) => return Err(rule.into()),
    };
    let name = optional_text(&map, "name")?.unwrap_or_else(|| stem.to_string());
    check_name(&name)?;
    let description = optional_text(&map, "description")?.unwrap_or_default();
    if description.trim().is_empty() {
        return Err(Rule::Required("description").into());
    }
    let entries = claude_names::entries_of(map.get("tools")).map_err(AgentRule::Tools)?;
    let mapped = entries.map(claude_names::map);
    let prompt = body.trim().to_string();
    if prompt.is_empty() {
        return Err(AgentRule::EmptyPrompt);
    }
    Ok(AgentFile {
        name,
        description: description.trim().to_string(),
        notes: notes
            .into_iter()
            .chain(mapped.as_ref().map(|m| m.warnings()).unwrap_or_default())
            .collect(),
        tools: mapped.map(|m| m.tools),
        model: optional_text(&map, "model")?.filter(|m| !m.trim().is_empty()),
        provider: optional_text(&map, "provider")?.filter(|p| !p.trim().is_empty()),
        max_iter: max_iter(&map)?,
        trust_level: trust_level(&map)?,
        prompt,
        other_keys: map
            .keys()
            .filter_map(Value::as_str)
            .filter(|k| !KNOWN.contains(k))
            .map(str::to_string)
            .collect(),
    })
}

/// The rules of a name: 1–64 lowercase ASCII letters, digits, hyphens and underscores.
pub fn check_name(name: &str) -> Result<(), AgentRule> {
    let fine = !name.is_empty()
        && name.len() <= MAX_NAME_CHARS
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if fine {
        Ok(())
    } else {
        Err(AgentRule::Name {
            name: crate::text::visible(name, false).into_owned(),
            max: MAX_NAME_CHARS,
        })
    }
}

fn optional_text(map: &Mapping, key: &'static str) -> Result<Option<String>, AgentRule> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(Rule::NotAString(key).into()),
    }
}

fn max_iter(map: &Mapping) -> Result<Option<u32>, AgentRule> {
    let wrong = AgentRule::MaxIter(MAX_ITER_LIMIT);
    match map.get("max_iter") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| (1..=MAX_ITER_LIMIT).contains(n))
            .map(Some)
            .ok_or(wrong),
        Some(_) => Err(wrong),
    }
}

fn trust_level(map: &Mapping) -> Result<Option<Trust>, AgentRule> {
    match map.get("trust_level") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s == "untrusted" => Ok(Some(Trust::Untrusted)),
        Some(Value::String(s)) if s == "trusted" => Ok(Some(Trust::Trusted)),
        Some(_) => Err(AgentRule::TrustLevel),
    }
}
