//! Walks parsed shell text and classifies every simple command in it, including the ones
//! hidden in substitutions, `sh -c` strings, `eval`, wrappers (`env`, `sudo`, `xargs`, …)
//! and `find -exec`. The per-program rules live in [`super::wrappers`] (the dispatch, wrappers,
//! shells), [`super::file_commands`], [`super::git`], [`super::toolchains`], [`super::network`],
//! [`super::system`] and [`super::safe_programs`].

use super::lexer;
use super::paths::{self, Anchor, WorkingDirectory, is_root_like, normalize};
use super::secrets;
use super::syntax::{Parsed, RedirectKind, SimpleCommand, Word};
use crate::danger_policy::{Classification, DangerClass};

/// Deepest nesting of substitutions, `sh -c`, `eval` and wrappers that is analysed; anything
/// deeper is blocked (no real command nests this far, and nothing hidden there may run).
pub(super) const MAX_DEPTH: usize = 16;

/// Most simple commands analysed for one command string (wrappers with unknown option
/// grammars are analysed at several positions, which multiplies); beyond it the command is
/// blocked.
const MAX_COMMANDS: usize = 10_000;

/// Most shell text read for one command string, at least: the text itself, every
/// substitution, expansion, `sh -c` and `eval` string analysed, and the words their brace
/// expansions produce. `eval` of brace-expanded substitutions multiplies the text at every
/// level (the fuzzer found a 108-byte line that reads 2.3 MB before the depth limit); beyond
/// the budget the command is blocked. A command longer than a few hundred kilobytes gets
/// [`TEXT_READ_PER_BYTE`] times its length instead, so a 1 MiB here-document fed to a shell
/// (read about four times: the text, its words, the script, its words) stays well under it.
const MIN_TEXT_READ: usize = 1 << 20;

/// The budget per byte of the command for long commands (see [`MIN_TEXT_READ`]).
const TEXT_READ_PER_BYTE: usize = 8;

/// The text-read budget of a command of `length` bytes.
pub(super) fn text_read_budget(length: usize) -> usize {
    MIN_TEXT_READ.max(length.saturating_mul(TEXT_READ_PER_BYTE))
}

/// Classifies shell text and remembers every simple command it saw (for the denylist).
#[derive(Debug, Default)]
pub(super) struct Analyzer {
    /// Each simple command found, as its words joined by single spaces (assignments and
    /// wrappers removed where they were analysed away).
    pub commands_seen: Vec<String>,
    /// The parts of the command string, each with its own classification: every simple
    /// command of the top level (its words and redirections) and every substitution in it.
    pub parts: Vec<(String, Classification)>,
    /// Whether `parts` is filled (only for a prompt: classifying alone needs no copies).
    pub collect_parts: bool,
    /// Bytes of shell text read so far (see [`MIN_TEXT_READ`]).
    pub(super) text_read: usize,
    /// Bytes of shell text that may be read ([`text_read_budget`] of the command).
    text_budget: usize,
}

/// Where a command's standard input comes from.
#[derive(Clone, Debug)]
pub(super) enum Stdin {
    /// Nothing known (a terminal, or nothing at all).
    Unknown,
    /// The output of another command.
    Pipe,
    /// Text that is known in advance: a here-document, a here-string, or `echo '…' |`.
    Text(String),
}

/// What a simple command is analysed in.
#[derive(Clone, Debug)]
pub(super) struct Context<'a> {
    pub depth: usize,
    pub cwd: WorkingDirectory,
    pub stdin: Stdin,
    /// Functions defined in the surrounding text: calling them is analysed at the definition.
    pub functions: &'a [String],
}

impl Context<'_> {
    /// The context of a command run by this one (a wrapper's inner command).
    pub fn deeper(&self) -> Self {
        Self {
            depth: self.depth + 1,
            ..self.clone()
        }
    }
}

/// Shell keywords that may precede a command in the same simple command.
const SKIPPED_KEYWORDS: &[&str] = &[
    "!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "esac",
];

/// Variables whose value changes which program later commands run, or injects code into
/// them.
const RISKY_VARIABLES: &[&str] = &[
    "PATH",
    "BASH_ENV",
    "ENV",
    "IFS",
    "PROMPT_COMMAND",
    "SHELLOPTS",
    "BASHOPTS",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "PYTHONHOME",
    "NODE_OPTIONS",
    "NODE_PATH",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "RUBYOPT",
    "RUBYLIB",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_EXTERNAL_DIFF",
    "GIT_PAGER",
    "GIT_EDITOR",
    "GIT_ASKPASS",
    "GIT_EXEC_PATH",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG",
    "GIT_DIR",
    "SSH_ASKPASS",
    "PAGER",
    "MANPAGER",
    "SYSTEMD_PAGER",
    "EDITOR",
    "VISUAL",
    "LESSOPEN",
    "BROWSER",
];

