//! Where a scheduled (or `run --deliver`) answer goes: `stdout`, `log`
//! (`<home>/schedules/<name>.log`), `file:PATH` (appended), `telegram` (to
//! `telegram.default_chat_id`) or `telegram:CHAT_ID`, through a [`ChatDelivery`] — the Bot
//! API client of `odek telegram` implements it (MarkdownV2, plain text when Telegram refuses
//! the markup), and the command line hands it over. A failed delivery is tried again 3
//! times, waiting longer each time, then reported with its reason.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use super::error::{ChatFailure, ScheduleError};

/// A chat service answers can be delivered to (Telegram).
#[async_trait::async_trait]
pub trait ChatDelivery: Send + Sync {
    /// Sends `answer` to `chat` with one try per piece: `sent` counts the pieces already
    /// delivered, which a next call skips, so a retry never posts a piece twice.
    async fn send_once(&self, chat: i64, answer: &str, sent: &mut usize)
    -> Result<(), ChatFailure>;
}

/// Tries of one delivery.
pub const DELIVERY_ATTEMPTS: u32 = 4;

/// A delivery target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The terminal (`run NAME`, `odek run --deliver stdout`).
    Stdout,
    /// `<home>/schedules/<name>.log`.
    Log,
    /// A file the answer is appended to.
    File(PathBuf),
    /// A Telegram chat (`None`: `telegram.default_chat_id`).
    Telegram(Option<i64>),
}

impl FromStr for Target {
    type Err = ScheduleError;

    fn from_str(text: &str) -> Result<Target, ScheduleError> {
        let wrong = || ScheduleError::BadTarget(text.to_string());
        match text.trim() {
            "stdout" => Ok(Target::Stdout),
            "log" => Ok(Target::Log),
            "telegram" => Ok(Target::Telegram(None)),
            other => {
                if let Some(path) = other.strip_prefix("file:").filter(|p| !p.is_empty()) {
                    return Ok(Target::File(PathBuf::from(path)));
                }
                let chat = other.strip_prefix("telegram:").ok_or_else(wrong)?;
                chat.parse::<i64>()
                    .map(|id| Target::Telegram(Some(id)))
                    .map_err(|_| ScheduleError::BadChat(chat.to_string()))
            }
        }
    }
}

/// What a delivery needs besides the answer.
pub struct Delivery {
    /// The odek home (for `log`).
    pub home: PathBuf,
    /// The chat service of `telegram` targets (the Bot API, when `telegram.bot_token` is
    /// set).
    pub telegram: Option<Arc<dyn ChatDelivery>>,
    /// `telegram.default_chat_id` (0: none).
    pub default_chat: i64,
    /// The wait before the first retry (doubled each time).
    pub backoff: Duration,
}

impl Delivery {
    /// The delivery of a home and configuration, with `telegram` as the chat service.
    pub fn from_config(
        config: &crate::config::Config,
        home: &Path,
        telegram: Option<Arc<dyn ChatDelivery>>,
    ) -> Delivery {
        Delivery {
            home: home.to_path_buf(),
            telegram,
            default_chat: config.telegram.default_chat_id,
            backoff: Duration::from_millis(config.schedules.delivery_retry_ms),
        }
    }

    /// Delivers `answer` of job `name` (run at `when`, in `session`) to `target`, trying
    /// again on failure; the error is the last reason.
    pub async fn deliver(
        &self,
        target: &Target,
        name: &str,
        header: &str,
        answer: &str,
    ) -> Result<(), ScheduleError> {
        let mut wait = self.backoff;
        let mut attempt = 1;
        let mut sent = 0;
        loop {
            match self
                .deliver_once(target, name, header, answer, &mut sent)
                .await
            {
                Ok(()) => return Ok(()),
                // Trying again would meet the same link.
                Err(e @ ScheduleError::UnsafeTarget { .. }) => return Err(e),
                Err(e) if attempt >= DELIVERY_ATTEMPTS => {
                    return Err(ScheduleError::GaveUp {
                        tries: attempt,
                        last: Box::new(e),
                    });
                }
                Err(e) => {
                    // Telegram's `retry_after` when it asked to wait longer.
                    let asked = match &e {
                        ScheduleError::Chat(failure) => failure.retry_after,
                        _ => None,
                    };
                    let pause = asked.map_or(wait, |a| a.max(wait));
                    tracing::warn!("delivery of {name} failed ({e}); trying again in {pause:?}");
                    tokio::time::sleep(pause).await;
                    wait *= 2;
                    attempt += 1;
                }
            }
        }
    }

    /// One try.
    async fn deliver_once(
        &self,
        target: &Target,
        name: &str,
        header: &str,
        answer: &str,
        sent: &mut usize,
    ) -> Result<(), ScheduleError> {
        match target {
            Target::Stdout => {
                println!("{answer}");
                Ok(())
            }
            Target::Log => append(&log_path(&self.home, name), header, answer),
            Target::File(path) => append(path, header, answer),
            Target::Telegram(chat) => {
                let chats = self.telegram.as_ref().ok_or(ScheduleError::NoBotToken)?;
                let chat = chat
                    .or((self.default_chat != 0).then_some(self.default_chat))
                    .ok_or(ScheduleError::NoChat)?;
                Ok(chats.send_once(chat, answer, sent).await?)
            }
        }
    }
}

