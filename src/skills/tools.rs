//! `skill_load` and `skill_list`: the model reads a skill's instructions when it needs them,
//! and the names and descriptions the listing had no room for.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use super::{Catalog, Skill};
use crate::tools::{Tool, ToolContext, ToolError, decode_args};

/// `skill_load`'s name.
pub const LOAD_TOOL: &str = crate::tools::catalog::SKILL_LOAD.name;
/// `skill_list`'s name.
pub const LIST_TOOL: &str = crate::tools::catalog::SKILL_LIST.name;
/// Longest `skill_load` result (a `SKILL.md` is at most 256 KiB; the format advises under
/// 5,000 tokens).
const MAX_LOAD_BYTES: usize = 48 * 1024;
/// Files of a skill's folder named in `skill_load`'s answer.
const MAX_FILES_SHOWN: usize = 40;

/// The two tools of a turn, over the turn's catalog.
pub fn skill_tools(catalog: Arc<Catalog>) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(SkillLoadTool {
            catalog: catalog.clone(),
        }),
        Arc::new(SkillListTool { catalog }),
    ]
}

/// `skill_load {"name"}`.
pub struct SkillLoadTool {
    catalog: Arc<Catalog>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LoadArgs {
    name: String,
}

impl SkillLoadTool {
    /// The offered skill called `name`.
    fn skill(&self, name: &str) -> Result<&Skill, ToolError> {
        self.catalog
            .get(name)
            .filter(|s| s.offered())
            .ok_or_else(|| {
                ToolError::new(format!(
                    "skill_load: no skill named \"{name}\" is available (skill_list shows the ones that are)"
                ))
            })
    }
}

#[async_trait]
impl Tool for SkillLoadTool {
    fn name(&self) -> &str {
        LOAD_TOOL
    }

    fn description(&self) -> &str {
        "Load a skill's instructions (see the skills listing): its body and folder."
    }

    fn parameters(&self) -> Value {
        crate::tools::schema(
            r#"{
              "type":"object",
              "properties":{"name":{"type":"string"}},
              "required":["name"]
            }"#,
        )
    }

    fn untrusted_source(&self, args: &Value) -> Option<String> {
        let name = args.get("name").and_then(Value::as_str).unwrap_or_default();
        match self.catalog.get(name) {
            Some(skill) if skill.trusted() => None,
            _ => Some(format!("skill:{name}")),
        }
    }

    fn summary(&self, args: &Value) -> String {
        args.get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    }

    fn output_limit(&self, _args: &Value) -> usize {
        MAX_LOAD_BYTES
    }

    async fn call(&self, args: &str, _ctx: &ToolContext) -> Result<String, ToolError> {
        let args: LoadArgs = decode_args(LOAD_TOOL, args)?;
        let skill = self.skill(&args.name)?.clone();
        // Hashing a trusted project skill's folder reads every file: off the async threads.
        let catalog = self.catalog.clone();
        tokio::task::spawn_blocking(move || {
            let body = catalog
                .body(&skill)
                .map_err(|e| ToolError::new(format!("skill_load: {e}")))?;
            Ok(loaded(&skill, &body))
        })
        .await
        .map_err(|e| ToolError::new(format!("skill_load: {e}")))?
    }
}

/// What `skill_load` answers: the folder, what `allowed-tools` says, the files beside
/// `SKILL.md`, the body.
pub fn loaded(skill: &Skill, body: &str) -> String {
    let mut out = format!("Skill {} — folder: {}\n", skill.name(), skill.dir.display());
    if !skill.front.allowed_tools.is_empty() {
        out.push_str(&format!(
            "allowed-tools (what the skill expects; odek's policy still decides): {}\n",
            skill.front.allowed_tools.join(", ")
        ));
    }
    let files = folder_files(&skill.dir);
    if !files.is_empty() {
        out.push_str(&format!("Files: {}\n", files.join(", ")));
    }
    out.push('\n');
    out.push_str(body.trim());
    out
}

/// The files of a skill's folder besides `SKILL.md`, relative, sorted, at most
/// [`MAX_FILES_SHOWN`] (then a count).
fn folder_files(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                pending.push(path);
            } else if let Ok(relative) = path.strip_prefix(dir) {
                files.push(relative.display().to_string());
            }
        }
        if files.len() > 10 * MAX_FILES_SHOWN {
            break;
        }
    }
    files.retain(|f| f != super::SKILL_FILE);
    files.sort();
    if files.len() > MAX_FILES_SHOWN {
        let more = files.len() - MAX_FILES_SHOWN;
        files.truncate(MAX_FILES_SHOWN);
        files.push(format!("…{more} more"));
    }
    files
}

/// `skill_list {"filter"}`.
pub struct SkillListTool {
    catalog: Arc<Catalog>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    #[serde(default)]
    filter: Option<String>,
}

#[async_trait]
impl Tool for SkillListTool {
    fn name(&self) -> &str {
        LIST_TOOL
    }

    fn description(&self) -> &str {
        "List available skills (name: description), optionally filtered by a word."
    }

    fn parameters(&self) -> Value {
        crate::tools::schema(
            r#"{
              "type":"object",
              "properties":{"filter":{"type":"string"}}
            }"#,
        )
    }

    async fn call(&self, args: &str, _ctx: &ToolContext) -> Result<String, ToolError> {
        let args: ListArgs = decode_args(LIST_TOOL, args)?;
        let filter = args.filter.unwrap_or_default().to_lowercase();
        let matching: Vec<String> = self
            .catalog
            .offered()
            .filter(|s| {
                filter.is_empty()
                    || s.name().contains(&filter)
                    || s.front.description.to_lowercase().contains(&filter)
            })
            .map(|s| {
                let description: Vec<&str> = s.front.description.split_whitespace().collect();
                format!("- {}: {}", s.name(), description.join(" "))
            })
            .collect();
        if matching.is_empty() {
            return Ok(if filter.is_empty() {
                "No skills are available.".into()
            } else {
                format!("No skill matches \"{filter}\".")
            });
        }
        Ok(format!(
            "{} skill(s):\n{}",
            matching.len(),
            matching.join("\n")
        ))
    }
}
