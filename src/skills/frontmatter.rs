//! A skill's `SKILL.md`: the YAML front matter between `---` lines, checked against the open
//! format's rules (the one Claude Code, Codex, Gemini CLI and goose share), and the body.
//!
//! Every rule a file breaks is reported as one sentence naming the rule; unknown keys are
//! kept, never an error, so skills written for other agents load unchanged.

use std::collections::BTreeMap;

use serde_yaml_ng::{Mapping, Value};

use super::error::Rule;

pub mod lenient;

/// Longest skill name.
pub const MAX_NAME_CHARS: usize = 64;
/// Longest description.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// Largest `SKILL.md` read.
pub const MAX_SKILL_FILE_BYTES: u64 = 256 * 1024;

/// What the front matter says, checked.
/// String keys to string values (`metadata`, `odek.trigger`).
pub type Pairs = BTreeMap<String, String>;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FrontMatter {
    /// The skill's name (equal to its folder's).
    pub name: String,
    /// What it is for and when to use it: what the model reads in the listing.
    pub description: String,
    /// `license`, when given.
    pub license: Option<String>,
    /// `compatibility`, when given (what the skill needs of its environment).
    pub compatibility: Option<String>,
    /// `metadata`: a string map (scalars are read as text).
    pub metadata: Pairs,
    /// `allowed-tools`: shown to the model, never widening the policy.
    pub allowed_tools: Vec<String>,
    /// The Go original's `odek.auto_load`: the whole body goes into every request.
    pub auto_load: bool,
    /// The Go original's `odek.trigger` (`topic`, `action`), kept for `skill show`.
    pub trigger: Pairs,
    /// Keys this version does not know, kept in their order.
    pub other_keys: Vec<String>,
}

/// A parsed `SKILL.md`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile {
    /// The front matter.
    pub front: FrontMatter,
    /// Everything after the closing `---` line.
    pub body: String,
}

/// Splits `text` into front matter and body and checks the front matter; `folder` is the
/// name of the skill's folder, which `name` must equal. The error is the rule broken.
pub fn parse(text: &str, folder: &str) -> Result<SkillFile, Rule> {
    let (yaml, body) = split(text)?;
    let map = mapping(yaml)?;
    let front = read(&map, folder)?;
    Ok(SkillFile {
        front,
        body: body.to_string(),
    })
}

/// What the listing of a skill nobody trusted takes from `text`: its name and description,
/// checked, and the body as text; every other key (`odek.auto_load`, `allowed-tools`, …) is
/// left unread, so an untrusted skill changes nothing but one line of the listing.
pub fn parse_listing(text: &str, folder: &str) -> Result<SkillFile, Rule> {
    let (yaml, body) = split(text)?;
    let map = mapping(yaml)?;
    let front = FrontMatter {
        name: required_text(&map, "name")?,
        description: required_text(&map, "description")?,
        ..FrontMatter::default()
    };
    check_name(&front.name, folder)?;
    check_description(&front.description)?;
    Ok(SkillFile {
        front,
        body: body.to_string(),
    })
}

/// The front matter of `text` as a mapping (its shape checked, parsed once per process) and
/// the body after it: what other Markdown files with front matter (agent files) read.
pub fn front_matter(text: &str) -> Result<(Mapping, &str), Rule> {
    let (yaml, body) = split(text)?;
    Ok((mapping(yaml)?, body))
}

/// The front matter's text and the body of `text`, unparsed: for readers that fall back to
/// their own reading of a front matter that is not YAML (Claude Code's agent files).
pub fn split_front_matter(text: &str) -> Result<(&str, &str), Rule> {
    split(text)
}

/// The `name` the front matter of `text` declares, when it parses and has one.
pub fn declared_name(text: &str) -> Option<String> {
    let (yaml, _) = split(text).ok()?;
    let map = mapping(yaml).ok()?;
    map.get("name")?.as_str().map(str::to_string)
}

