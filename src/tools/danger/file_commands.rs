//! The rules for the commands that create, change or delete files (`rm`, `mv`, `cp`,
//! `chmod`, `dd`, archivers, `find`, `sed`, `awk`, formatters, …).

use super::analyzer::{Analyzer, Context, safe, write_target};
use super::options::{self, OptionSpec};
use super::paths::{Anchor, WorkingDirectory, is_block_device, is_root_like, normalize};
use super::syntax::Word;
use crate::danger_policy::{Classification, DangerClass, classified};

/// Source formatters: they rewrite files in the working tree.
const FORMATTERS: &[&str] = &[
    "rustfmt",
    "black",
    "isort",
    "gofmt",
    "goimports",
    "clang-format",
    "prettier",
    "ruff",
    "autopep8",
    "yapf",
    "shfmt",
    "taplo",
    "dprint",
];

/// Static analysers that only read and report.
const ANALYSERS: &[&str] = &[
    "shellcheck",
    "tokei",
    "cloc",
    "scc",
    "yamllint",
    "hadolint",
    "envsubst",
];

impl Analyzer {
    /// Commands that create, change or delete files.
    pub(super) fn file_program(
        &mut self,
        name: &str,
        args: &[Word],
        context: &Context,
    ) -> Option<Classification> {
        let found = match name {
            "rm" | "unlink" => rm(args, context),
            "rmdir" => writes_operands(args, context, "", "rmdir removes empty directories"),
            "mkdir" => writes_operands(args, context, "m", "mkdir creates directories"),
            "touch" => writes_operands(args, context, "rdt", "touch creates or updates files"),
            "cp" | "ln" | "link" => writes_destination(name, args, context),
            "mv" => mv(args, context),
            "install" => install(args, context),
            "chmod" => chmod(args, context),
            "chown" | "chgrp" => chown(name, args, context),
            "truncate" | "shred" | "wipe" | "srm" => overwrites_files(name, args),
            "dd" => dd(args),
            _ if is_mkfs(name) => formats_device(name, args),
            "fdisk" | "sfdisk" | "cfdisk" | "gdisk" | "sgdisk" | "parted" | "wipefs"
            | "blkdiscard" => partitions_device(name, args),
            "tar" | "bsdtar" | "gtar" => tar(args, context),
            "zip" => zip(args, context),
            "unzip" => unzip(args, context),
            "gzip" | "gunzip" | "bzip2" | "bunzip2" | "xz" | "unxz" | "zstd" | "unzstd" | "lz4"
            | "pigz" | "compress" | "uncompress" => compressor(name, args, context),
            "split" => split(args, context),
            "csplit" => csplit(args, context),
            "7z" | "7za" | "7zz" | "rar" | "unrar" | "patch" | "rename" | "dos2unix"
            | "unix2dos" | "mktemp" | "mkfifo" => {
                classified(DangerClass::LocalWrite, format!("{name} writes files"))
            }
            "tee" => tee(args, context),
            "sort" => sort(args, context),
            "uniq" => second_operand_output(name, args, context, ""),
            "xxd" => second_operand_output(name, args, context, "cglosnC"),
            "find" => self.find(args, context),
            "fd" | "fdfind" => self.fd(args, context),
            "sed" | "gsed" => sed(args, context),
            "awk" | "gawk" | "mawk" | "nawk" => awk(args),
            "yq" if args.iter().any(|w| w.text == "-i" || w.text == "--inplace") => {
                classified(DangerClass::LocalWrite, "yq -i edits files in place")
            }
            "yq" => safe("yq only reads or prints"),
            _ if FORMATTERS.contains(&name) => classified(
                DangerClass::LocalWrite,
                format!("{name} formats source files"),
            ),
            _ if ANALYSERS.contains(&name) => safe(format!("{name} only reads and reports")),
            _ => return None,
        };
        Some(found)
    }

