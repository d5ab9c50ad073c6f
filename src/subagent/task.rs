//! Reading the task file the parent wrote for one child (its format is
//! [`crate::protocol::subagent::TaskFile`]): private (0600), removed afterwards.

use std::path::Path;

use crate::protocol::subagent::{MAX_TASK_BYTES, TaskFile};

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

impl crate::error::Classified for TaskError {
    fn kind(&self) -> crate::error::ErrorKind {
        match self {
            TaskError::Read { .. } => crate::error::ErrorKind::Io,
            TaskError::TooLarge { .. } | TaskError::Invalid { .. } => {
                crate::error::ErrorKind::Usage
            }
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            TaskError::Read { .. } => None,
            _ => Some("the task file's format: docs/SUBAGENTS.md"),
        }
    }
}

/// Reads and checks the task file at `path`.
pub fn read_task_file(path: &Path) -> Result<TaskFile, TaskError> {
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
    task.check().map_err(|e| invalid(e.to_string()))?;
    Ok(task)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::subagent::Trust;

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
        let task = read_task_file(f.path()).expect("reads");
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
            let e = read_task_file(write(text).path())
                .expect_err(text)
                .to_string();
            assert!(e.contains(why), "{text}: {e}");
        }
        let missing = read_task_file(Path::new("/nonexistent/task.json")).expect_err("missing");
        assert!(matches!(missing, TaskError::Read { .. }));
    }
}
