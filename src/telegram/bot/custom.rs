//! Custom slash commands in a chat (see COMMANDS.md): each command's name mapped to what
//! Telegram takes as a command, `[a-z0-9_]{1,32}` — lower case, `:`, `-` and every other
//! character `_` (`/frontend:build` is `/frontend_build`). The built-in commands win
//! ([`crate::commands::BUILT_IN`], the bot's among them): a name that maps onto one of
//! them, onto another command's, or onto nothing Telegram takes is left out with a warning.
//! The bot does not register its commands with Telegram (`setMyCommands`): `/help` lists
//! them.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::parts::Bot;
use super::turns::ChatTurn;
use crate::commands::{Catalog, CommandError};
use crate::llm::Message;

/// The longest command name Telegram takes.
pub(super) const MAX_NAME_CHARS: usize = 32;

/// `name` as a Telegram command: lower case, every character outside `[a-z0-9_]` as `_`;
/// `None` when the result is longer than [`MAX_NAME_CHARS`] or has no letter or digit.
pub(super) fn telegram_name(name: &str) -> Option<String> {
    let mapped: String = name
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            l @ ('a'..='z' | '0'..='9' | '_') => l,
            _ => '_',
        })
        .collect();
    let fits = (1..=MAX_NAME_CHARS).contains(&mapped.chars().count());
    (fits && mapped.chars().any(|c| c.is_ascii_alphanumeric())).then_some(mapped)
}

/// One custom command as the chat reaches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ChatCommand {
    /// Its Telegram name (`frontend_build`).
    pub telegram: String,
    /// Its own name (`frontend:build`).
    pub name: String,
    /// What it does (one line).
    pub description: String,
}

/// The custom commands a chat reaches, by Telegram name, and the warnings about those
/// left out.
#[derive(Debug, Default)]
pub(super) struct ChatCommands {
    by_telegram: BTreeMap<String, ChatCommand>,
    /// One line per command left out, saying why.
    pub warnings: Vec<String>,
}

