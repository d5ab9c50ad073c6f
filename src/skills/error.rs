//! Why a skill could not be read, trusted or imported: [`SkillError`], its kind and hint,
//! and the format's rules a `SKILL.md` can break ([`Rule`]), one sentence each.

use std::path::{Path, PathBuf};

use crate::error::{Classified, ErrorKind};

/// A rule of the skill format a `SKILL.md` breaks.
#[derive(Debug, thiserror::Error)]
pub enum Rule {
    /// No front matter at the top.
    #[error("SKILL.md must start with a YAML front matter block between `---` lines")]
    NoFrontMatter,
    /// The front matter does not end.
    #[error("the front matter has no closing `---` line")]
    NotClosed,
    /// The front matter is larger or deeper than any skill's needs to be (checked before
    /// it is parsed, so a file made to stall the parser is refused at once).
    #[error("the front matter is over {max_bytes} bytes or nested deeper than {max_depth} levels")]
    FrontMatterTooLarge {
        /// The largest front matter.
        max_bytes: usize,
        /// The deepest nesting.
        max_depth: usize,
    },
    /// The front matter is not YAML.
    #[error("the front matter is not valid YAML: {0}")]
    NotYaml(serde_yaml_ng::Error),
    /// The front matter is a list or a scalar.
    #[error("the front matter must be a mapping of keys to values")]
    NotAMapping,
    /// A required key is missing.
    #[error("`{0}` is required")]
    Required(&'static str),
    /// A required key is blank.
    #[error("`{0}` must not be empty")]
    Empty(&'static str),
    /// A key that must be text is not.
    #[error("`{0}` must be a string")]
    NotAString(&'static str),
    /// The name has characters a name may not have, or is too long.
    #[error("`name` (\"{name}\") must be 1–{max} lowercase letters, digits and hyphens")]
    NameCharacters {
        /// The name.
        name: String,
        /// Its longest.
        max: usize,
    },
    /// The name starts or ends with a hyphen.
    #[error("`name` (\"{0}\") must not start or end with a hyphen")]
    NameHyphenAtEnd(String),
    /// The name has two hyphens in a row.
    #[error("`name` (\"{0}\") must not contain two hyphens in a row")]
    NameDoubleHyphen(String),
    /// The name is not its folder's.
    #[error("`name` (\"{name}\") must equal its folder's name (\"{folder}\")")]
    NameNotFolder {
        /// The name.
        name: String,
        /// The folder's name.
        folder: String,
    },
    /// The description is too long.
    #[error("`description` is {chars} characters, over the {max}-character limit")]
    DescriptionTooLong {
        /// Its length.
        chars: usize,
        /// The limit.
        max: usize,
    },
    /// A key that must map names to strings does not.
    #[error("`{0}` must map names to strings")]
    NotAStringMap(&'static str),
    /// `allowed-tools` is neither a string nor a list of strings.
    #[error("`allowed-tools` must be a string or a list of strings")]
    ToolList,
    /// `odek` is not a mapping.
    #[error("`odek` must be a mapping (auto_load, trigger)")]
    OdekBlock,
    /// `odek.auto_load` is not a boolean.
    #[error("`odek.auto_load` must be true or false")]
    AutoLoad,
    /// `odek.trigger` is not a string map.
    #[error("`odek.trigger` must map names (topic, action) to strings")]
    Trigger,
    /// `SKILL.md` is a symbolic link.
    #[error("SKILL.md is a symbolic link; not reading it")]
    Symlink,
    /// `SKILL.md` is a folder or a device.
    #[error("SKILL.md is not a regular file")]
    NotARegularFile,
    /// `SKILL.md` is too large.
    #[error("SKILL.md is {size} bytes, over the {max}-byte limit")]
    TooLarge {
        /// Its size.
        size: u64,
        /// The limit.
        max: u64,
    },
    /// `SKILL.md` is not UTF-8.
    #[error("SKILL.md is not UTF-8 text")]
    NotUtf8,
    /// `SKILL.md` could not be read.
    #[error("cannot read it: {0}")]
    Unreadable(std::io::Error),
    /// A `SKILL.md` declares no name.
    #[error("it has no `name` in its front matter")]
    NoName,
}

impl Classified for Rule {
    fn kind(&self) -> ErrorKind {
        match self {
            Rule::Unreadable(_) => ErrorKind::Io,
            _ => ErrorKind::Usage,
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            Rule::Unreadable(_) => None,
            _ => Some(FORMAT_HINT),
        }
    }
}

/// Where the format of a skill is told, and how to start from a valid one.
const FORMAT_HINT: &str = "the format: docs/SKILLS.md; odek skill new NAME writes a valid one";

/// Why an import refused the whole source.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// An entry climbs out.
    #[error("entry \"{}\" has a `..` component", .0.display())]
    ParentComponent(PathBuf),
    /// An entry is absolute.
    #[error("entry \"{}\" is an absolute path", .0.display())]
    Absolute(PathBuf),
    /// An entry would be written through a link or a file.
    #[error("entry \"{}\" would be written through a link or a file", .0.display())]
    ThroughLink(PathBuf),
    /// Too many entries.
    #[error("more than {0} entries")]
    TooManyEntries(usize),
    /// A link leaves the skill.
    #[error("link \"{}\" points outside the skill ({})", at.display(), target.display())]
    LinkOutside {
        /// The link.
        at: PathBuf,
        /// Where it points.
        target: PathBuf,
    },
    /// A link leaves the skill or dangles, once every link exists.
    #[error("link \"{}\" points outside the skill or to nothing ({})", at.display(), target.display())]
    LinkNowhere {
        /// The link.
        at: PathBuf,
        /// Where it points.
        target: PathBuf,
    },
    /// An entry appears twice.
    #[error("entry \"{}\" appears twice", .0.display())]
    Twice(PathBuf),
    /// It unpacks to too much.
    #[error("it unpacks to over {0} MiB")]
    TooLarge(u64),
    /// A link could not be made.
    #[error("link \"{}\": {source}", at.display())]
    Link {
        /// The link.
        at: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A hard link.
    #[error("entry \"{}\" is a hard link", .0.display())]
    HardLink(PathBuf),
    /// A device, a socket, a FIFO.
    #[error("entry \"{}\" is neither a file, a folder nor a link", .0.display())]
    Special(PathBuf),
}

impl Classified for Refusal {
    fn kind(&self) -> ErrorKind {
        match self {
            Refusal::Link { .. } => ErrorKind::Io,
            _ => ErrorKind::Usage,
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            Refusal::Link { .. } => None,
            _ => Some(
                "import only skills from sources you trust; docs/SKILLS.md says what an import refuses",
            ),
        }
    }
}

/// A failure of the skills: a `SKILL.md` breaking a rule, a folder that cannot be trusted,
/// the trust records, an import.
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    /// A `SKILL.md` breaks a rule of the format.
    #[error(transparent)]
    Rule(#[from] Rule),
    /// A file or folder could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file or folder.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A file or folder could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file or folder.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The trust records cannot be read as such.
    #[error(
        "{} is damaged ({source}); no project skill is trusted until it is repaired or removed",
        path.display()
    )]
    TrustDamaged {
        /// The file.
        path: PathBuf,
        /// Where it stopped making sense.
        source: serde_json::Error,
    },
    /// A trusted skill's folder changed since.
    #[error(
        "skill \"{0}\" changed since the user trusted it; it is not available until they trust it again"
    )]
    ChangedSinceTrusted(String),
    /// A folder whose link the hash cannot follow.
    #[error(
        "its link {} points outside the skill folder (or to nothing), where the hash cannot follow",
        .0.display()
    )]
    UnhashableLink(PathBuf),
    /// A folder with too many entries to hash.
    #[error("the folder holds over {0} entries; too many to trust")]
    TooManyToTrust(usize),
    /// A folder with too many bytes to hash.
    #[error("the folder holds over {0} MiB; too large to trust")]
    TooLargeToTrust(u64),
    /// An import refused its source.
    #[error("refusing {source_name}: {why}")]
    Refused {
        /// The source as given.
        source_name: String,
        /// Why.
        why: Refusal,
    },
    /// An import's source is not something to import.
    #[error("{} is neither a folder nor a .zip, .tar.gz or .tar archive", .0.display())]
    NotImportable(PathBuf),
    /// An archive cannot be read.
    #[error("{source_name} is not a readable {format} archive: {reason}")]
    BadArchive {
        /// The source as given.
        source_name: String,
        /// `zip` or `tar`.
        format: &'static str,
        /// What the reader said.
        reason: Box<dyn std::error::Error + Send + Sync>,
    },
    /// An import holds no skill.
    #[error("no SKILL.md found: a skill is a folder with a SKILL.md")]
    NoSkillFound,
    /// An import holds two skills of one name.
    #[error("the import holds two skills named \"{0}\"")]
    Duplicate(String),
    /// A skill of the name is installed.
    #[error(
        "skill \"{name}\" is already installed in {}: remove it first (odek skill remove {name}) or import with --force",
        path.display()
    )]
    AlreadyInstalled {
        /// The skill.
        name: String,
        /// Where it is.
        path: PathBuf,
    },
    /// An imported skill breaks a rule.
    #[error("skill \"{name}\" breaks a rule: {rule}")]
    Breaks {
        /// The skill.
        name: String,
        /// The rule.
        rule: Box<SkillError>,
    },
    /// The `SKILL.md` named breaks a rule.
    #[error("{}: {rule}", file.display())]
    InFile {
        /// The `SKILL.md`.
        file: PathBuf,
        /// The rule.
        rule: Rule,
    },
}