/// Front matters parsed in this process, by a keyed hash of their text: a catalog read again
/// (every serve prompt, every `GET /api/skills`) parses each file's YAML once.
static PARSED: std::sync::Mutex<Option<ParsedCache>> = std::sync::Mutex::new(None);

/// At most this many front matters are kept (the cache starts over past it).
const MAX_CACHED: usize = 512;

struct ParsedCache {
    keys: std::hash::RandomState,
    maps: std::collections::HashMap<u64, Mapping>,
}

/// True when `yaml` was parsed and kept.
#[cfg(test)]
pub fn is_cached(yaml: &str) -> bool {
    use std::hash::BuildHasher as _;
    let cache = PARSED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    cache
        .as_ref()
        .is_some_and(|c| c.maps.contains_key(&c.keys.hash_one(yaml)))
}

/// The front matter as a mapping: its shape checked first, then parsed (or taken from the
/// cache when this text was parsed before).
fn mapping(yaml: &str) -> Result<Mapping, Rule> {
    use std::hash::BuildHasher as _;
    check_shape(yaml)?;
    let lock = || {
        PARSED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    };
    let key = {
        let mut cache = lock();
        let cache = cache.get_or_insert_with(|| ParsedCache {
            keys: std::hash::RandomState::new(),
            maps: std::collections::HashMap::new(),
        });
        let key = cache.keys.hash_one(yaml);
        if let Some(map) = cache.maps.get(&key) {
            return Ok(map.clone());
        }
        key
    };
    let value: Value = serde_yaml_ng::from_str(yaml).map_err(Rule::NotYaml)?;
    let Value::Mapping(map) = value else {
        return Err(Rule::NotAMapping);
    };
    if let Some(cache) = lock().as_mut() {
        if cache.maps.len() >= MAX_CACHED {
            cache.maps.clear();
        }
        cache.maps.insert(key, map.clone());
    }
    Ok(map)
}

/// Largest front matter: a name, a description of 1,024 characters, a few keys and lists.
pub const MAX_FRONT_MATTER_BYTES: usize = 16 * 1024;
/// Deepest nesting of the front matter's flow collections (`[`, `{`) or block indentation.
pub const MAX_FRONT_MATTER_DEPTH: usize = 16;

/// Refuses a front matter over [`MAX_FRONT_MATTER_BYTES`] or nested deeper than
/// [`MAX_FRONT_MATTER_DEPTH`], in one pass over its bytes, before the YAML parser sees it.
fn check_shape(yaml: &str) -> Result<(), Rule> {
    let too_large = Rule::FrontMatterTooLarge {
        max_bytes: MAX_FRONT_MATTER_BYTES,
        max_depth: MAX_FRONT_MATTER_DEPTH,
    };
    if yaml.len() > MAX_FRONT_MATTER_BYTES {
        return Err(too_large);
    }
    // Brackets are counted wherever they are (a quoted `[` included): a description's
    // own brackets balance or stay few, and no quote can hide a deep nesting.
    let mut depth = 0usize;
    for line in yaml.lines() {
        let indent = line.len() - line.trim_start_matches([' ', '-']).len();
        if indent / 2 > MAX_FRONT_MATTER_DEPTH {
            return Err(too_large);
        }
        for c in line.bytes() {
            match c {
                b'[' | b'{' => {
                    depth += 1;
                    if depth > MAX_FRONT_MATTER_DEPTH {
                        return Err(too_large);
                    }
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
    }
    Ok(())
}

/// The front matter's text and the body: the file starts with a `---` line and the front
/// matter ends at the next `---` (or `...`) line.
fn split(text: &str) -> Result<(&str, &str), Rule> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (first, rest) = text.split_once('\n').ok_or(Rule::NoFrontMatter)?;
    if first.trim_end() != "---" {
        return Err(Rule::NoFrontMatter);
    }
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        let bare = line.trim_end();
        if bare == "---" || bare == "..." {
            return Ok((&rest[..at], &rest[at + line.len()..]));
        }
        at += line.len();
    }
    Err(Rule::NotClosed)
}

fn read(map: &Mapping, folder: &str) -> Result<FrontMatter, Rule> {
    let mut front = FrontMatter {
        name: required_text(map, "name")?,
        description: required_text(map, "description")?,
        license: optional_text(map, "license")?,
        compatibility: optional_text(map, "compatibility")?,
        metadata: string_map(map, "metadata")?,
        allowed_tools: tool_list(map)?,
        ..FrontMatter::default()
    };
    check_name(&front.name, folder)?;
    check_description(&front.description)?;
    read_odek_block(map, &mut front)?;
    const KNOWN: [&str; 7] = [
        "name",
        "description",
        "license",
        "compatibility",
        "metadata",
        "allowed-tools",
        "odek",
    ];
    front.other_keys = map
        .keys()
        .filter_map(Value::as_str)
        .filter(|k| !KNOWN.contains(k))
        .map(str::to_string)
        .collect();
    Ok(front)
}

fn check_description(description: &str) -> Result<(), Rule> {
    let chars = description.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        return Err(Rule::DescriptionTooLong {
            chars,
            max: MAX_DESCRIPTION_CHARS,
        });
    }
    Ok(())
}