impl ChatCommands {
    /// Maps `commands` (name, description): a name that maps onto a built-in, onto nothing,
    /// or onto another's Telegram name is left out (both of a collision: neither would be
    /// the one the user meant).
    pub(super) fn map<'a>(commands: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut warnings = Vec::new();
        let mut claimed: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        for (name, description) in commands {
            let Some(telegram) = telegram_name(name) else {
                warnings.push(format!(
                    "custom command /{name} has no Telegram name (1 to {MAX_NAME_CHARS} of a-z, 0-9 and _ once mapped): not offered in the chat"
                ));
                continue;
            };
            if crate::commands::is_built_in(&telegram) {
                warnings.push(format!(
                    "custom command /{name} would be /{telegram}, the bot's own command: not offered in the chat"
                ));
                continue;
            }
            let line = description.lines().next().unwrap_or("").trim().to_string();
            claimed
                .entry(telegram)
                .or_default()
                .push((name.to_string(), line));
        }
        let mut by_telegram = BTreeMap::new();
        for (telegram, mut named) in claimed {
            if named.len() > 1 {
                let names: Vec<String> = named.iter().map(|(n, _)| format!("/{n}")).collect();
                warnings.push(format!(
                    "custom commands {} would all be /{telegram} in Telegram: none of them is offered in the chat",
                    names.join(", ")
                ));
                continue;
            }
            if let Some((name, description)) = named.pop() {
                let command = ChatCommand {
                    telegram: telegram.clone(),
                    name,
                    description,
                };
                by_telegram.insert(telegram, command);
            }
        }
        ChatCommands {
            by_telegram,
            warnings,
        }
    }

    /// The command `typed` names (the word after `/`, without `@bot`): its Telegram name in
    /// any case, or its own name as written.
    pub(super) fn resolve(&self, typed: &str) -> Option<&ChatCommand> {
        if let Some(command) = self.by_telegram.get(&typed.to_ascii_lowercase()) {
            return Some(command);
        }
        self.by_telegram.values().find(|c| c.name == typed)
    }

    /// The commands, by Telegram name.
    pub(super) fn iter(&self) -> impl Iterator<Item = &ChatCommand> {
        self.by_telegram.values()
    }

    /// The lines `/help` adds: one per command (`/frontend_build (/frontend:build) — Build
    /// the frontend`).
    pub(super) fn help_lines(&self) -> String {
        self.iter()
            .map(|c| {
                let mut line = format!("/{}", c.telegram);
                if c.name != c.telegram {
                    line.push_str(&format!(" (/{})", c.name));
                }
                if !c.description.is_empty() {
                    line.push_str(&format!(" — {}", c.description));
                }
                line
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl ChatCommands {
    /// The commands of `catalog` as the chat reaches them.
    pub(super) fn of(catalog: &Catalog) -> ChatCommands {
        ChatCommands::map(
            catalog
                .commands
                .iter()
                .map(|c| (c.name.as_str(), c.file.description.as_str())),
        )
    }
}

/// The lines the bot prints at start-up about the custom commands: those the chat cannot
/// reach, and why.
pub(super) fn warnings(catalog: &Catalog) -> Vec<String> {
    ChatCommands::of(catalog).warnings
}

/// What the chat is told when `e` stops a command: the reason, then what to do.
fn refusal(e: &CommandError) -> String {
    match crate::error::Classified::hint(e) {
        Some(hint) => format!("{e}\nhint: {hint}"),
        None => e.to_string(),
    }
}

impl Bot {
    /// The commands as they are now (files read again).
    async fn chat_commands(&self) -> (Catalog, ChatCommands) {
        let runtime = self.runtime.clone();
        let catalog = tokio::task::spawn_blocking(move || runtime.commands())
            .await
            .unwrap_or_default();
        let commands = ChatCommands::of(&catalog);
        (catalog, commands)
    }

    /// `/help`: `built_in`, then the custom commands the chat reaches.
    pub(super) async fn help(&self, chat: i64, built_in: &str) {
        let (_, commands) = self.chat_commands().await;
        let text = match commands.help_lines() {
            lines if lines.is_empty() => built_in.to_string(),
            lines => format!("{built_in}\n\nCustom commands:\n{lines}"),
        };
        self.say(chat, &text).await;
    }

    /// `/typed args` that is no command of the bot's: a custom command's turn (its prompt,
    /// its scope), or why not.
    pub(super) async fn custom_command(self: &Arc<Self>, chat: i64, typed: &str, args: &str) {
        let (catalog, commands) = self.chat_commands().await;
        let Some(command) = commands.resolve(typed) else {
            let text = format!("Unknown command /{typed}. /help lists the commands.");
            return self.say(chat, &text).await;
        };
        let line = format!("/{} {args}", command.name);
        let runtime = self.runtime.clone();
        let expanded = tokio::task::spawn_blocking(move || runtime.expand_in(&catalog, &line))
            .await
            .unwrap_or_else(|_| Ok(None));
        match expanded {
            Ok(Some(invocation)) => {
                if !invocation.warnings.is_empty() {
                    self.say(chat, &invocation.warnings.join("\n")).await;
                }
                let turn = ChatTurn {
                    scope: invocation.scope,
                    title: Some(format!("/{typed} {args}").trim_end().to_string()),
                    ..ChatTurn::of(Message::user(invocation.prompt))
                };
                self.start_turn_with(chat, turn).await;
            }
            Ok(None) => {
                let text = format!("Unknown command /{typed}. /help lists the commands.");
                self.say(chat, &text).await;
            }
            Err(e) => self.say(chat, &refusal(&e)).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_telegrams_alphabet_or_to_nothing() {
        assert_eq!(
            telegram_name("frontend:build").as_deref(),
            Some("frontend_build")
        );
        assert_eq!(telegram_name("Fix-Issue").as_deref(), Some("fix_issue"));
        assert_eq!(telegram_name("a.b c").as_deref(), Some("a_b_c"));
        assert_eq!(telegram_name("é1").as_deref(), Some("_1"));
        assert_eq!(telegram_name(&"x".repeat(32)), Some("x".repeat(32)));
        assert_eq!(telegram_name(&"x".repeat(33)), None);
        assert_eq!(telegram_name("::"), None);
        assert_eq!(telegram_name("ü"), None);
        assert_eq!(telegram_name(""), None);
    }

    #[test]
    fn built_ins_win_collisions_are_left_out_and_each_is_named() {
        let long = "a".repeat(40);
        let commands = ChatCommands::map([
            ("frontend:build", "Build the frontend\nmore"),
            ("review", ""),
            ("plan-status", "shadowed"),
            ("a:b", "one"),
            ("A-b", "two"),
            (long.as_str(), "too long"),
        ]);
        let names: Vec<&str> = commands.iter().map(|c| c.telegram.as_str()).collect();
        assert_eq!(names, ["frontend_build", "review"]);
        assert_eq!(commands.warnings.len(), 3, "{:?}", commands.warnings);
        assert!(commands.warnings.iter().any(
            |w| w.contains("/plan-status") && w.contains("/plan_status, the bot's own command")
        ));
        assert!(
            commands
                .warnings
                .iter()
                .any(|w| w.contains("/a:b, /A-b would all be /a_b"))
        );
        assert!(commands.warnings.iter().any(|w| w.contains(&long)));
        let build = commands
            .resolve("Frontend_Build")
            .expect("by Telegram name");
        assert_eq!(build.name, "frontend:build");
        assert_eq!(build.description, "Build the frontend");
        assert_eq!(
            commands
                .resolve("frontend:build")
                .map(|c| c.telegram.as_str()),
            Some("frontend_build")
        );
        assert!(commands.resolve("a_b").is_none());
        assert_eq!(
            commands.help_lines(),
            "/frontend_build (/frontend:build) — Build the frontend\n/review"
        );
    }
}
