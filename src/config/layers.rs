//! The stack of layers — defaults, the global file, the project file, the environment, the
//! flags — each a list of values by [`Setting`], merged in that order onto the defaults
//! while every value is tagged with the layer it came from. A project's values pass its
//! row's rule first; the clamps of the number rows run at the end.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::error::ConfigError;
use super::mcp::{McpServerConfig, PartialMcpServer};
use super::settings::{Kind, Merge, Project, SETTINGS, Setting, one_of, setting};
use super::source::Source;
use super::values::Config;
use crate::danger_policy::Action;

/// One layer: values by setting, with where they came from.
pub(super) struct Layer {
    pub source: Source,
    pub values: Vec<(&'static Setting, Value)>,
}

/// Values set on the command line, by key (`planning.enabled`, `dangerous.classes`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides(Vec<(&'static str, Value)>);

impl Overrides {
    /// Sets `key` (a row of the settings table) to `value`.
    pub fn set(&mut self, key: &'static str, value: impl Into<Value>) -> &mut Self {
        debug_assert!(setting(key).is_some(), "no setting {key}");
        self.0.push((key, value.into()));
        self
    }

    /// True when nothing is set.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value given for `key`, if any.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.iter().rev().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// These values as a layer of `source` (the flags, or a sub-agent's task).
    pub(super) fn layer(&self, source: Source) -> Layer {
        Layer {
            source,
            values: self
                .0
                .iter()
                .filter_map(|(k, v)| setting(k).map(|s| (s, v.clone())))
                .collect(),
        }
    }
}

/// The values a configuration file's JSON holds, by setting. `null` and `""` count as unset.
pub(super) fn file_layer(value: &Value, source: Source) -> Layer {
    let values = SETTINGS
        .iter()
        .filter_map(|s| {
            let v = value
                .pointer(&s.pointer())
                .or_else(|| legacy_value(value, s.key))?;
            let unset = v.is_null() || v.as_str() == Some("");
            (!unset).then(|| (s, v.clone()))
        })
        .collect();
    Layer { source, values }
}

/// A key read where earlier versions kept it: `"compaction": true|false` is
/// `compaction.enabled`.
fn legacy_value<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    let old = value.get("compaction").filter(|v| v.is_boolean());
    (key == "compaction.enabled").then_some(old).flatten()
}

/// The `ODEK_*` variables of the settings that have one. An invalid value is an error
/// naming the variable.
pub(super) fn env_layer(env: &BTreeMap<String, String>) -> Result<Layer, ConfigError> {
    let mut values = Vec::new();
    for s in SETTINGS.iter() {
        let Some(var) = s.env else { continue };
        let Some(text) = env.get(var).filter(|v| !v.is_empty()) else {
            continue;
        };
        let value = s
            .parse_env(text)
            .map_err(|expected| ConfigError::InvalidValue {
                origin: "environment".to_string(),
                key: format!("{var}={text:?}"),
                message: format!("expected {expected}"),
            })?;
        values.push((s, value));
    }
    Ok(Layer {
        source: Source::Env(String::new()),
        values,
    })
}

/// Accumulates layers in precedence order.
pub(super) struct Merger {
    config: Config,
    sources: BTreeMap<String, Source>,
}

/// Where the files are, for the project's warnings.
pub(super) struct Places<'a> {
    pub global: &'a Path,
}

impl Merger {
    pub(super) fn new() -> Self {
        Merger {
            config: Config::default(),
            sources: BTreeMap::new(),
        }
    }

    /// Applies one layer: every value replaces (or adds to) what is there; a project's
    /// values first pass their row's rule.
    pub(super) fn apply(
        &mut self,
        layer: &Layer,
        places: &Places<'_>,
        warnings: &mut Vec<String>,
    ) -> Result<(), ConfigError> {
        let mut warned_groups: Vec<&str> = Vec::new();
        for (s, value) in &layer.values {
            let source = match &layer.source {
                Source::Env(_) => Source::Env(s.env.unwrap_or("ODEK_*").to_string()),
                other => other.clone(),
            };
            // A sub-agent's task replaces what is below it: its lists and maps are the
            // child's whole lists and maps, not additions to the parent's.
            let replaces = source == Source::SubagentTask;
            if s.key == "mcp_servers" {
                if replaces {
                    self.config.mcp_servers.clear();
                    self.sources.insert(s.key.to_string(), source.clone());
                }
                self.apply_mcp(value, &source, places, warnings)?;
                continue;
            }
            if let Source::Project(path) = &source
                && let Some(warning) = self.project_refusal(s, value, path, places)
            {
                match s.group {
                    Some(group) if warned_groups.contains(&group) => {}
                    group => {
                        warnings.push(warning);
                        warned_groups.extend(group);
                    }
                }
                continue;
            }
            let value = if replaces {
                value.clone()
            } else {
                self.merged(s, value.clone())
            };
            let origin = origin(&source);
            check_choice(s, &value).map_err(|got| ConfigError::InvalidValue {
                origin: origin.clone(),
                key: s.key.to_string(),
                message: got.to_string(),
            })?;
            (s.set)(&mut self.config, value).map_err(|e| ConfigError::InvalidValue {
                origin,
                key: s.key.to_string(),
                message: e.to_string(),
            })?;
            self.sources.insert(s.key.to_string(), source);
        }
        Ok(())
    }