/// The rules of a name: 1–64 lowercase letters, digits and hyphens, no hyphen at either end
/// or twice in a row, equal to the folder's name.
pub fn check_name(name: &str, folder: &str) -> Result<(), Rule> {
    if name.is_empty()
        || name.chars().count() > MAX_NAME_CHARS
        || !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err(Rule::NameCharacters {
            name: name.to_string(),
            max: MAX_NAME_CHARS,
        });
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Err(Rule::NameHyphenAtEnd(name.to_string()));
    }
    if name.contains("--") {
        return Err(Rule::NameDoubleHyphen(name.to_string()));
    }
    if name != folder {
        return Err(Rule::NameNotFolder {
            name: name.to_string(),
            folder: folder.to_string(),
        });
    }
    Ok(())
}

fn required_text(map: &Mapping, key: &'static str) -> Result<String, Rule> {
    match optional_text(map, key)? {
        Some(text) if !text.trim().is_empty() => Ok(text),
        Some(_) => Err(Rule::Empty(key)),
        None => Err(Rule::Required(key)),
    }
}

fn optional_text(map: &Mapping, key: &'static str) -> Result<Option<String>, Rule> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(Rule::NotAString(key)),
    }
}

/// A scalar as text (`version: 1.0` in `metadata` is read as "1.0").
fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn string_map(map: &Mapping, key: &'static str) -> Result<Pairs, Rule> {
    let Some(value) = map.get(key).filter(|v| !v.is_null()) else {
        return Ok(BTreeMap::new());
    };
    let not_a_map = || Rule::NotAStringMap(key);
    let Value::Mapping(entries) = value else {
        return Err(not_a_map());
    };
    entries
        .iter()
        .map(|(k, v)| Some((scalar_text(k)?, scalar_text(v)?)))
        .collect::<Option<BTreeMap<_, _>>>()
        .ok_or_else(not_a_map)
}

/// `allowed-tools`: a space- or comma-separated string (the open format's and Claude Code's
/// spellings) or a list of strings.
fn tool_list(map: &Mapping) -> Result<Vec<String>, Rule> {
    let wrong = || Rule::ToolList;
    match map.get("allowed-tools") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(s
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect()),
        Some(Value::Sequence(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(wrong),
        Some(_) => Err(wrong()),
    }
}

/// The Go original's `odek:` block: `auto_load` (a bool) and `trigger` (a string map).
fn read_odek_block(map: &Mapping, front: &mut FrontMatter) -> Result<(), Rule> {
    let Some(block) = map.get("odek").filter(|v| !v.is_null()) else {
        return Ok(());
    };
    let Value::Mapping(odek) = block else {
        return Err(Rule::OdekBlock);
    };
    front.auto_load = match odek.get("auto_load") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(Rule::AutoLoad),
    };
    front.trigger = string_map(odek, "trigger").map_err(|_| Rule::Trigger)?;
    Ok(())
}

#[cfg(test)]
mod tests;
