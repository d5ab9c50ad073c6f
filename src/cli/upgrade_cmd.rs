//! `odek upgrade [--check] [--to VERSION] [--rollback] [--key]`: odek replaces itself with a
//! signed release (docs/UPGRADE.md). The chain — latest.json, the signed SHA256SUMS, the
//! archive and its checksum, the binary out of it, the renames — is `crate::release`; this
//! file parses the flags, draws the download's progress on a terminal and says what happened.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use crate::error::Context as _;
use clap::Args;

use super::Exit;
use crate::release::{
    self, HOST_TARGET, KeySource, ReleaseError, Releases, Version, current_version, install,
};

/// Arguments of `odek upgrade`.
#[derive(Debug, Args)]
pub struct UpgradeArgs {
    /// Only say whether a newer release exists: exit 0 when this odek is the latest, 10 when
    /// a newer one is available
    #[arg(long, conflicts_with_all = ["to", "rollback", "key"])]
    check: bool,
    /// Install this version (X.Y.Z) instead of the latest, older ones included
    #[arg(long, value_name = "VERSION", conflicts_with_all = ["rollback", "key"])]
    to: Option<String>,
    /// Put back the binary the last upgrade replaced (kept beside odek as odek.old)
    #[arg(long, conflicts_with = "key")]
    rollback: bool,
    /// Print the minisign public key releases are checked with
    #[arg(long)]
    key: bool,
}

/// Runs `odek upgrade`.
pub fn run(args: UpgradeArgs) -> crate::error::Fallible<Exit> {
    if args.key {
        return print_key();
    }
    if args.rollback {
        return rollback();
    }
    let releases = Releases::from_env()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    if args.check {
        return runtime.block_on(check(&releases));
    }
    runtime.block_on(upgrade(&releases, args.to.as_deref()))
}

/// `--key`: the key as a minisign `.pub` file on stdout, where it came from on stderr.
fn print_key() -> crate::error::Fallible<Exit> {
    let (key, source) = release::release_key()?;
    println!(
        "untrusted comment: minisign public key {}",
        key.key_id_hex()
    );
    println!("{}", key.to_base64());
    let from = match source {
        KeySource::BuiltIn => "odek: the built-in release key (ODEK_RELEASE_PUBKEY replaces it)",
        KeySource::Environment => "odek: the key from ODEK_RELEASE_PUBKEY (not the built-in one)",
    };
    eprintln!("{from}");
    Ok(Exit::Success)
}

/// `--check`: 0 when this odek is the latest (or newer), 10 when a newer release exists.
async fn check(releases: &Releases) -> crate::error::Fallible<Exit> {
    let latest = releases.latest().await?;
    let current = current_version();
    if latest.version > current {
        println!(
            "odek {} is available (this is {current}): odek upgrade installs it",
            latest.version
        );
        if let Some(notes) = latest.notes.as_deref().filter(|n| !n.trim().is_empty()) {
            println!("{}", crate::text::visible(notes.trim(), false));
        }
        return Ok(Exit::UpdateAvailable);
    }
    println!(
        "odek {current} is up to date (the latest release is {})",
        latest.version
    );
    Ok(Exit::Success)
}