/// `<home>/schedules/<name>.log`.
pub fn log_path(home: &Path, name: &str) -> PathBuf {
    home.join("schedules").join(format!("{name}.log"))
}

/// Appends `header`, the answer and a blank line to `path` (created 0600 with its folder),
/// only where the user said: never through a symbolic link (the file itself, or a folder of
/// a relative path), never into a hard-linked file, a FIFO or a device.
fn append(path: &Path, header: &str, answer: &str) -> Result<(), ScheduleError> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let fail = |source| ScheduleError::Write {
        path: path.to_path_buf(),
        source,
    };
    let refuse = |reason| ScheduleError::UnsafeTarget {
        path: path.to_path_buf(),
        reason,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if path.is_relative() && linked_folder(dir) {
            return Err(refuse("a folder on its way is a symbolic link"));
        }
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    let opened = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    let mut file = match opened {
        Ok(file) => file,
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(refuse("it is a symbolic link"));
        }
        Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
            return Err(refuse("it is not a regular file"));
        }
        Err(e) => return Err(fail(e)),
    };
    let meta = file.metadata().map_err(fail)?;
    if !meta.is_file() {
        return Err(refuse("it is not a regular file"));
    }
    if meta.nlink() > 1 {
        return Err(refuse("it has other names (a hard link)"));
    }
    let text = format!("{header}\n{}\n\n", answer.trim_end());
    file.write_all(text.as_bytes()).map_err(fail)
}

/// True when a folder of the relative path `dir` (that exists) is a symbolic link.
fn linked_folder(dir: &Path) -> bool {
    dir.ancestors()
        .filter(|a| !a.as_os_str().is_empty())
        .any(|a| std::fs::symlink_metadata(a).is_ok_and(|m| m.file_type().is_symlink()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_and_bad_ones_say_what_is_accepted() {
        let parse = |text: &str| text.parse::<Target>().ok();
        assert_eq!(parse("stdout"), Some(Target::Stdout));
        assert_eq!(parse("log"), Some(Target::Log));
        assert_eq!(parse("telegram"), Some(Target::Telegram(None)));
        assert_eq!(
            parse("telegram:-100123"),
            Some(Target::Telegram(Some(-100_123)))
        );
        assert_eq!(
            parse("file:/tmp/report.md"),
            Some(Target::File("/tmp/report.md".into()))
        );
        let e = "email".parse::<Target>().unwrap_err().to_string();
        assert!(e.contains("use stdout, log, file:PATH, telegram or telegram:CHAT_ID"));
        assert!(
            "telegram:me"
                .parse::<Target>()
                .unwrap_err()
                .to_string()
                .contains("not a Telegram chat id")
        );
        assert!("file:".parse::<Target>().is_err());
    }

    #[test]
    fn a_file_delivery_goes_only_where_the_user_said() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("dir");
        let outside = dir.path().join("bashrc");
        std::fs::write(&outside, "original\n").expect("w");
        let link = dir.path().join("report.md");
        std::os::unix::fs::symlink(&outside, &link).expect("link");
        let err = append(&link, "=== h", "answer").expect_err("a link");
        assert!(err.to_string().contains("symbolic link"), "{err}");
        let dangling = dir.path().join("new.md");
        std::os::unix::fs::symlink(dir.path().join("created-by-link"), &dangling).expect("link");
        assert!(append(&dangling, "=== h", "answer").is_err());
        assert!(!dir.path().join("created-by-link").exists());
        let hard = dir.path().join("hard.md");
        std::fs::hard_link(&outside, &hard).expect("hard link");
        let err = append(&hard, "=== h", "answer").expect_err("a hard link");
        assert!(err.to_string().contains("hard link"), "{err}");
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "original\n");
        let fresh = dir.path().join("fresh.md");
        append(&fresh, "=== h", "answer").expect("a new file");
        let mode = std::fs::metadata(&fresh).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[tokio::test]
    async fn log_and_file_deliveries_append() {
        let home = tempfile::tempdir().unwrap();
        let d = Delivery {
            home: home.path().to_path_buf(),
            telegram: None,
            default_chat: 0,
            backoff: Duration::from_millis(1),
        };
        d.deliver(&Target::Log, "daily", "== 1", "first")
            .await
            .unwrap();
        d.deliver(&Target::Log, "daily", "== 2", "second")
            .await
            .unwrap();
        let log = std::fs::read_to_string(log_path(home.path(), "daily")).unwrap();
        assert_eq!(log, "== 1\nfirst\n\n== 2\nsecond\n\n");
        let e = d
            .deliver(&Target::Telegram(None), "daily", "h", "x")
            .await
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("telegram.bot_token") && e.contains("after 4 tries"),
            "{e}"
        );
    }
}
