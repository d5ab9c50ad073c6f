//! The seed's markdown plan files, per chat: `/plan <text>` saves a note, `/plans` lists,
//! `/plan_view N`, `/plan_delete N`, `/plan_resume N` (a turn that works on it), over
//! `<home>/plans/chat<id>/*.md`. They are the operator's notes, distinct from the structured
//! plan the model keeps with the `plan` tool (`/plan_status` shows that one).

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::error::ChatError;

/// Largest note: one Telegram message.
pub const MAX_NOTE_CHARS: usize = 4000;

/// One saved note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// Its file name (`20261202-031012-ship-the-release.md`).
    pub name: String,
    /// Its text.
    pub text: String,
}

/// The notes of one chat.
pub struct ChatPlans {
    dir: PathBuf,
}

impl ChatPlans {
    /// The notes of `chat` under `<home>/plans`.
    pub fn new(home: &Path, chat: i64) -> Self {
        ChatPlans {
            dir: home.join("plans").join(format!("chat{chat}")),
        }
    }

    /// Saves `text` as a new note; answers its file name.
    pub fn save(&self, text: &str) -> Result<String, ChatError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(ChatError::NoteUsage);
        }
        if text.chars().count() > MAX_NOTE_CHARS {
            return Err(ChatError::NoteTooLong(MAX_NOTE_CHARS));
        }
        crate::util::files::ensure_dir(&self.dir).map_err(ChatError::NoteNotSaved)?;
        let stamp = jiff::Timestamp::now().strftime("%Y%m%d-%H%M%S").to_string();
        let base = format!("{stamp}-{}", slug(text));
        for n in 1..100 {
            let name = match n {
                1 => format!("{base}.md"),
                n => format!("{base}-{n}.md"),
            };
            let created = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(self.dir.join(&name));
            match created {
                Ok(mut f) => {
                    return f
                        .write_all(format!("{text}\n").as_bytes())
                        .map(|()| name)
                        .map_err(ChatError::NoteNotSaved);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(ChatError::NoteNotSaved(e)),
            }
        }
        Err(ChatError::TooManyNotes)
    }

    /// The notes, oldest first (their numbers are their places in this list, from 1).
    pub fn list(&self) -> Vec<Note> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        // Oldest first by the time written (names share their second when saved quickly).
        let mut found: Vec<(std::time::SystemTime, String)> = entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let written = e.metadata().and_then(|m| m.modified()).ok()?;
                name.ends_with(".md").then_some((written, name))
            })
            .collect();
        found.sort();
        found
            .into_iter()
            .filter_map(|(_, name)| {
                let text = std::fs::read_to_string(self.dir.join(&name)).ok()?;
                Some(Note { name, text })
            })
            .collect()
    }

    /// Note number `n` (from `/plans`).
    pub fn get(&self, n: &str) -> Result<Note, ChatError> {
        let notes = self.list();
        let index = n
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|i| (1..=notes.len()).contains(i))
            .ok_or(match notes.len() {
                0 => ChatError::NoNotes,
                len => ChatError::NoteNumber(len),
            })?;
        Ok(notes[index - 1].clone())
    }

    /// Deletes note number `n`; answers what was deleted.
    pub fn delete(&self, n: &str) -> Result<Note, ChatError> {
        let note = self.get(n)?;
        std::fs::remove_file(self.dir.join(&note.name)).map_err(|source| {
            ChatError::NoteNotDeleted {
                name: note.name.clone(),
                source,
            }
        })?;
        Ok(note)
    }

    /// `/plans`: each note's number, name and first line.
    pub fn listing(&self) -> String {
        let notes = self.list();
        if notes.is_empty() {
            return "No plan notes yet: /plan <text> saves one.".into();
        }
        let mut out = String::from("Plan notes:\n");
        for (i, note) in notes.iter().enumerate() {
            let first = crate::text::first_line(note.text.trim(), 60);
            out.push_str(&format!("{}. {first}  ({})\n", i + 1, note.name));
        }
        out.push_str(
            "/plan_view N shows one, /plan_resume N works on it, /plan_delete N deletes it.",
        );
        out
    }
}

/// A file-name slug of the note's first words: lowercase letters and digits joined by `-`.
fn slug(text: &str) -> String {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(6)
        .map(|w| {
            w.chars()
                .filter(char::is_ascii_alphanumeric)
                .collect::<String>()
                .to_ascii_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect();
    let slug = crate::text::truncate(&words.join("-"), 40)
        .trim_end_matches('-')
        .to_string();
    if slug.is_empty() { "note".into() } else { slug }
}

/// The turn `/plan_resume` starts.
pub fn resume_input(note: &Note) -> String {
    format!(
        "Work on this plan (my note {}):\n\n{}",
        note.name,
        note.text.trim()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_are_saved_private_listed_in_order_viewed_and_deleted_by_number() {
        let home = tempfile::tempdir().expect("home");
        let plans = ChatPlans::new(home.path(), -100);
        assert_eq!(
            plans.listing(),
            "No plan notes yet: /plan <text> saves one."
        );
        let first = plans
            .save("Ship the release: tag, notes, announce")
            .expect("save");
        assert!(
            first.ends_with("-ship-the-release-tag-notes-announce.md"),
            "{first}"
        );
        let second = plans
            .save("Ship the release: tag, notes, announce")
            .expect("save again");
        assert_ne!(first, second, "same second, same words: a second file");
        plans.save("日本語 only").expect("non-ascii");
        let notes = plans.list();
        assert_eq!(notes.len(), 3);
        assert!(notes[2].name.ends_with("-only.md"), "{}", notes[2].name);
        let listing = plans.listing();
        assert!(listing.starts_with("Plan notes:\n1. Ship the release: tag, notes, announce  ("));
        use std::os::unix::fs::PermissionsExt;
        let dir = home.path().join("plans/chat-100");
        let mode = std::fs::metadata(dir.join(&first))
            .expect("file")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(plans.get("2").expect("two").name, second);
        assert_eq!(
            plans.get("4").expect_err("no 4").to_string(),
            "Give a note's number, 1 to 3 (/plans lists them)."
        );
        assert!(plans.get("x").is_err());
        assert_eq!(plans.delete("1").expect("delete").name, first);
        assert_eq!(plans.list().len(), 2);
        assert!(plans.save("   ").is_err());
        assert!(plans.save(&"x".repeat(MAX_NOTE_CHARS + 1)).is_err());
        assert!(
            resume_input(&plans.get("1").expect("one")).starts_with("Work on this plan (my note ")
        );
    }
}
