//! The configuration's error: always names the file (or variable), the key and what was expected.

use std::path::PathBuf;

/// Largest configuration file accepted.
pub const MAX_CONFIG_BYTES: u64 = 5 * 1024 * 1024;

/// A configuration error: always names the file (or variable), the key and what was expected.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("config {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is larger than [`MAX_CONFIG_BYTES`].
    #[error("config {path}: file is {size} bytes, over the {MAX_CONFIG_BYTES}-byte limit")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
    },
    /// The file is not valid JSON.
    #[error("config {path}: invalid JSON at line {line}, column {column}: {message}")]
    InvalidJson {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the parser said.
        message: String,
    },
    /// A key holds a value of the wrong type or an invalid value.
    #[error("config {origin}: {key}: {message}")]
    InvalidValue {
        /// The file path or environment variable.
        origin: String,
        /// JSON path of the key, e.g. `planning.max_steps`.
        key: String,
        /// What was expected.
        message: String,
    },
}

impl crate::error::Classified for ConfigError {
    fn kind(&self) -> crate::error::ErrorKind {
        match self {
            ConfigError::Io { .. } => crate::error::ErrorKind::Io,
            ConfigError::TooLarge { .. }
            | ConfigError::InvalidJson { .. }
            | ConfigError::InvalidValue { .. } => crate::error::ErrorKind::Config,
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            ConfigError::Io { .. } => Some(
                "odek reads <home>/config.json and ./odek.json: make the one named readable, or move it aside",
            ),
            ConfigError::TooLarge { .. } | ConfigError::InvalidJson { .. } => {
                Some("fix the file named (config.example.json shows every key), or move it aside")
            }
            ConfigError::InvalidValue { .. } => Some(super::settings::SETTINGS_HINT),
        }
    }
}

impl crate::error::Classified for super::mcp::McpConfigError {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::Config
    }

    fn hint(&self) -> Option<&'static str> {
        Some("the entries of mcp_servers: docs/MCP.md")
    }
}