    /// The value to set: the layer's, or the layer's added to what is there.
    fn merged(&self, s: &Setting, value: Value) -> Value {
        match (s.merge, (s.get)(&self.config), value) {
            (Merge::Append, Value::Array(mut below), Value::Array(more)) => {
                for item in more {
                    if !below.contains(&item) {
                        below.push(item);
                    }
                }
                Value::Array(below)
            }
            (Merge::Extend, Value::Object(mut below), Value::Object(more)) => {
                below.extend(more);
                Value::Object(below)
            }
            (_, _, value) => value,
        }
    }

    /// Why a project's value is ignored (the warning line), or `None` when it applies.
    fn project_refusal(
        &self,
        s: &Setting,
        value: &Value,
        path: &Path,
        places: &Places<'_>,
    ) -> Option<String> {
        let p = path.display();
        let g = places.global.display();
        let below = (s.get)(&self.config);
        let shown = |v: &Value| match v {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        match s.project {
            Project::Anything => None,
            Project::Never => {
                let what = match (s.group, s.project_note) {
                    (Some(group), _) => group.to_string(),
                    (None, Some(note)) => format!("{} ({note})", s.key),
                    (None, None) => s.key.to_string(),
                };
                let g = g.to_string();
                let mut places = vec![g.as_str()];
                places.extend(s.env);
                places.extend(s.flag);
                if s.group.is_some() {
                    places.truncate(1);
                }
                Some(format!(
                    "odek: WARNING: ignoring {what} from project config ({p}); set it via {}",
                    one_of(&places)
                ))
            }
            Project::OnlyTo(to) => {
                let to: Value = serde_json::from_str(to).unwrap_or(Value::Null);
                // Towards `to`, or no change: a choice of three never moves sideways.
                if *value == to || *value == below {
                    return None;
                }
                let v = shown(value);
                Some(match s.project_note {
                    Some(note) if note.starts_with('—') => format!(
                        "odek: WARNING: ignoring {}={v} from project config ({p}) {}",
                        s.key,
                        note.replace("{global}", &g.to_string())
                    ),
                    Some(note) => {
                        let mut places = vec!["the global config"];
                        places.extend(s.env);
                        places.extend(s.flag);
                        format!(
                            "odek: WARNING: ignoring {}={v} ({note}) from project config ({p}); set it via {}",
                            s.key,
                            one_of(&places)
                        )
                    }
                    None => format!(
                        "odek: WARNING: ignoring {}={v} from project config ({p}) — it is {} in {g}",
                        s.key,
                        shown(&to)
                    ),
                })
            }
            Project::OnlyLower => {
                let (v, current) = (value.as_u64()?, below.as_u64()?);
                (v > current).then(|| {
                    format!(
                        "odek: WARNING: ignoring {}={v} from project config ({p}) — it would raise the global cap {current}",
                        s.key
                    )
                })
            }
            Project::OnlyLowerLimit => {
                // Whole numbers and amounts (`limits.max_cost_usd`) alike; a value that is not
                // a number is refused by the row's own check.
                let (v, current) = (value.as_f64()?, below.as_f64()?);
                // 0 means "no limit": lowering is any positive value under the current one,
                // or any positive value when there is no limit yet.
                let lowers = v > 0.0 && (current == 0.0 || v <= current);
                let shown = if current == 0.0 {
                    "none".to_string()
                } else {
                    current.to_string()
                };
                (!lowers).then(|| {
                    format!(
                        "odek: WARNING: ignoring {}={v} from project config ({p}) — a project may only lower limits (current: {shown})",
                        s.key
                    )
                })
            }
        }
    }

    /// `mcp_servers`: an entry with a transport defines the server; one without changes only
    /// the fields it sets on a server defined below. A project may only disable a server:
    /// anything else it says is ignored with a warning, and an entry for a server that is
    /// not defined is dropped.
    fn apply_mcp(
        &mut self,
        value: &Value,
        source: &Source,
        places: &Places<'_>,
        warnings: &mut Vec<String>,
    ) -> Result<(), ConfigError> {
        let servers: BTreeMap<String, PartialMcpServer> =
            decode(value.clone()).map_err(|(key, message)| ConfigError::InvalidValue {
                origin: origin(source),
                key: format!("mcp_servers{key}"),
                message,
            })?;
        let project = matches!(source, Source::Project(_));
        for (name, mut p) in servers {
            if let Source::Project(path) = source {
                let disables = p.disabled == Some(true);
                let nothing_else = PartialMcpServer {
                    disabled: p.disabled,
                    ..PartialMcpServer::default()
                } == p;
                if !(disables && nothing_else) {
                    warnings.push(format!(
                        "odek: WARNING: ignoring mcp_servers.{name} (a project may only disable a server, with \"disabled\": true) from project config ({}); set it via {}",
                        path.display(),
                        places.global.display()
                    ));
                }
                if !disables {
                    continue;
                }
                p = PartialMcpServer {
                    disabled: Some(true),
                    ..PartialMcpServer::default()
                };
            }
            let key = format!("mcp_servers.{name}");
            let defines = p.command.is_some() || p.url.is_some();
            let servers = &mut self.config.mcp_servers;
            if defines || (!servers.contains_key(&name) && !project) {
                // A new entry without a transport stays, so validation names what is missing.
                servers.insert(name.clone(), McpServerConfig::from_partial(&p));
            } else if let Some(server) = servers.get_mut(&name) {
                if let Some(d) = p.disabled {
                    server.disabled = d;
                }
                if let Some(t) = p.timeout_seconds {
                    server.timeout_seconds = t;
                }
                if let Some(a) = &p.auto_approve {
                    server.auto_approve = a.clone();
                }
            } else {
                continue;
            }
            self.sources.insert(key, source.clone());
        }
        Ok(())
    }

    /// The informal `NO_COLOR` convention (any non-empty value) turns colour off.
    pub(super) fn apply_no_color_env(&mut self, env: &BTreeMap<String, String>) {
        if env.get("NO_COLOR").is_some_and(|v| !v.is_empty()) && !self.config.no_color {
            self.config.no_color = true;
            self.sources
                .insert("no_color".into(), Source::Env("NO_COLOR".into()));
        }
    }

    /// `dangerous.action: allow` from the environment or a flag (`--yolo`) allows every
    /// class but `blocked`: the class entries of the files that do not allow are lifted,
    /// and what did it is recorded (`dangerous_override`).
    pub(super) fn apply_yolo(&mut self) {
        if self.config.dangerous.action != Some(Action::Allow) {
            return;
        }
        let (by, source) = match self.sources.get("dangerous.action") {
            Some(Source::Env(_)) => (
                "ODEK_DANGEROUS_ACTION=allow",
                Source::Env("ODEK_DANGEROUS_ACTION".into()),
            ),
            Some(Source::Flag) => ("--yolo", Source::Flag),
            _ => return,
        };
        let flag_classes: Vec<_> = self
            .config
            .dangerous
            .classes
            .iter()
            .filter(|(_, a)| **a == Action::Allow)
            .map(|(c, a)| (*c, *a))
            .collect();
        self.config.dangerous.classes = flag_classes.into_iter().collect();
        self.config.dangerous_override = Some(by.to_string());
        self.sources.insert("dangerous_override".into(), source);
    }

    pub(super) fn finish(self) -> (Config, BTreeMap<String, Source>) {
        (self.config, self.sources)
    }
}

/// Clamps out-of-range numbers into their row's range, with one warning line each.
pub(super) fn clamp(
    config: &mut Config,
    sources: &BTreeMap<String, Source>,
    warnings: &mut Vec<String>,
) {
    let from = |key: &str| sources.get(key).cloned().unwrap_or(Source::Default);
    for s in SETTINGS.iter() {
        let value = (s.get)(config);
        let clamped = match (s.kind, &value) {
            (
                Kind::Int {
                    range: Some((min, max)),
                },
                Value::Number(n),
            ) => n
                .as_u64()
                .filter(|v| !(min..=max).contains(v))
                .map(|v| (v.to_string(), Value::from(v.clamp(min, max)))),
            (Kind::Float { range: (min, max) }, Value::Number(n)) => {
                n.as_f64().filter(|v| !(min..=max).contains(v)).map(|v| {
                    let c = if v.is_nan() { min } else { v.clamp(min, max) };
                    (v.to_string(), Value::from(c))
                })
            }
            _ => None,
        };
        if let Some((was, now)) = clamped {
            warnings.push(format!(
                "odek: warning: {}={was} (from {}) is outside {}; using {now}",
                s.key,
                from(s.key),
                s.range_text().unwrap_or_default()
            ));
            let _ = (s.set)(config, now);
        }
    }
    for (name, server) in &mut config.mcp_servers {
        let key = format!("mcp_servers.{name}.timeout_seconds");
        if !(1..=600).contains(&server.timeout_seconds) {
            let clamped = server.timeout_seconds.clamp(1, 600);
            warnings.push(format!(
                "odek: warning: {key}={} (from {}) is outside 1..600; using {clamped}",
                server.timeout_seconds,
                from(&format!("mcp_servers.{name}"))
            ));
            server.timeout_seconds = clamped;
        }
    }
}

/// A choice must be one of its words (a field that holds a plain string, like `thinking`,
/// would take anything).
fn check_choice(s: &Setting, value: &Value) -> Result<(), NotAChoice> {
    let Kind::Choice(options) = s.kind else {
        return Ok(());
    };
    match value.as_str() {
        Some(word) if options.contains(&word) => Ok(()),
        // Unset (a sub-agent's task resets a choice the parent set; files never give null).
        None if value.is_null() => Ok(()),
        _ => Err(NotAChoice {
            options,
            got: value.clone(),
        }),
    }
}

/// A value that is none of its setting's words.
#[derive(Debug, thiserror::Error)]
#[error("expected one of {}, got {got}", options.join(", "))]
struct NotAChoice {
    options: &'static [&'static str],
    got: Value,
}