    fn find(&mut self, args: &[Word], context: &Context) -> Classification {
        let mut result = safe("find only lists files");
        let mut index = 0;
        while let Some(word) = args.get(index) {
            match word.text.as_str() {
                "-delete" => {
                    result = result.worse(classified(
                        DangerClass::Destructive,
                        "find -delete removes files",
                    ));
                }
                "-exec" | "-execdir" | "-ok" | "-okdir" => {
                    let rest = args.get(index + 1..).unwrap_or(&[]);
                    let length = rest
                        .iter()
                        .position(|w| w.text == ";" || w.text == "+")
                        .unwrap_or(rest.len());
                    let inner: Vec<Word> = rest[..length]
                        .iter()
                        .map(|w| w.with_marker("{}", "$FOUND"))
                        .collect();
                    if !inner.is_empty() {
                        result = result.worse(self.wrapped_command(&inner, context));
                    }
                    index += length + 1;
                }
                "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                    if let Some(target) = args.get(index + 1) {
                        result = result.worse(write_target(target, context));
                    }
                    index += 1;
                }
                _ => {}
            }
            index += 1;
        }
        result
    }

    fn fd(&mut self, args: &[Word], context: &Context) -> Classification {
        let exec = args
            .iter()
            .position(|word| matches!(word.text.as_str(), "-x" | "--exec" | "-X" | "--exec-batch"));
        let Some(exec) = exec else {
            return safe("fd only lists files");
        };
        let rest = args.get(exec + 1..).unwrap_or(&[]);
        let length = rest
            .iter()
            .position(|w| w.text == ";")
            .unwrap_or(rest.len());
        let inner: Vec<Word> = rest[..length]
            .iter()
            .map(|w| w.with_marker("{}", "$FOUND"))
            .collect();
        if inner.is_empty() {
            return safe("fd only lists files");
        }
        let mut inner = inner;
        inner.push(Word::dynamic("$FOUND"));
        self.wrapped_command(&inner, context)
    }
}

/// True when removing `word` stays inside the working tree.
fn is_inside_tree(word: &Word, context: &Context) -> bool {
    let path = normalize(&word.text);
    !word.dynamic
        && path.anchor == Anchor::Relative
        && !path.escapes
        && context.cwd == WorkingDirectory::Tree
}

fn rm(args: &[Word], context: &Context) -> Classification {
    let line = options::parse(args, OptionSpec::default());
    let recursive = line.has_short('r') || line.has_short('R') || line.has_long("recursive");
    let forced = line.has('f', "force");
    if line.has_long("no-preserve-root") {
        return classified(DangerClass::Blocked, "rm --no-preserve-root");
    }
    for target in &line.operands {
        let path = normalize(&target.text);
        if recursive && is_root_like(&path, context.cwd) {
            return classified(
                DangerClass::Blocked,
                format!(
                    "rm -r on {} wipes the system or the home directory",
                    target.text
                ),
            );
        }
        let if_empty = without_leading_expansion(&target.text);
        if recursive && if_empty.is_some_and(|rest| is_root_like(&normalize(rest), context.cwd)) {
            return classified(
                DangerClass::Blocked,
                format!(
                    "rm -r on {} wipes the system when the variable is empty",
                    target.text
                ),
            );
        }
    }
    let outside = line.operands.iter().any(|t| !is_inside_tree(t, context));
    let computed = line.operands.iter().any(|t| t.dynamic);
    let flags = match (recursive, forced) {
        (true, true) => "rm -rf",
        (true, false) => "rm -r",
        (false, true) => "rm -f",
        (false, false) => "rm",
    };
    match (recursive || forced, outside) {
        _ if computed => classified(
            DangerClass::Destructive,
            format!("{flags} of paths only known at run time"),
        ),
        (_, true) => classified(
            DangerClass::Destructive,
            format!("{flags} outside the working directory"),
        ),
        (true, false) => classified(
            DangerClass::Destructive,
            format!("{flags} deletes files irrecoverably"),
        ),
        (false, false) => classified(
            DangerClass::LocalWrite,
            "rm removes files inside the working directory",
        ),
    }
}

/// What `$DIR/…` becomes when `DIR` is empty or unset (`/…`). `None` when the word does not
/// start with an expansion followed by `/`, when the expansion is `$HOME` (handled as the
/// home directory), or when it is guarded with `${DIR:?}`.
fn without_leading_expansion(text: &str) -> Option<&str> {
    let rest = if let Some(braced) = text.strip_prefix("${") {
        let close = braced.find('}')?;
        if braced[..close].contains('?') || &braced[..close] == "HOME" {
            return None;
        }
        &braced[close + 1..]
    } else {
        let unbraced = text.strip_prefix('$')?;
        let name_length = unbraced
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(unbraced.len());
        if name_length == 0 || &unbraced[..name_length] == "HOME" {
            return None;
        }
        &unbraced[name_length..]
    };
    rest.starts_with('/').then_some(rest)
}

