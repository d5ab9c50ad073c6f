//! Putting files back as they were before a checkpoint: the plan (what each file becomes,
//! and which were changed outside odek since), then the rewind itself — recorded first as a
//! checkpoint of its own (so it can be rewound in turn), each file replaced atomically, its
//! end recorded last (so an interrupted rewind is finished by running it again). Every file
//! is read, written and removed through the folder a walk from `/` reached without following
//! a link (`walk`): a path that now runs through a link or a non-folder is not covered, and
//! left as it is.

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::store::{BlobStore, hash_bytes};
use super::walk::{self, Blocked, Found, Reached};
use super::{Checkpoint, Checkpoints, FileChange, History, Image, RecordLine};
use crate::util::timestamp::now_rfc3339;

/// Why a rewind cannot be done.
#[derive(Debug, thiserror::Error)]
pub enum RewindError {
    /// No checkpoint has that number.
    #[error("no checkpoint {to}: this session has {count} (odek rewind --list shows them)")]
    NoSuchCheckpoint {
        /// The number asked for.
        to: u32,
        /// How many there are.
        count: usize,
    },
    /// A rewind to another checkpoint was interrupted and must be finished first.
    #[error(
        "a rewind to checkpoint {to} was interrupted; finish it first with `odek rewind --to {to}`"
    )]
    Unfinished {
        /// Its target.
        to: u32,
    },
    /// Files changed since odek last wrote them.
    #[error("{} file(s) changed since odek wrote them; nothing was rewound (--force overwrites them):\n{}", .0.len(), conflict_lines(.0))]
    Conflicts(Vec<Conflict>),
    /// Reading or writing failed.
    #[error("{0}")]
    Io(#[from] io::Error),
}

impl crate::error::Classified for RewindError {
    fn kind(&self) -> crate::error::ErrorKind {
        use crate::error::ErrorKind;
        match self {
            RewindError::NoSuchCheckpoint { .. } => ErrorKind::NotFound,
            RewindError::Unfinished { .. } | RewindError::Conflicts(_) => ErrorKind::Conflict,
            RewindError::Io(_) => ErrorKind::Io,
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            RewindError::NoSuchCheckpoint { .. } => Some(
                "the checkpoints are the session's: odek rewind SESSION --list for another one",
            ),
            RewindError::Unfinished { .. } => Some(
                "a rewind stopped midway (a crash, a kill) leaves files half put back; running it again finishes it",
            ),
            RewindError::Conflicts(_) => {
                Some("to keep your changes, copy those files aside before rewinding with --force")
            }
            RewindError::Io(_) => None,
        }
    }
}

fn conflict_lines(conflicts: &[Conflict]) -> String {
    conflicts
        .iter()
        .map(|c| format!("  {}", c.path.display()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A file changed outside odek since its last checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The file.
    pub path: PathBuf,
}

/// What one file becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restore {
    /// The file.
    pub path: PathBuf,
    /// What it becomes (`None`: removed).
    pub target: Option<Image>,
    /// What it is now (`None`: nothing).
    pub current: Option<String>,
}

impl Restore {
    /// `remove`, `restore` or `create` — what the rewind does to the file.
    pub fn action(&self) -> &'static str {
        match (&self.current, &self.target) {
            (_, None) => "remove",
            (None, Some(_)) => "create",
            _ => "restore",
        }
    }
}

/// What a rewind to a checkpoint would do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewindPlan {
    /// The checkpoint the files go back to (as they were before it).
    pub to: u32,
    /// The files that change, in the order first touched.
    pub restores: Vec<Restore>,
    /// Files changed since odek wrote them.
    pub conflicts: Vec<Conflict>,
    /// What the checkpoints did not hold, and the files a walk without links cannot reach
    /// now (under a symbolic link, or below something that is not a folder): these stay as
    /// they are.
    pub not_covered: Vec<String>,
    /// The rewind finishes an interrupted one (its checkpoint, by id, is already recorded).
    pub resuming: Option<String>,
}

/// The plan of a rewind to `to` over `history` as the files are now.
pub fn plan_rewind(history: &History, to: u32) -> Result<RewindPlan, RewindError> {
    let mut resuming = None;
    let mut checkpoints: &[Checkpoint] = &history.checkpoints;
    let open = history.interrupted_rewind();
    if let Some(open) = open {
        if open.rewound_to != Some(to) {
            return Err(RewindError::Unfinished {
                to: open.rewound_to.unwrap_or(to),
            });
        }
        resuming = Some(open.id.clone());
        checkpoints = &checkpoints[..checkpoints.len() - 1];
    }
    if !checkpoints.iter().any(|c| c.n == to) {
        return Err(RewindError::NoSuchCheckpoint {
            to,
            count: checkpoints.len(),
        });
    }
    let from_here: Vec<&Checkpoint> = checkpoints.iter().filter(|c| c.n >= to).collect();
    let mut plan = RewindPlan {
        to,
        restores: Vec::new(),
        conflicts: Vec::new(),
        not_covered: from_here
            .iter()
            .flat_map(|c| c.not_covered.clone())
            .collect(),
        resuming,
    };
    for (path, target, last_after) in touched_paths(&from_here) {
        let now = match walk::look(&path)? {
            Found::File(image, _) => Some(image),
            Found::Absent => None,
            Found::Blocked(blocked) => {
                plan.not_covered.push(blocked.describe());
                continue;
            }
        };
        if now == target {
            continue; // already as it was
        }
        if open.is_some_and(|open| !open.files.iter().any(|f| f.path == path)) {
            // The interrupted rewind could not reach it then, so holds no copy of it.
            plan.not_covered.push(format!(
                "{}: not recorded by the interrupted rewind, so it is left as it is",
                path.display()
            ));
            continue;
        }
        let current = now.map(|image| image.hash);
        if current != last_after {
            plan.conflicts.push(Conflict { path: path.clone() });
        }
        plan.restores.push(Restore {
            path,
            target,
            current,
        });
    }
    Ok(plan)
}