impl crate::error::Classified for NotAChoice {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::Config
    }

    fn hint(&self) -> Option<&'static str> {
        Some(super::settings::SETTINGS_HINT)
    }
}

fn origin(source: &Source) -> String {
    match source {
        Source::Global(p) | Source::Project(p) => p.display().to_string(),
        Source::Env(_) => "environment".into(),
        Source::Flag => "flag".into(),
        Source::SubagentTask => "subagent task".into(),
        Source::Agent(name) => format!("agent {name}"),
        Source::Provider(id) => format!("provider {id}"),
        Source::Default => "default".into(),
    }
}

/// Decodes `value`, naming the JSON path of a wrong value.
fn decode<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, (String, String)> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let key = if path == "." {
            String::new()
        } else {
            format!(".{path}")
        };
        (key, e.into_inner().to_string())
    })
}

/// The keys of `value` (a file's JSON) that no setting knows, as dotted paths.
pub(super) fn unknown_keys(value: &Value) -> Vec<String> {
    let mut unknown = Vec::new();
    collect_unknown(value, "", &mut unknown);
    unknown
}

fn collect_unknown(value: &Value, prefix: &str, unknown: &mut Vec<String>) {
    let Some(map) = value.as_object() else { return };
    for (key, child) in map {
        let full = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match key_status(&full) {
            KeyStatus::Leaf => {}
            KeyStatus::Section => collect_unknown(child, &full, unknown),
            KeyStatus::Unknown => unknown.push(full),
        }
    }
}