fn writes_operands(
    args: &[Word],
    context: &Context,
    short_values: &str,
    reason: &str,
) -> Classification {
    let line = options::parse(args, OptionSpec::new(short_values, &[]));
    line.operands
        .iter()
        .map(|target| write_target(target, context))
        .fold(
            classified(DangerClass::LocalWrite, reason),
            Classification::worse,
        )
}

/// `cp`, `ln`: the destination (last operand or `-t DIR`) is written.
fn writes_destination(name: &str, args: &[Word], context: &Context) -> Classification {
    let line = options::parse(args, OptionSpec::new("tS", &["target-directory", "suffix"]));
    let floor = classified(DangerClass::LocalWrite, format!("{name} writes files"));
    let destination = line
        .value('t', "target-directory")
        .or_else(|| last_of_several(&line.operands));
    match destination {
        Some(destination) => floor.worse(write_target(destination, context)),
        None => floor,
    }
}

/// The last operand when there are at least two (the destination of `cp SRC… DEST`).
fn last_of_several<'w>(operands: &[&'w Word]) -> Option<&'w Word> {
    if operands.len() >= 2 {
        operands.last().copied()
    } else {
        None
    }
}

fn mv(args: &[Word], context: &Context) -> Classification {
    let line = options::parse(args, OptionSpec::new("tS", &["target-directory", "suffix"]));
    let mut result = classified(DangerClass::LocalWrite, "mv moves files");
    for operand in &line.operands {
        if is_root_like(&normalize(&operand.text), context.cwd) {
            return classified(
                DangerClass::Blocked,
                format!("mv moves {} away", operand.text),
            );
        }
        result = result.worse(write_target(operand, context));
    }
    for directory in line.values('t', "target-directory") {
        result = result.worse(write_target(directory, context));
    }
    result
}

fn install(args: &[Word], context: &Context) -> Classification {
    let line = options::parse(
        args,
        OptionSpec::new(
            "gmoSt",
            &["group", "mode", "owner", "suffix", "target-directory"],
        ),
    );
    let floor = classified(DangerClass::LocalWrite, "install copies files");
    let targets: Vec<&Word> = if line.has('d', "directory") {
        line.operands.clone()
    } else {
        line.value('t', "target-directory")
            .or_else(|| last_of_several(&line.operands))
            .into_iter()
            .collect()
    };
    targets
        .into_iter()
        .map(|target| write_target(target, context))
        .fold(floor, Classification::worse)
}

/// Splits `chmod`/`chown` arguments into (recursive, operands): modes like `-x` are operands.
fn permission_arguments(args: &[Word]) -> (bool, Vec<&Word>) {
    let mut recursive = false;
    let mut operands = Vec::new();
    for word in args {
        match word.text.as_str() {
            "-R" | "--recursive" => recursive = true,
            "-v" | "-c" | "-f" | "-h" | "-H" | "-L" | "-P" | "--verbose" | "--changes"
            | "--silent" | "--quiet" | "--dereference" | "--no-dereference" | "--preserve-root"
            | "--no-preserve-root" | "--" => {}
            text if text.starts_with("--reference=") || text.starts_with("--from=") => {}
            text if text.starts_with("-R") && text[2..].chars().all(|c| "vcfhHLP".contains(c)) => {
                recursive = true;
            }
            _ => operands.push(word),
        }
    }
    (recursive, operands)
}

fn chmod(args: &[Word], context: &Context) -> Classification {
    let (recursive, operands) = permission_arguments(args);
    let by_reference = args.iter().any(|w| w.text.starts_with("--reference"));
    let (mode, targets) = match operands.split_first() {
        Some((mode, targets)) if !by_reference => (Some(*mode), targets),
        _ => (None, operands.as_slice()),
    };
    let mut result = classified(DangerClass::LocalWrite, "chmod changes permissions");
    if mode.is_some_and(|mode| sets_special_bits(&mode.text)) {
        result = result.worse(classified(
            DangerClass::SystemWrite,
            "chmod sets the setuid or setgid bit",
        ));
    }
    for target in targets {
        if recursive && is_root_like(&normalize(&target.text), context.cwd) {
            return classified(
                DangerClass::Blocked,
                format!("chmod -R on {} changes the whole system", target.text),
            );
        }
        result = result.worse(write_target(target, context));
    }
    result
}