/// Each path the checkpoints touched, in the order first touched, with what it was before
/// the first of them and what the last one left.
fn touched_paths(checkpoints: &[&Checkpoint]) -> Vec<(PathBuf, Option<Image>, Option<String>)> {
    let mut paths: Vec<(PathBuf, Option<Image>, Option<String>)> = Vec::new();
    for change in checkpoints.iter().flat_map(|c| &c.files) {
        match paths.iter_mut().find(|(p, _, _)| *p == change.path) {
            Some(known) => known.2 = change.after.clone(),
            None => paths.push((
                change.path.clone(),
                change.before.clone(),
                change.after.clone(),
            )),
        }
    }
    paths
}

/// What a rewind did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewindOutcome {
    /// The rewind's own checkpoint (`odek rewind --to` it undoes the rewind).
    pub checkpoint: u32,
    /// The files it wrote or removed.
    pub restored: Vec<Restore>,
    /// Files of the plan that a walk without links could no longer reach when the rewind
    /// came to them (a link made meanwhile), left as they are.
    pub not_covered: Vec<String>,
}

impl Checkpoints {
    /// Carries out `plan`: refused while it has conflicts unless `force`. The rewind's own
    /// checkpoint (every file's state now) is recorded before any file is written, its end
    /// after the last.
    pub fn rewind(
        self: &Arc<Self>,
        plan: &RewindPlan,
        force: bool,
    ) -> Result<RewindOutcome, RewindError> {
        if !plan.conflicts.is_empty() && !force {
            return Err(RewindError::Conflicts(plan.conflicts.clone()));
        }
        let (id, recorded, mut not_covered) = match &plan.resuming {
            Some(id) => (id.clone(), plan.restores.iter().collect(), Vec::new()),
            None => self.record_rewind(plan)?,
        };
        let blobs = self.blobs();
        let mut restored = Vec::new();
        for restore in recorded {
            match put_back(restore, &blobs, &id)? {
                None => restored.push(restore.clone()),
                Some(blocked) => not_covered.push(blocked.describe()),
            }
        }
        self.append(&RecordLine::Completed {
            completed: id.clone(),
        })?;
        let checkpoint = self.history()?.number_of(&id).unwrap_or_default();
        Ok(RewindOutcome {
            checkpoint,
            restored,
            not_covered,
        })
    }

    /// Records the rewind's own checkpoint: every file of the plan as it is now. Returns its
    /// id, the files recorded (only those are then written), and the files a walk without
    /// links could not reach (not covered).
    fn record_rewind<'p>(
        self: &Arc<Self>,
        plan: &'p RewindPlan,
    ) -> Result<(String, Vec<&'p Restore>, Vec<String>), RewindError> {
        let id = super::store::new_id();
        let blobs = self.blobs();
        let mut files = Vec::new();
        let mut recorded = Vec::new();
        let mut not_covered = Vec::new();
        for restore in &plan.restores {
            let before = match walk::look(&restore.path)? {
                Found::File(image, bytes) => {
                    blobs.put(&bytes)?;
                    Some(image)
                }
                Found::Absent => None,
                Found::Blocked(blocked) => {
                    not_covered.push(blocked.describe());
                    continue;
                }
            };
            recorded.push(restore);
            files.push(FileChange {
                path: restore.path.clone(),
                before,
                after: restore.target.as_ref().map(|t| t.hash.clone()),
            });
        }
        self.append(&RecordLine::Checkpoint(Checkpoint {
            n: 0,
            id: id.clone(),
            turn: self.turn(),
            at: now_rfc3339(),
            tool: "rewind".into(),
            files,
            not_covered: Vec::new(),
            rewound_to: Some(plan.to),
        }))?;
        Ok((id, recorded, not_covered))
    }
}

/// Puts one file back through the folder a walk from `/` reached without following a link
/// (making the folders it needs inside the last real one); `Some`: the walk met a link or
/// something that is not a folder, and the file is left as it is.
fn put_back(
    restore: &Restore,
    blobs: &BlobStore,
    rewind_id: &str,
) -> Result<Option<Blocked>, RewindError> {
    let place = match walk::reach(&restore.path, restore.target.is_some())? {
        Reached::Folder(place) => place,
        Reached::Missing => return Ok(None), // to be removed, and gone with its folder
        Reached::Blocked(blocked) => return Ok(Some(blocked)),
    };
    match &restore.target {
        None => place.remove()?,
        Some(image) => {
            let bytes = blobs.get(&image.hash)?;
            place.replace(&bytes, image.mode, &temp_name(rewind_id, &restore.path))?;
        }
    }
    Ok(None)
}

/// The name a file being restored has until it is renamed over the file: the same for the
/// same rewind and file, so running an interrupted rewind again replaces what it left.
fn temp_name(rewind_id: &str, path: &Path) -> String {
    let mut key = rewind_id.as_bytes().to_vec();
    key.push(0);
    key.extend_from_slice(path.as_os_str().as_bytes());
    format!("{TEMP_PREFIX}{}", &hash_bytes(&key)[..24])
}

/// What the temp files of a rewind are called.
const TEMP_PREFIX: &str = ".odek-rewind.tmp-";

#[cfg(test)]
impl Checkpoints {
    /// Records a rewind's checkpoint without carrying it out (a rewind killed at once).
    pub(super) fn record_rewind_for_test(self: &Arc<Self>, plan: &RewindPlan) -> String {
        self.record_rewind(plan).expect("record").0
    }
}
