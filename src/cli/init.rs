//! `odek init`: writes a starting configuration.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::PathBuf;

use crate::error::Context;
use clap::Args;

use super::Exit;
use crate::config::{GLOBAL_FILE, PROJECT_FILE, home_dir_from, template};

/// Arguments of `odek init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Write the global config (<home>/config.json: every key, API key from ODEK_API_KEY)
    /// instead of the project's ./odek.json
    #[arg(long, short = 'g')]
    global: bool,
    /// Overwrite an existing file
    #[arg(long, short = 'f')]
    force: bool,
}

/// Runs `odek init`.
pub fn run(args: InitArgs) -> crate::error::Fallible<Exit> {
    let env = std::env::vars().collect();
    let (scope, path, text) = if args.global {
        let home = home_dir_from(&env);
        std::fs::create_dir_all(&home).with_context(|| format!("creating {}", home.display()))?;
        let _ = std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700));
        (
            "global",
            home.join(GLOBAL_FILE),
            template::global_template(),
        )
    } else {
        let cwd = std::env::current_dir().context("finding the working directory")?;
        (
            "project",
            cwd.join(PROJECT_FILE),
            template::project_template(),
        )
    };
    if path.exists() && !args.force {
        crate::error::bail!(
            "{scope} config already exists at {}\n  Use --force to overwrite.",
            path.display()
        );
    }
    write_private(&path, &text)?;
    println!("✓ Created {scope} config: {}", path.display());
    if args.global {
        println!(
            "  The API key is read from $ODEK_API_KEY; edit base_url and model for your provider."
        );
    } else {
        println!("  A project file may lower limits and opt out of features; see docs/CONFIG.md.");
    }
    Ok(Exit::Success)
}

/// Writes `text` to `path` with mode 0600 (also when replacing a wider-mode file).
fn write_private(path: &PathBuf, text: &str) -> crate::error::Fallible<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("chmod 600 {}", path.display()))?;
    f.write_all(text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}