fn sets_special_bits(mode: &str) -> bool {
    let symbolic = mode.contains(['+', '=']) && mode.contains('s');
    let octal = mode.len() >= 4 && mode.chars().all(|c| ('0'..='7').contains(&c));
    let special = octal
        && mode
            .chars()
            .nth(mode.len() - 4)
            .and_then(|c| c.to_digit(8))
            .is_some_and(|digit| digit & 6 != 0);
    symbolic || special
}

fn chown(name: &str, args: &[Word], context: &Context) -> Classification {
    let (recursive, operands) = permission_arguments(args);
    for target in operands.iter().skip(1) {
        if recursive && is_root_like(&normalize(&target.text), context.cwd) {
            return classified(
                DangerClass::Blocked,
                format!("{name} -R on {} changes the whole system", target.text),
            );
        }
    }
    classified(
        DangerClass::SystemWrite,
        format!("{name} changes file ownership"),
    )
}

fn overwrites_files(name: &str, args: &[Word]) -> Classification {
    let line = options::parse(
        args,
        OptionSpec::new("nsr", &["size", "reference", "iterations"]),
    );
    if let Some(device) = line
        .operands
        .iter()
        .find(|word| is_block_device(&normalize(&word.text)))
    {
        return classified(
            DangerClass::Blocked,
            format!("{name} overwrites the block device {}", device.text),
        );
    }
    classified(
        DangerClass::Destructive,
        format!("{name} destroys file contents"),
    )
}

fn dd(args: &[Word]) -> Classification {
    let device = args
        .iter()
        .filter_map(|word| word.text.strip_prefix("of="))
        .find(|target| is_block_device(&normalize(target)));
    match device {
        Some(device) => classified(
            DangerClass::Blocked,
            format!("dd writes to the block device {device}"),
        ),
        None => classified(DangerClass::Destructive, "dd overwrites data"),
    }
}

fn is_mkfs(name: &str) -> bool {
    matches!(name, "mkfs" | "mke2fs" | "mkswap" | "newfs" | "mkdosfs")
        || name.starts_with("mkfs.")
        || name.starts_with("newfs_")
}

fn formats_device(name: &str, args: &[Word]) -> Classification {
    if args
        .iter()
        .any(|word| is_block_device(&normalize(&word.text)))
    {
        return classified(
            DangerClass::Blocked,
            format!("{name} formats a disk device"),
        );
    }
    classified(
        DangerClass::Destructive,
        format!("{name} creates a file system, erasing its target"),
    )
}

fn partitions_device(name: &str, args: &[Word]) -> Classification {
    let lists = args
        .iter()
        .any(|word| matches!(word.text.as_str(), "-l" | "--list" | "print"));
    if lists {
        return safe(format!("{name} lists partitions"));
    }
    if args
        .iter()
        .any(|word| is_block_device(&normalize(&word.text)))
    {
        return classified(
            DangerClass::Blocked,
            format!("{name} rewrites a disk device"),
        );
    }
    classified(
        DangerClass::Destructive,
        format!("{name} rewrites partitions"),
    )
}