enum KeyStatus {
    Leaf,
    Section,
    Unknown,
}

fn key_status(full: &str) -> KeyStatus {
    let section = format!("{full}.");
    let tolerated = super::settings::TOLERATED_SECTIONS
        .iter()
        .any(|t| full.starts_with(&format!("{t}.")));
    for s in SETTINGS.iter() {
        // A setting is a leaf, and so is everything inside an object setting.
        if s.key == full || (s.kind == Kind::Object && full.starts_with(&format!("{}.", s.key))) {
            return KeyStatus::Leaf;
        }
        if s.key.starts_with(&section) {
            return KeyStatus::Section;
        }
    }
    if tolerated {
        KeyStatus::Leaf
    } else {
        KeyStatus::Unknown
    }
}

/// The dotted paths a file may hold, for the unknown-key suggestions.
pub fn known_keys() -> Vec<&'static str> {
    SETTINGS.iter().map(|s| s.key).collect()
}

/// Puts `value` at dotted `key` inside `root` (templates).
pub(super) fn insert_at(root: &mut Map<String, Value>, key: &str, value: Value) {
    match key.split_once('.') {
        None => {
            root.insert(key.to_string(), value);
        }
        Some((head, rest)) => {
            let child = root
                .entry(head.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(map) = child {
                insert_at(map, rest, value);
            }
        }
    }
}
