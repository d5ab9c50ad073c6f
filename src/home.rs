//! The user's home directory, found by the `directories` crate (`$HOME`, else the password
//! database). odek's own files live under `<home>` (`$ODEK_HOME`, else `~/.odek`); this is
//! only the `~` that `~/.odek`, `sandbox_allow_write` and the system prompt refer to.

use std::path::PathBuf;

/// The user's home directory, when there is one.
pub fn user_home() -> Option<PathBuf> {
    directories::BaseDirs::new().map(|dirs| dirs.home_dir().to_path_buf())
}
