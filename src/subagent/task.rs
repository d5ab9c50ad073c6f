//! The task file the parent writes for one child: private (0600), removed afterwards.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::policy::DangerClass;

/// Largest task file read.
const MAX_TASK_BYTES: u64 = 1024 * 1024;

/// How far a child is trusted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trust {
    /// Its context is wrapped untrusted, it may only read and write in the working
    /// directory, it gets no MCP tools and nobody to ask (the default).
    #[default]
    Untrusted,
    /// The parent's policy; what would ask goes to the parent's approver.
    Trusted,
}

/// One delegated task, as the child reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskFile {
    /// What to achieve.
    pub goal: String,
    /// What the child should know (the plan step, constraints, file names).
    #[serde(default)]
    pub context: String,
    /// How to go about it.
    #[serde(default)]
    pub guidance: String,
    /// How far the child is trusted.
    #[serde(default)]
    pub trust_level: Trust,
    /// The riskiest class the child may run; every class ranked above is denied.
    #[serde(default)]
    pub max_risk: Option<DangerClass>,
    /// The task's place in its batch (1-based) and the batch's size, for labels.
    pub index: usize,
    /// How many tasks the batch has.
    pub total: usize,
    /// The parent's session, recorded in the child's.
    #[serde(default)]
    pub parent_session: Option<String>,
    /// Model calls the child may make.
    pub max_iter: u32,
    /// Wall-clock limit of the child's run, in seconds.
    pub timeout_seconds: u64,
    /// The parent's model (its flags are not in the child's environment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The parent's endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The parent's resolved `dangerous` policy (its flags included: `--allow`, `--yolo`),
    /// the base of the child's; absent = the child's own configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<crate::policy::DangerPolicy>,
    /// Whether the parent's shell commands run in the sandbox (the child's do the same).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<bool>,
    /// The parent's tool selection (the child offers no tool the parent does not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<crate::config::ToolsConfig>,
    /// Whether the parent plans (the child gets its own `plan` tool exactly then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planning: Option<bool>,
    /// A trusted child whose parent has someone to ask: what would ask goes to the parent
    /// (request lines on stdout, answers on stdin). Otherwise nobody is asked.
    #[serde(default)]
    pub ask_parent: bool,
}

/// Why a task file cannot be used (a contract error: exit 3).
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// It could not be read.
    #[error("task file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// It is too large.
    #[error("task file {path} is {size} bytes, over the {MAX_TASK_BYTES}-byte limit")]
    TooLarge {
        /// The file.
        path: String,
        /// Its size.
        size: u64,
    },
    /// It is not a task.
    #[error("task file {path}: {reason}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
}

impl TaskFile {
    /// Reads and checks the task file at `path`.
    pub fn read(path: &Path) -> Result<TaskFile, TaskError> {
        let shown = path.display().to_string();
        let meta = std::fs::metadata(path).map_err(|source| TaskError::Read {
            path: shown.clone(),
            source,
        })?;
        if meta.len() > MAX_TASK_BYTES {
            return Err(TaskError::TooLarge {
                path: shown,
                size: meta.len(),
            });
        }
        let text = std::fs::read_to_string(path).map_err(|source| TaskError::Read {
            path: shown.clone(),
            source,
        })?;
        let invalid = |reason: String| TaskError::Invalid {
            path: shown.clone(),
            reason,
        };
        let task: TaskFile = serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        task.check().map_err(invalid)?;
        Ok(task)
    }

    /// The limits and fields every task must respect.
    fn check(&self) -> Result<(), String> {
        if self.goal.trim().is_empty() {
            return Err("goal is empty".into());
        }
        if self.index == 0 || self.index > self.total {
            return Err(format!(
                "index {} is not within 1..={}",
                self.index, self.total
            ));
        }
        if self.max_iter == 0 || self.timeout_seconds == 0 {
            return Err("max_iter and timeout_seconds must be at least 1".into());
        }
        Ok(())
    }

    /// The task's label in prompts and lines: `sub-agent 2/3`.
    pub fn label(&self) -> String {
        format!("sub-agent {}/{}", self.index, self.total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().expect("temp");
        std::io::Write::write_all(&mut f, text.as_bytes()).expect("write");
        f
    }

    #[test]
    fn a_task_reads_with_its_defaults_and_bad_ones_say_why() {
        let f = write(
            r#"{"goal": "count the lines", "index": 2, "total": 3, "max_iter": 15, "timeout_seconds": 120}"#,
        );
        let task = TaskFile::read(f.path()).expect("reads");
        assert_eq!(task.trust_level, Trust::Untrusted);
        assert_eq!(task.max_risk, None);
        assert_eq!(task.label(), "sub-agent 2/3");
        for (text, why) in [
            ("not json", "expected"),
            (
                r#"{"goal": " ", "index": 1, "total": 1, "max_iter": 1, "timeout_seconds": 1}"#,
                "goal is empty",
            ),
            (
                r#"{"goal": "g", "index": 4, "total": 3, "max_iter": 1, "timeout_seconds": 1}"#,
                "index 4",
            ),
            (
                r#"{"goal": "g", "index": 1, "total": 1, "max_iter": 1, "timeout_seconds": 1, "extra": 1}"#,
                "unknown field",
            ),
            (
                r#"{"goal": "g", "index": 1, "total": 1, "max_iter": 1, "timeout_seconds": 1, "max_risk": "risky"}"#,
                "risky",
            ),
        ] {
            let e = TaskFile::read(write(text).path())
                .expect_err(text)
                .to_string();
            assert!(e.contains(why), "{text}: {e}");
        }
        let missing = TaskFile::read(Path::new("/nonexistent/task.json")).expect_err("missing");
        assert!(matches!(missing, TaskError::Read { .. }));
    }
}