fn tar(args: &[Word], context: &Context) -> Classification {
    let mut words = args.to_vec();
    if let Some(first) = words.first_mut() {
        let old_style = !first.text.starts_with('-')
            && !first.text.is_empty()
            && first.text.chars().all(|c| c.is_ascii_alphabetic());
        if old_style {
            first.text.insert(0, '-');
        }
    }
    let spec = OptionSpec::new(
        "fCbTXgLVKNIHF",
        &[
            "file",
            "directory",
            "files-from",
            "exclude-from",
            "use-compress-program",
            "to-command",
            "info-script",
            "new-volume-script",
            "format",
            "listed-incremental",
        ],
    );
    let line = options::parse(&words, spec);
    let runs_program = [
        "to-command",
        "checkpoint-action",
        "use-compress-program",
        "info-script",
        "new-volume-script",
    ]
    .iter()
    .any(|long| line.has_long_prefix(long))
        || line.has_short('I')
        || line.has_short('F');
    if runs_program {
        return classified(DangerClass::CodeExecution, "tar runs an external program");
    }
    let extracting = line.has('x', "extract") || line.has_long("get");
    let creating = ['c', 'r', 'u', 'A']
        .iter()
        .any(|flag| line.has_short(*flag))
        || ["create", "append", "update", "catenate"]
            .iter()
            .any(|long| line.has_long(long));
    let listing = line.has('t', "list");
    let mut result = if listing && !extracting && !creating {
        safe("tar lists an archive")
    } else {
        classified(DangerClass::LocalWrite, "tar writes files")
    };
    if extracting {
        for directory in line.values('C', "directory") {
            result = result.worse(write_target(directory, context));
        }
        if line.has('P', "absolute-names") {
            result = result.worse(classified(
                DangerClass::SystemWrite,
                "tar -P extracts absolute paths",
            ));
        }
    }
    if creating {
        for archive in line.values('f', "file").filter(|file| file.text != "-") {
            result = result.worse(write_target(archive, context));
        }
    }
    result
}

fn zip(args: &[Word], context: &Context) -> Classification {
    let runs_program = args
        .iter()
        .any(|word| word.text.starts_with("-TT") || word.text.starts_with("--unzip-command"));
    if runs_program {
        return classified(DangerClass::CodeExecution, "zip runs a test command");
    }
    let line = options::parse(args, OptionSpec::new("bnti", &["temp-path"]));
    let floor = classified(DangerClass::LocalWrite, "zip writes an archive");
    match line.operands.first() {
        Some(archive) => floor.worse(write_target(archive, context)),
        None => floor,
    }
}

fn unzip(args: &[Word], context: &Context) -> Classification {
    let line = options::parse(args, OptionSpec::new("dP", &[]));
    let lists = ['l', 'v', 't', 'p', 'c', 'Z', 'z']
        .iter()
        .any(|f| line.has_short(*f));
    if lists {
        return safe("unzip lists or prints an archive");
    }
    line.values('d', "")
        .map(|directory| write_target(directory, context))
        .fold(
            classified(DangerClass::LocalWrite, "unzip extracts files"),
            Classification::worse,
        )
}

fn compressor(name: &str, args: &[Word], context: &Context) -> Classification {
    let line = options::parse(args, OptionSpec::new("S", &["suffix"]));
    let to_stdout = line.has('c', "stdout")
        || line.has_long("to-stdout")
        || line.has('l', "list")
        || line.has('t', "test");
    if to_stdout {
        return safe(format!("{name} writes to standard output"));
    }
    line.operands
        .iter()
        .map(|target| write_target(target, context))
        .fold(
            classified(DangerClass::LocalWrite, format!("{name} replaces files")),
            Classification::worse,
        )
}

/// `split [FILE [PREFIX]]`: the pieces are written next to PREFIX; `--filter` runs a
/// command for each.
fn split(args: &[Word], context: &Context) -> Classification {
    let spec = OptionSpec::new(
        "abClnt",
        &[
            "suffix-length",
            "bytes",
            "line-bytes",
            "lines",
            "number",
            "separator",
            "additional-suffix",
            "filter",
        ],
    );
    let line = options::parse(args, spec);
    if line.has_long("filter") {
        return classified(DangerClass::CodeExecution, "split --filter runs a command");
    }
    let floor = classified(DangerClass::LocalWrite, "split writes files");
    match line.operands.get(1) {
        Some(prefix) => floor.worse(write_target(prefix, context)),
        None => floor,
    }
}

/// `csplit -f PREFIX FILE PATTERN…`: the pieces are written next to PREFIX (`xx` here).
fn csplit(args: &[Word], context: &Context) -> Classification {
    let spec = OptionSpec::new("fbn", &["prefix", "suffix-format", "digits"]);
    let line = options::parse(args, spec);
    let floor = classified(DangerClass::LocalWrite, "csplit writes files");
    match line.value('f', "prefix") {
        Some(prefix) => floor.worse(write_target(prefix, context)),
        None => floor,
    }
}