/// Installs the latest release, or `to`, in place of the running binary.
async fn upgrade(releases: &Releases, to: Option<&str>) -> crate::error::Fallible<Exit> {
    let target = HOST_TARGET.ok_or(ReleaseError::NoReleaseForPlatform {
        os: std::env::consts::OS,
        arch: std::env::consts::ARCH,
    })?;
    let binary = install::running_binary()?;
    install::check_replaceable(&binary)?;
    let (key, _) = release::release_key()?;
    let current = current_version();
    let wanted = match to {
        Some(text) => Version::parse(text)?,
        None => {
            let latest = releases.latest().await?;
            if latest.version == current {
                println!("odek {current} is the latest release: nothing to do");
                return Ok(Exit::Success);
            }
            if latest.version < current {
                return Err(ReleaseError::Downgrade {
                    current,
                    available: latest.version,
                }
                .into());
            }
            latest.version
        }
    };
    eprintln!(
        "odek: fetching odek {wanted} ({target}) from {}",
        releases.base()
    );
    let mut bar = ProgressBar::new(&release::archive_name(&wanted, target));
    let fetched = releases
        .fetch_binary(&wanted, target, &key, &mut |done, total| {
            bar.update(done, total)
        })
        .await;
    bar.finish();
    let bytes = fetched?;
    install::replace(&binary, &bytes)?;
    println!(
        "odek: upgraded {current} to {wanted}: installed {} (signature and checksum verified)",
        binary.display()
    );
    println!(
        "odek: the previous binary is {} (odek upgrade --rollback puts it back)",
        install::previous_path(&binary).display()
    );
    Ok(Exit::Success)
}

/// `--rollback`: swaps the binary and `odek.old`.
fn rollback() -> crate::error::Fallible<Exit> {
    let binary = install::running_binary()?;
    install::check_replaceable(&binary)?;
    install::rollback(&binary)?;
    println!(
        "odek: put back the previous binary at {}; the one it replaced is now {}",
        binary.display(),
        install::previous_path(&binary).display()
    );
    Ok(Exit::Success)
}

/// A download's progress on stderr, drawn only when stderr is a terminal: one line redrawn
/// in place (at most ten times a second), cleared at the end.
struct ProgressBar {
    label: String,
    tty: bool,
    last: Option<Instant>,
    drawn: bool,
}

impl ProgressBar {
    const WIDTH: u64 = 30;

    fn new(label: &str) -> ProgressBar {
        ProgressBar {
            label: label.to_string(),
            tty: std::io::stderr().is_terminal(),
            last: None,
            drawn: false,
        }
    }

    fn update(&mut self, done: u64, total: Option<u64>) {
        let finished = total == Some(done);
        let due = self
            .last
            .is_none_or(|t| t.elapsed() >= Duration::from_millis(100));
        if !self.tty || !(due || finished) {
            return;
        }
        self.last = Some(Instant::now());
        let line = progress_line(&self.label, done, total, Self::WIDTH);
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
        self.drawn = true;
    }

    fn finish(&mut self) {
        if self.drawn {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
            let _ = std::io::stderr().flush();
            self.drawn = false;
        }
    }
}

/// `[=========>          ]  45%  4.1/9.0 MB  name`, or `4.1 MB  name` without a total.
fn progress_line(label: &str, done: u64, total: Option<u64>, width: u64) -> String {
    let mb = |n: u64| n as f64 / 1_000_000.0;
    match total.filter(|t| *t > 0) {
        Some(total) => {
            let done = done.min(total);
            let filled = done * width / total;
            let mut bar = "=".repeat(filled as usize);
            if filled < width {
                bar.push('>');
                bar.push_str(&" ".repeat((width - filled - 1) as usize));
            }
            format!(
                "[{bar}] {:>3}%  {:.1}/{:.1} MB  {label}",
                done * 100 / total,
                mb(done),
                mb(total)
            )
        }
        None => format!("{:.1} MB  {label}", mb(done)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_progress_line_fills_with_the_download() {
        assert_eq!(
            progress_line("a.tar.gz", 0, Some(1000), 10),
            "[>         ]   0%  0.0/0.0 MB  a.tar.gz"
        );
        assert_eq!(
            progress_line("a.tar.gz", 4_500_000, Some(9_000_000), 10),
            "[=====>    ]  50%  4.5/9.0 MB  a.tar.gz"
        );
        assert_eq!(
            progress_line("a", 9_000_000, Some(9_000_000), 10),
            "[==========] 100%  9.0/9.0 MB  a"
        );
        assert_eq!(progress_line("a", 2_000_000, None, 10), "2.0 MB  a");
    }
}
