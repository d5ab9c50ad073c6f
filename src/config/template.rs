//! Starting configurations written by `odek init` (and `config.example.json`, which must equal
//! the global template — a test keeps them in step), both derived from the settings table.

use serde_json::{Map, Value};

use super::layers::insert_at;
use super::settings::SETTINGS;

/// The full global configuration: every key with its default (or the row's example: the
/// API key and the bot token read from the environment through substitution, so the file
/// itself never holds a secret).
pub fn global_template() -> String {
    let mut root = Map::new();
    for s in SETTINGS.iter() {
        insert_at(&mut root, s.key, s.template_value());
    }
    pretty(&Value::Object(root))
}

/// A project `odek.json`: the rows marked for it, all of which a project may set (it can
/// lower limits and opt out, never change the endpoint, the key, the system prompt or the
/// approval policy).
pub fn project_template() -> String {
    let mut root = Map::new();
    for s in SETTINGS.iter().filter(|s| s.in_project_template) {
        insert_at(&mut root, s.key, s.template_value());
    }
    pretty(&Value::Object(root))
}

fn pretty(value: &Value) -> String {
    let mut s = serde_json::to_string_pretty(value).unwrap_or_default();
    s.push('\n');
    s
}