/// Directories whose programs are the system's own (`/usr/bin/rm` is `rm`).
const SYSTEM_BIN_DIRS: &[&str] = &[
    "/bin",
    "/sbin",
    "/usr/bin",
    "/usr/sbin",
    "/usr/local/bin",
    "/usr/local/sbin",
    "/opt/homebrew/bin",
    "/opt/homebrew/sbin",
];

/// The worst classification seen so far; the first one found keeps its reason on ties.
#[derive(Debug, Default)]
pub(super) struct Worst(pub Option<Classification>);

impl Worst {
    pub fn add(&mut self, found: Classification) {
        self.0 = Some(match self.0.take() {
            Some(current) => current.worse(found),
            None => found,
        });
    }

    pub fn add_optional(&mut self, found: Option<Classification>) {
        if let Some(found) = found {
            self.add(found);
        }
    }

    pub fn or_safe(self, reason: &str) -> Classification {
        self.0.unwrap_or_else(|| safe(reason))
    }
}

pub(super) fn safe(reason: impl Into<String>) -> Classification {
    Classification::new(DangerClass::Safe, reason)
}

/// Bytes of the words and redirection targets a parse produced (brace expansion makes
/// them more than the text).
fn words_size(parsed: &Parsed) -> usize {
    parsed
        .commands
        .iter()
        .flat_map(|command| {
            let targets = command.redirects.iter().map(|redirect| &redirect.target);
            command.words.iter().chain(targets)
        })
        .map(|word| word.text.len())
        .sum()
}

fn too_complex() -> Classification {
    Classification::new(
        DangerClass::Blocked,
        "the command is too complex to be analysed",
    )
}

pub(super) fn too_deep() -> Classification {
    Classification::new(
        DangerClass::Blocked,
        "the command nests too deeply to be analysed",
    )
}

impl Analyzer {
    /// Classifies a whole command string: the worst of every command in it.
    pub fn classify(&mut self, text: &str) -> Classification {
        self.text_budget = text_read_budget(text.len());
        self.script(text, 0, WorkingDirectory::Tree, &[])
    }

    /// Counts `bytes` more of text read; false once the budget is spent.
    fn read(&mut self, bytes: usize) -> bool {
        self.text_read = self.text_read.saturating_add(bytes);
        self.text_read <= self.text_budget
    }

    /// Classifies shell text run at `depth`, starting in `cwd`.
    pub fn script(
        &mut self,
        text: &str,
        depth: usize,
        cwd: WorkingDirectory,
        inherited_functions: &[String],
    ) -> Classification {
        if depth > MAX_DEPTH {
            return too_deep();
        }
        if !self.read(text.len()) {
            return too_complex();
        }
        let parsed = lexer::parse_script(text);
        if !self.read(words_size(&parsed)) {
            return too_complex();
        }
        let mut functions = inherited_functions.to_vec();
        functions.extend(parsed.functions.iter().cloned());
        let mut result = Worst::default();
        let mut cwd = cwd;
        for (index, command) in parsed.commands.iter().enumerate() {
            let context = Context {
                depth,
                cwd,
                stdin: stdin_of(&parsed.commands, index),
                functions: &functions,
            };
            let found = self.simple_command(command, &context);
            if depth == 0 && self.collect_parts {
                self.parts.push((part_text(command), found.clone()));
            }
            result.add(found);
            cwd = after_directory_change(command, cwd);
        }
        result.add_optional(self.nested(&parsed, depth, cwd, &functions));
        result.add_optional(fork_bomb(text, &parsed.functions));
        if parsed.incomplete {
            result.add(Classification::new(
                DangerClass::Unknown,
                "the command is incomplete (a quote, substitution or expansion is never closed), so what it would run is unknown",
            ));
        }
        result.or_safe("no command to run")
    }

    /// Substitutions and expansions found in `parsed`, one level deeper.
    fn nested(
        &mut self,
        parsed: &Parsed,
        depth: usize,
        cwd: WorkingDirectory,
        functions: &[String],
    ) -> Option<Classification> {
        let mut result = Worst::default();
        for substitution in &parsed.substitutions {
            let found = self.script(substitution, depth + 1, cwd, functions);
            if depth == 0 && self.collect_parts {
                self.parts
                    .push((format!("$({substitution})"), found.clone()));
            }
            result.add(found);
        }
        for expansion in &parsed.expansions {
            if depth + 1 > MAX_DEPTH {
                return Some(too_deep());
            }
            if !self.read(expansion.len()) {
                return Some(too_complex());
            }
            let inner = lexer::parse_expansion(expansion);
            result.add_optional(self.nested(&inner, depth + 1, cwd, functions));
        }
        result.0
    }