fn tee(args: &[Word], context: &Context) -> Classification {
    let line = options::parse(args, OptionSpec::default());
    line.operands
        .iter()
        .map(|target| write_target(target, context))
        .fold(safe("tee copies its input"), Classification::worse)
}

fn sort(args: &[Word], context: &Context) -> Classification {
    let spec = OptionSpec::new(
        "kStTo",
        &[
            "output",
            "key",
            "field-separator",
            "temporary-directory",
            "buffer-size",
            "files0-from",
            "compress-program",
        ],
    );
    let line = options::parse(args, spec);
    if line.has_long("compress-program") {
        return classified(
            DangerClass::CodeExecution,
            "sort runs a compression program",
        );
    }
    line.values('o', "output")
        .map(|target| write_target(target, context))
        .fold(safe("sort only prints"), Classification::worse)
}

/// `uniq IN OUT`, `xxd IN OUT`: a second operand is an output file.
fn second_operand_output(
    name: &str,
    args: &[Word],
    context: &Context,
    short_values: &str,
) -> Classification {
    let line = options::parse(args, OptionSpec::new(short_values, &[]));
    let floor = safe(format!("{name} only prints"));
    match line.operands.get(1) {
        Some(output) => floor.worse(write_target(output, context)),
        None => floor,
    }
}

fn sed(args: &[Word], context: &Context) -> Classification {
    let line = options::parse(
        args,
        OptionSpec::new("efl", &["expression", "file", "line-length"]),
    );
    let in_place = line.has_short('i') || line.has_long_prefix("in-place");
    let sandboxed = line.has_long("sandbox");
    let mut scripts: Vec<&str> = line
        .values('e', "expression")
        .map(|word| word.text.as_str())
        .collect();
    let script_file = line.value('f', "file");
    let mut files: &[&Word] = &line.operands;
    if scripts.is_empty()
        && script_file.is_none()
        && let Some((script, rest)) = line.operands.split_first()
    {
        scripts.push(script.text.as_str());
        files = rest;
    }
    let mut result = if in_place {
        classified(DangerClass::LocalWrite, "sed -i edits files in place")
    } else {
        safe("sed only prints")
    };
    if in_place {
        for file in files {
            result = result.worse(write_target(file, context));
        }
    }
    if sandboxed {
        return result;
    }
    if script_file.is_some() {
        result = result.worse(classified(
            DangerClass::CodeExecution,
            "sed runs a script file, which may run commands",
        ));
    }
    for script in scripts {
        result = result.worse(super::sed_script::classify(script, context));
    }
    result
}

fn awk(args: &[Word]) -> Classification {
    let spec = OptionSpec::new(
        "Ffvile",
        &[
            "file",
            "field-separator",
            "assign",
            "include",
            "load",
            "source",
        ],
    );
    let line = options::parse(args, spec);
    let loads_code = line.has('f', "file") || line.has('i', "include") || line.has('l', "load");
    if loads_code {
        return classified(
            DangerClass::CodeExecution,
            "awk loads program code from a file",
        );
    }
    let mut programs: Vec<&str> = line
        .values('e', "source")
        .map(|word| word.text.as_str())
        .collect();
    if programs.is_empty() {
        programs.extend(line.operands.first().map(|word| word.text.as_str()));
    }
    programs
        .into_iter()
        .map(awk_program)
        .fold(safe("awk only prints"), Classification::worse)
}

fn awk_program(program: &str) -> Classification {
    let compact: String = program.chars().filter(|c| !c.is_whitespace()).collect();
    let pipes = compact
        .match_indices('|')
        .any(|(index, _)| !compact[index..].starts_with("||") && !compact[..index].ends_with('|'));
    if compact.contains("system(") || compact.contains("@load") || pipes {
        return classified(
            DangerClass::CodeExecution,
            "awk runs a shell command (system() or a pipe)",
        );
    }
    let writes = program.split([';', '{', '}', '\n']).any(|statement| {
        let statement = statement.trim_start();
        (statement.starts_with("print") || statement.starts_with("printf"))
            && statement.contains('>')
    });
    if writes {
        return classified(DangerClass::LocalWrite, "awk writes to a file");
    }
    safe("awk only prints")
}
