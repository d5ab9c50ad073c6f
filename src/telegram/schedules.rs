//! `/schedules` and `/schedule add|rm` in Telegram: the chat's scheduled jobs (those that
//! deliver to it) and, for `telegram.admin_users`, adding and removing them. A job added here
//! delivers to the chat it was added from and runs in the bot's working directory.

use std::path::Path;

use jiff::Timestamp;

use crate::config::Config;
use crate::schedule::ScheduleError;
use crate::schedule::cron::Schedule;
use crate::schedule::store::{self, Job, Store};

/// True when `job` delivers to `chat`.
fn delivers_to(job: &Job, chat: i64, default_chat: i64) -> bool {
    match job.deliver.strip_prefix("telegram:") {
        Some(id) => id.parse::<i64>().is_ok_and(|id| id == chat),
        None => job.deliver == "telegram" && default_chat == chat,
    }
}

/// `/schedules`: the chat's jobs and their next run.
pub fn list(config: &Config, home: &Path, chat: i64) -> String {
    let views = match crate::schedule::views(config, home, Timestamp::now()) {
        Ok(v) => v,
        Err(e) => return format!("The schedules cannot be read: {e}"),
    };
    let jobs = Store::new(home).jobs().unwrap_or_default();
    let mine: Vec<String> = views
        .iter()
        .filter(|v| {
            jobs.iter()
                .any(|j| j.name == v.name && delivers_to(j, chat, config.telegram.default_chat_id))
        })
        .map(|v| {
            let next = if v.enabled {
                v.next_run.clone().unwrap_or_else(|| "never".into())
            } else {
                "disabled".into()
            };
            format!(
                "• {} — {} ({}) — next: {next}\n  {}",
                v.name, v.cron, v.zone, v.task
            )
        })
        .collect();
    if mine.is_empty() {
        "No scheduled jobs deliver to this chat. An admin adds one with /schedule add <cron> <task>, e.g. /schedule add 0 8 * * MON-FRI summarise the open issues".into()
    } else {
        format!("Scheduled jobs of this chat:\n{}", mine.join("\n"))
    }
}

/// `/schedule add <cron> <task>` or `/schedule rm NAME` from `user` in `chat`; `dir` is the
/// bot's working directory.
pub fn change(
    config: &Config,
    home: &Path,
    chat: i64,
    user: Option<i64>,
    args: &str,
    dir: &Path,
) -> String {
    if !user.is_some_and(|u| config.telegram.admin_users.contains(&u)) {
        return "Only the bot's admins (telegram.admin_users) can add or remove schedules.".into();
    }
    let mut words = args.split_whitespace();
    match words.next() {
        Some("add") => add(home, chat, &words.collect::<Vec<_>>(), dir),
        Some("rm") => match words.next() {
            Some(name) => remove(config, home, chat, name),
            None => "Usage: /schedule rm NAME (see /schedules)".into(),
        },
        _ => "Usage: /schedule add <cron> <task>, or /schedule rm NAME".into(),
    }
}

fn add(home: &Path, chat: i64, words: &[&str], dir: &Path) -> String {
    let cron_len = if words.first().is_some_and(|w| w.starts_with('@')) {
        1
    } else {
        5
    };
    if words.len() <= cron_len {
        return "Usage: /schedule add <cron> <task>, e.g. /schedule add @daily summarise yesterday's commits".into();
    }
    let cron = words[..cron_len].join(" ");
    let task = words[cron_len..].join(" ");
    let schedule = match Schedule::parse(&cron, None) {
        Ok(s) => s,
        Err(e) => return format!("Not added: {e}"),
    };
    let store = Store::new(home);
    let base = store::name_from_task(&task);
    let added = store.update_jobs(|jobs| {
        let mut name = base.clone();
        let mut n = 2;
        while jobs.iter().any(|j| j.name == name) {
            name = format!("{base}-{n}");
            n += 1;
        }
        jobs.push(Job {
            name: name.clone(),
            cron: cron.clone(),
            tz: None,
            task: task.clone(),
            deliver: format!("telegram:{chat}"),
            catchup: false,
            enabled: true,
            dir: dir.to_path_buf(),
            allow: Vec::new(),
            created_at: Timestamp::now().to_string(),
        });
        Ok(name)
    });
    match added {
        Ok(name) => {
            let next = schedule.next_text(Timestamp::now());
            format!("Added {name} ({cron}): next run {next}. Its answers come to this chat.")
        }
        Err(e) => format!("Not added: {e}"),
    }
}

fn remove(config: &Config, home: &Path, chat: i64, name: &str) -> String {
    let default_chat = config.telegram.default_chat_id;
    let removed = Store::new(home).update_jobs(|jobs| {
        let i = jobs
            .iter()
            .position(|j| j.name == name && delivers_to(j, chat, default_chat))
            .ok_or_else(|| ScheduleError::NotThisChats(name.to_string()))?;
        jobs.remove(i);
        Ok(())
    });
    match removed {
        Ok(()) => {
            let _ = Store::new(home).forget(name);
            format!("Removed {name}.")
        }
        Err(e) => format!("Not removed: {e}"),
    }
}