    fn simple_command(&mut self, command: &SimpleCommand, context: &Context) -> Classification {
        let mut result = Worst::default();
        result.add_optional(self.command_words(&command.words, context));
        let is_test_expression = skip_assignments(&command.words)
            .first()
            .is_some_and(|word| word.text == "[[");
        for redirect in &command.redirects {
            match redirect.kind {
                RedirectKind::Write if !is_test_expression => {
                    result.add(write_target(&redirect.target, context));
                }
                RedirectKind::Read if !is_network_device(&redirect.target.text) => {
                    result.add_optional(secrets::redirect_reads_secret(
                        &redirect.target.text,
                        context.cwd,
                    ));
                }
                RedirectKind::Read => {
                    result.add(Classification::new(
                        DangerClass::NetworkEgress,
                        format!("reads from the network through {}", redirect.target.text),
                    ));
                }
                _ => {}
            }
        }
        result.or_safe("no command to run")
    }

    /// Classifies one command given as words: assignments, keywords, then the program.
    /// `None` when there is no program and no risky assignment (`FOO=1`, `}`).
    pub fn command_words(&mut self, words: &[Word], context: &Context) -> Option<Classification> {
        if context.depth > MAX_DEPTH {
            return Some(too_deep());
        }
        if self.commands_seen.len() >= MAX_COMMANDS {
            return Some(too_complex());
        }
        let mut result = Worst::default();
        let mut index = 0;
        while let Some(word) = words.get(index) {
            if is_assignment(word) {
                result.add_optional(risky_assignment(&word.text));
            } else if word.quoted || !SKIPPED_KEYWORDS.contains(&word.text.as_str()) {
                break;
            }
            index += 1;
        }
        let Some(program) = words.get(index) else {
            return result.0;
        };
        let arguments = words.get(index + 1..).unwrap_or(&[]);
        self.commands_seen.push(join_words(&words[index..]));
        let found = self.program(program, arguments, context);
        result.add(found);
        let name = program.text.rsplit('/').next().unwrap_or(&program.text);
        result.add_optional(secrets::command_reads_secret(name, arguments, context.cwd));
        result.0
    }

    /// For programs that run another command somewhere in their arguments, with an option
    /// grammar not modelled here (`strace -o f rm …`, `uv run rm …`): the worst of the
    /// commands starting at each of the first few non-option words, and of every argument
    /// that looks like a command string.
    pub fn trailing_commands(&mut self, words: &[Word], context: &Context) -> Classification {
        const CANDIDATES: usize = 4;
        let mut result = Worst::default();
        let starts = (0..words.len())
            .filter(|start| !words[*start].text.starts_with('-'))
            .take(CANDIDATES);
        for start in starts {
            result.add(self.wrapped_command(&words[start..], context));
        }
        for word in words.iter().filter(|word| word.text.contains(' ')) {
            result.add(self.script(&word.text, context.depth + 1, context.cwd, &[]));
        }
        result.or_safe("no command to run")
    }

    /// [`Analyzer::command_words`] for a wrapped command: nothing to run is safe.
    pub fn wrapped_command(&mut self, words: &[Word], context: &Context) -> Classification {
        self.command_words(words, &context.deeper())
            .unwrap_or_else(|| safe("no command to run"))
    }

    fn program(&mut self, program: &Word, arguments: &[Word], context: &Context) -> Classification {
        if program.dynamic {
            return self.computed_program(program, arguments, context);
        }
        let text = program.text.as_str();
        let (directory, name) = match text.rfind('/') {
            Some(slash) => (Some(&text[..slash]), &text[slash + 1..]),
            None => (None, text),
        };
        if name.is_empty() {
            return Classification::new(
                DangerClass::Unknown,
                format!("cannot tell what {text} runs"),
            );
        }
        if directory.is_none() && context.functions.iter().any(|f| f == name) {
            return safe(format!("calls the function {name} defined in the command"));
        }
        let lower_case = name.to_ascii_lowercase();
        let known = match self.known_program(name, arguments, context) {
            // Case-insensitive file systems (macOS) run `/bin/rm` for `RM`.
            None if lower_case != name => self.known_program(&lower_case, arguments, context),
            known => known,
        };
        let outside_system = directory.is_some_and(|dir| !is_system_bin_dir(dir));
        let by_path = || {
            Classification::new(
                DangerClass::CodeExecution,
                format!("runs {text}, a program outside the system directories"),
            )
        };
        match (known, outside_system) {
            (Some(known), false) => known,
            (Some(known), true) => known.worse(by_path()),
            (None, true) => by_path(),
            (None, false) => {
                Classification::new(DangerClass::Unknown, format!("unknown command {name}"))
            }
        }
    }
}