impl SkillError {
    /// The error of a failed read of `path`, for `map_err`.
    pub fn reading(path: &Path) -> impl FnOnce(std::io::Error) -> SkillError + use<> {
        let path = path.to_path_buf();
        move |source| SkillError::Read { path, source }
    }

    /// The error of a failed write of `path`, for `map_err`.
    pub fn writing(path: &Path) -> impl FnOnce(std::io::Error) -> SkillError + use<> {
        let path = path.to_path_buf();
        move |source| SkillError::Write { path, source }
    }
}

impl Classified for SkillError {
    fn kind(&self) -> ErrorKind {
        use SkillError as E;
        match self {
            E::Rule(_) | E::InFile { .. } | E::Breaks { .. } => ErrorKind::Usage,
            E::Read { .. } | E::Write { .. } | E::TrustDamaged { .. } => ErrorKind::Io,
            E::ChangedSinceTrusted(_) | E::AlreadyInstalled { .. } | E::Duplicate(_) => {
                ErrorKind::Conflict
            }
            E::UnhashableLink(_) | E::TooManyToTrust(_) | E::TooLargeToTrust(_) => ErrorKind::Usage,
            E::Refused { .. } | E::NotImportable(_) | E::BadArchive { .. } => ErrorKind::Usage,
            E::NoSkillFound => ErrorKind::NotFound,
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            SkillError::ChangedSinceTrusted(_) => {
                Some("look at what changed, then trust it again: odek skill trust NAME")
            }
            SkillError::Rule(_) | SkillError::InFile { .. } | SkillError::Breaks { .. } => {
                Some(FORMAT_HINT)
            }
            _ => None,
        }
    }
}