impl Analyzer {
    /// A program whose name is computed (`$CMD -rf /`, `$(echo rm) …`): unknown at best. The
    /// expansion may be empty or a wrapper, so the remaining words are classified as a
    /// command too, and a root-like argument blocks it.
    fn computed_program(
        &mut self,
        program: &Word,
        arguments: &[Word],
        context: &Context,
    ) -> Classification {
        let mut result = Worst::default();
        if let Some(target) = arguments
            .iter()
            .find(|word| is_root_like(&normalize(&word.text), context.cwd))
        {
            result.add(Classification::new(
                DangerClass::Blocked,
                format!(
                    "a program only known at run time ({}) acts on {}",
                    program.text, target.text
                ),
            ));
        }
        result.add(Classification::new(
            DangerClass::Unknown,
            format!(
                "the program name ({}) is only known at run time",
                program.text
            ),
        ));
        if !arguments.is_empty() {
            result.add(self.wrapped_command(arguments, context));
        }
        result.or_safe("")
    }
}

/// The text a command receives on standard input, when it can be known.
fn stdin_of(commands: &[SimpleCommand], index: usize) -> Stdin {
    let Some(command) = commands.get(index) else {
        return Stdin::Unknown;
    };
    if let Some(text) = &command.stdin_text {
        return Stdin::Text(text.clone());
    }
    if !command.piped_from_previous {
        return Stdin::Unknown;
    }
    index
        .checked_sub(1)
        .and_then(|previous| commands.get(previous))
        .and_then(literal_output)
        .map_or(Stdin::Pipe, Stdin::Text)
}

/// A program's name without its folder (`/usr/bin/echo` → `echo`).
fn program_name(text: &str) -> &str {
    text.rsplit('/').next().unwrap_or(text)
}

/// The output of `echo …` or `printf '…'` with literal arguments.
fn literal_output(command: &SimpleCommand) -> Option<String> {
    let mut words = skip_assignments(&command.words);
    // `env echo …`, `command echo …` and `/bin/echo …` print the same.
    while let Some((first, rest)) = words.split_first() {
        if !matches!(program_name(&first.text), "env" | "command") {
            break;
        }
        if rest.first().is_some_and(|w| w.text.starts_with('-')) {
            return None;
        }
        words = skip_assignments(rest);
    }
    let (program, arguments) = words.split_first()?;
    if arguments.iter().any(|word| word.dynamic) {
        return None;
    }
    match program_name(&program.text) {
        "echo" => {
            let printed: Vec<&str> = arguments
                .iter()
                .map(|word| word.text.as_str())
                .skip_while(|text| matches!(*text, "-n" | "-e" | "-E" | "-ne" | "-en"))
                .collect();
            Some(printed.join(" ").replace("\\n", "\n"))
        }
        "printf" if arguments.len() == 1 => Some(arguments[0].text.replace("\\n", "\n")),
        _ => None,
    }
}

/// The working directory after `command` ran (only `cd`, `pushd` and `popd` move it).
fn after_directory_change(command: &SimpleCommand, cwd: WorkingDirectory) -> WorkingDirectory {
    let words = skip_assignments(&command.words);
    let Some((program, arguments)) = words.split_first() else {
        return cwd;
    };
    match program.text.as_str() {
        "cd" | "pushd" => {
            let target = arguments
                .iter()
                .find(|word| !word.text.starts_with('-') || word.text == "-");
            directory_after_cd(target, cwd)
        }
        "popd" => WorkingDirectory::Outside,
        _ => cwd,
    }
}

fn directory_after_cd(target: Option<&Word>, cwd: WorkingDirectory) -> WorkingDirectory {
    let Some(target) = target else {
        return WorkingDirectory::RootLike;
    };
    if secrets::leads_into_proc(&target.text, cwd) {
        return WorkingDirectory::Proc;
    }
    if target.text == "-" || (target.dynamic && !is_home_prefixed(&target.text)) {
        return WorkingDirectory::Outside;
    }
    let path = normalize(&target.text);
    if is_root_like(&path, cwd) {
        return WorkingDirectory::RootLike;
    }
    match (path.anchor, cwd) {
        (Anchor::Relative, WorkingDirectory::Tree) if !path.escapes => WorkingDirectory::Tree,
        _ => WorkingDirectory::Outside,
    }
}

pub(super) fn skip_assignments(words: &[Word]) -> &[Word] {
    let start = words
        .iter()
        .position(|word| !is_assignment(word))
        .unwrap_or(words.len());
    &words[start..]
}

/// `NAME=value` or `NAME+=value`.
pub(super) fn is_assignment(word: &Word) -> bool {
    let Some((name, _)) = word.text.split_once('=') else {
        return false;
    };
    let name = name.strip_suffix('+').unwrap_or(name);
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// An assignment to a variable that changes what later commands run, or what `odek upgrade`
/// installs (`ODEK_RELEASE_URL`, `ODEK_RELEASE_PUBKEY`: persistence, as the upgrade is).
pub(super) fn risky_assignment(text: &str) -> Option<Classification> {
    let name = text.split('=').next().unwrap_or("").trim_end_matches('+');
    if name.starts_with(crate::release::RELEASE_VAR_PREFIX) {
        return Some(Classification::new(
            DangerClass::Persistence,
            format!("sets {name}, which changes what odek upgrade installs"),
        ));
    }
    let risky = RISKY_VARIABLES.contains(&name)
        || name.starts_with("LD_")
        || name.starts_with("DYLD_")
        || name.starts_with("BASH_FUNC_");
    risky.then(|| {
        Classification::new(
            DangerClass::CodeExecution,
            format!("sets {name}, which changes what commands run"),
        )
    })
}

fn is_system_bin_dir(directory: &str) -> bool {
    let mut collapsed = String::with_capacity(directory.len());
    for c in directory.chars() {
        if !(c == '/' && collapsed.ends_with('/')) {
            collapsed.push(c);
        }
    }
    let collapsed = collapsed.trim_end_matches('/');
    SYSTEM_BIN_DIRS.contains(&collapsed)
}

pub(super) fn is_home_prefixed(text: &str) -> bool {
    ["$HOME", "${HOME}"].iter().any(|home| {
        text.strip_prefix(home)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    })
}

fn is_network_device(text: &str) -> bool {
    text.starts_with("/dev/tcp/") || text.starts_with("/dev/udp/")
}

/// Classifies writing to the file named by `target`.
pub(super) fn write_target(target: &Word, context: &Context) -> Classification {
    if target.text.is_empty() {
        return safe("no file to write");
    }
    if target.dynamic && !is_home_prefixed(&target.text) {
        return Classification::new(
            DangerClass::SystemWrite,
            format!("writes to a path only known at run time ({})", target.text),
        );
    }
    paths::classify_write(&target.text, None, context.cwd)
}

/// A simple command as its words and redirections (quotes removed), for prompts.
fn part_text(command: &SimpleCommand) -> String {
    let mut text = join_words(&command.words);
    for redirect in &command.redirects {
        let operator = match redirect.kind {
            RedirectKind::Write => ">",
            RedirectKind::Read => "<",
            RedirectKind::HereDocument => "<<",
            RedirectKind::HereString => "<<<",
            RedirectKind::Duplicate => continue,
        };
        text.push_str(&format!(" {operator} {}", redirect.target.text));
    }
    text
}

pub(super) fn join_words(words: &[Word]) -> String {
    words
        .iter()
        .map(|word| word.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A function that calls itself in a pipeline or in the background: `:(){ :|:& };:`.
fn fork_bomb(text: &str, functions: &[String]) -> Option<Classification> {
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    for name in functions.iter().filter(|name| !name.is_empty()) {
        let headers = [format!("{name}(){{"), format!("function{name}{{")];
        for header in &headers {
            let mut search_from = 0;
            while let Some(found) = compact[search_from..].find(header.as_str()) {
                let body_start = search_from + found + header.len();
                let body = compact[body_start..].split('}').next().unwrap_or_default();
                if spawns_itself(body, name) {
                    return Some(Classification::new(
                        DangerClass::Blocked,
                        "a fork bomb (a function that spawns itself without end)",
                    ));
                }
                search_from = body_start;
            }
        }
    }
    None
}

fn spawns_itself(body: &str, name: &str) -> bool {
    let piped = format!("{name}|{name}");
    if body.contains(&piped) {
        return true;
    }
    let backgrounded = format!("{name}&");
    body.match_indices(&backgrounded).any(|(index, _)| {
        let after = index + backgrounded.len();
        !body[after..].starts_with('&')
    })
}
