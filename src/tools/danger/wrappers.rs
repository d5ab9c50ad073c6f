//! The dispatch to every program's rules, the wrappers that run another command (`env`,
//! `xargs`, `sudo`, `timeout`, tracers, …), shells and shell built-ins (`eval`, `source`,
//! `trap`, declarations).
//!
//! Programs that only read or print are listed, with their safe options, in
//! [`super::safe_programs`]; everything not known anywhere is an unknown command (fail
//! closed).

use super::analyzer::{
    Analyzer, Context, Stdin, Worst, is_assignment, join_words, risky_assignment, safe,
};
use super::options::{self, OptionSpec};
use super::syntax::Word;
use crate::danger_policy::{Classification, DangerClass, classified};

/// Programs that run a command given somewhere in their arguments (tracers, sandboxes,
/// schedulers of their own), analysed with [`Analyzer::trailing_commands`].
const RUNNERS: &[&str] = &[
    "strace",
    "ltrace",
    "valgrind",
    "gdb",
    "lldb",
    "perf",
    "hyperfine",
    "parallel",
    "firejail",
    "bwrap",
    "unshare",
    "nsenter",
    "systemd-run",
    "script",
    "tmux",
    "screen",
    "entr",
    "faketime",
    "proxychains",
    "proxychains4",
    "torsocks",
    "xvfb-run",
    "sg",
    "runuser",
    "ssh-agent",
    "dbus-launch",
    "catchsegv",
    "taskset",
    "chrt",
    "cpulimit",
    "numactl",
    "prlimit",
    "direnv",
    "nix-shell",
    "expect",
];

/// Shells: `-c` strings are analysed, scripts and standard input are code execution.
const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh", "fish", "csh", "tcsh",
];

impl Analyzer {
    /// The rule for `name`, or `None` when the program is not known.
    pub(super) fn known_program(
        &mut self,
        name: &str,
        args: &[Word],
        context: &Context,
    ) -> Option<Classification> {
        if let Some(found) = self.wrapper(name, args, context) {
            return Some(found);
        }
        if let Some(found) = self.shell_builtin(name, args, context) {
            return Some(found);
        }
        if let Some(found) = self.file_program(name, args, context) {
            return Some(found);
        }
        if let Some(found) = self.software_program(name, args, context) {
            return Some(found);
        }
        if let Some(found) = self.network_program(name, args, context) {
            return Some(found);
        }
        if let Some(found) = super::system::system_program(name, args) {
            return Some(found);
        }
        super::safe_programs::classify(name, args, context)
    }

    /// Programs that run another command given as their arguments.
    fn wrapper(&mut self, name: &str, args: &[Word], context: &Context) -> Option<Classification> {
        let inner_start = match name {
            "command" if args.iter().any(|w| w.text == "-v" || w.text == "-V") => {
                return Some(safe("command -v only looks a name up"));
            }
            "command" | "builtin" | "nohup" | "setsid" | "unbuffer" | "chronic" | "busybox"
            | "toybox" | "coproc" | "noglob" | "nocorrect" => options::first_operand(args, "", &[]),
            "exec" => options::first_operand(args, "a", &[]),
            "time" => options::first_operand(args, "fo", &["format", "output"]),
            "nice" => options::first_operand(args, "n", &["adjustment"]),
            "ionice" => options::first_operand(args, "cnp", &["class", "classdata", "pid"]),
            "timeout" => {
                options::first_operand(args, "sk", &["signal", "kill-after"]).map(|i| i + 1)
            }
            "stdbuf" => options::first_operand(args, "ioe", &["input", "output", "error"]),
            "caffeinate" => options::first_operand(args, "tw", &[]),
            _ if RUNNERS.contains(&name) => {
                let floor = classified(
                    DangerClass::CodeExecution,
                    format!("{name} runs another program"),
                );
                return Some(floor.worse(self.trailing_commands(args, context)));
            }
            "env" => return Some(self.env(args, context)),
            "xargs" => return Some(self.xargs(args, context)),
            "sudo" | "doas" | "sudoedit" | "run0" | "pkexec" => {
                return Some(self.privileged(name, args, context));
            }
            "su" => return Some(self.su(args, context)),
            "watch" => return Some(self.watch(args, context)),
            "flock" => return Some(self.flock(args, context)),
            "chroot" => return Some(self.chroot(args, context)),
            _ => return None,
        };
        let inner = inner_start
            .and_then(|start| args.get(start..))
            .unwrap_or(&[]);
        if inner.is_empty() {
            return Some(safe(format!("{name} with nothing to run")));
        }
        Some(self.wrapped_command(inner, context))
    }

    fn env(&mut self, args: &[Word], context: &Context) -> Classification {
        let spec = OptionSpec::wrapper("uCSP", &["unset", "chdir", "split-string", "path"]);
        let line = options::parse(args, spec);
        let inner = line
            .first_operand
            .and_then(|start| args.get(start..))
            .unwrap_or(&[]);
        if let Some(split) = line.value('S', "split-string") {
            let text = format!("{} {}", split.text, join_words(inner));
            return self.script(&text, context.depth + 1, context.cwd, context.functions);
        }
        if inner.is_empty() {
            return safe("env only prints the environment");
        }
        self.wrapped_command(inner, context)
    }

    /// `xargs CMD`: CMD runs with arguments read from standard input, which are unknown.
    fn xargs(&mut self, args: &[Word], context: &Context) -> Classification {
        let spec = OptionSpec::wrapper(
            "adEILnPs",
            &[
                "arg-file",
                "delimiter",
                "eof",
                "max-lines",
                "max-args",
                "max-procs",
                "max-chars",
                "process-slot-var",
            ],
        );
        let line = options::parse(args, spec);
        let replace = line
            .value('I', "replace")
            .map(|word| word.text.clone())
            .or_else(|| xargs_short_replace(args))
            .or_else(|| line.has_long("replace").then(|| "{}".to_string()));
        let inner = line
            .first_operand
            .and_then(|start| args.get(start..))
            .unwrap_or(&[]);
        if inner.is_empty() {
            return safe("xargs runs echo");
        }
        let words: Vec<Word> = match replace {
            Some(marker) => inner
                .iter()
                .map(|word| word.with_marker(&marker, "$XARGS"))
                .collect(),
            None => {
                let mut words = inner.to_vec();
                words.push(Word::dynamic("$XARGS"));
                words
            }
        };
        self.wrapped_command(&words, context)
    }

    fn privileged(&mut self, name: &str, args: &[Word], context: &Context) -> Classification {
        let floor = classified(
            DangerClass::SystemWrite,
            format!("runs as another user ({name})"),
        );
        if name == "sudoedit" {
            return floor;
        }
        let spec = OptionSpec::wrapper(
            "uUgChpPrtTDR",
            &[
                "user",
                "group",
                "close-from",
                "chdir",
                "host",
                "prompt",
                "role",
                "type",
                "command-timeout",
                "other-user",
                "chroot",
            ],
        );
        let line = options::parse(args, spec);
        if line.has('e', "edit") {
            return floor;
        }
        let inner = line
            .first_operand
            .and_then(|start| args.get(start..))
            .unwrap_or(&[]);
        if inner.is_empty() {
            return floor;
        }
        floor.worse(self.wrapped_command(inner, context))
    }

    fn su(&mut self, args: &[Word], context: &Context) -> Classification {
        let spec = OptionSpec::new(
            "csgGw",
            &[
                "command",
                "session-command",
                "shell",
                "group",
                "supp-group",
                "whitelist-environment",
            ],
        );
        let line = options::parse(args, spec);
        let mut result = classified(DangerClass::SystemWrite, "switches to another user (su)");
        let commands = line
            .values('c', "command")
            .chain(line.values('c', "session-command"));
        for command in commands {
            result = result.worse(self.script(&command.text, context.depth + 1, context.cwd, &[]));
        }
        result
    }

    fn watch(&mut self, args: &[Word], context: &Context) -> Classification {
        let line = options::parse(args, OptionSpec::wrapper("nq", &["interval"]));
        let inner = line
            .first_operand
            .and_then(|start| args.get(start..))
            .unwrap_or(&[]);
        if inner.is_empty() {
            return safe("watch with nothing to run");
        }
        if line.has('x', "exec") {
            return self.wrapped_command(inner, context);
        }
        self.script(
            &join_words(inner),
            context.depth + 1,
            context.cwd,
            context.functions,
        )
    }

    fn flock(&mut self, args: &[Word], context: &Context) -> Classification {
        let line = options::parse(args, OptionSpec::wrapper("wEc", &["timeout", "command"]));
        if let Some(command) = line.value('c', "command") {
            return self.script(&command.text, context.depth + 1, context.cwd, &[]);
        }
        let after_lock = line
            .first_operand
            .and_then(|start| args.get(start + 1..))
            .unwrap_or(&[]);
        match after_lock.split_first() {
            Some((flag, rest)) if flag.text == "-c" || flag.text == "--command" => {
                let text = rest.first().map_or("", |word| word.text.as_str());
                self.script(text, context.depth + 1, context.cwd, &[])
            }
            Some(_) => self.wrapped_command(after_lock, context),
            None => safe("flock on a descriptor"),
        }
    }

    fn chroot(&mut self, args: &[Word], context: &Context) -> Classification {
        let floor = classified(
            DangerClass::SystemWrite,
            "changes the root directory (chroot)",
        );
        let start = options::first_operand(args, "", &["userspec", "groups"]);
        let inner = start.and_then(|start| args.get(start + 1..)).unwrap_or(&[]);
        if inner.is_empty() {
            return floor;
        }
        floor.worse(self.wrapped_command(inner, context))
    }

    /// Shells, `eval`, `source`, `trap`, `function` and declarations.
    fn shell_builtin(
        &mut self,
        name: &str,
        args: &[Word],
        context: &Context,
    ) -> Option<Classification> {
        let found = match name {
            _ if SHELLS.contains(&name) => self.shell(name, args, context),
            "man" => self.man(args, context),
            "eval" => {
                let floor = classified(
                    DangerClass::CodeExecution,
                    "eval runs a constructed command",
                );
                let text = join_words(args);
                floor.worse(self.script(&text, context.depth + 1, context.cwd, context.functions))
            }
            "source" | "." => classified(
                DangerClass::CodeExecution,
                format!("{name} runs a script in the current shell"),
            ),
            "trap" => self.trap(args, context),
            "function" => self.function_keyword(args, context),
            "export" | "declare" | "typeset" | "local" | "readonly" => declaration(args),
            _ => return None,
        };
        Some(found)
    }

    /// `man -P CMD`, `man -H CMD`: the pager or browser is a shell command.
    fn man(&mut self, args: &[Word], context: &Context) -> Classification {
        let spec = OptionSpec::new(
            "PHCMLmSs",
            &[
                "pager",
                "config-file",
                "manpath",
                "locale",
                "systems",
                "sections",
            ],
        );
        let line = options::parse(args, spec);
        let mut result = Worst::default();
        for command in line.values('P', "pager").chain(line.values('H', "html")) {
            result.add(Classification::new(
                DangerClass::CodeExecution,
                "man runs a chosen pager or browser",
            ));
            result.add(self.script(&command.text, context.depth + 1, context.cwd, &[]));
        }
        result.or_safe("man only prints")
    }

    fn shell(&mut self, name: &str, args: &[Word], context: &Context) -> Classification {
        let mut index = 0;
        let mut command_flag = false;
        let mut stdin_flag = false;
        while let Some(word) = args.get(index) {
            let text = word.text.as_str();
            match text {
                "--version" | "--help" => return safe(format!("{name} prints its version")),
                "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file" => index += 2,
                "--" => {
                    index += 1;
                    break;
                }
                _ if text.len() > 1 && (text.starts_with('-') || text.starts_with('+')) => {
                    if !text.starts_with("--") {
                        command_flag |= text.contains('c');
                        stdin_flag |= text.contains('s');
                    }
                    index += 1;
                }
                _ => break,
            }
        }
        let operand = args.get(index);
        if command_flag {
            return match operand {
                Some(script) => self.script(&script.text, context.depth + 1, context.cwd, &[]),
                None => safe(format!("{name} -c without a command")),
            };
        }
        match (operand, &context.stdin) {
            (Some(file), _) if !stdin_flag => classified(
                DangerClass::CodeExecution,
                format!("{name} runs the script {}", file.text),
            ),
            (_, Stdin::Text(text)) => self.script(text, context.depth + 1, context.cwd, &[]),
            (_, Stdin::Pipe) => classified(
                DangerClass::CodeExecution,
                format!("{name} runs commands read from a pipe"),
            ),
            (_, Stdin::Unknown) => classified(
                DangerClass::CodeExecution,
                format!("{name} runs commands from standard input"),
            ),
        }
    }

    fn trap(&mut self, args: &[Word], context: &Context) -> Classification {
        let line = options::parse(args, OptionSpec::default());
        match line.operands.first() {
            Some(action) if line.operands.len() > 1 && action.text != "-" => self.script(
                &action.text,
                context.depth + 1,
                context.cwd,
                context.functions,
            ),
            _ => safe("trap only lists or resets handlers"),
        }
    }

    /// `function name { body; }`: the body's first command shares the simple command.
    fn function_keyword(&mut self, args: &[Word], context: &Context) -> Classification {
        let body: Vec<Word> = args
            .iter()
            .skip(1)
            .skip_while(|word| matches!(word.text.as_str(), "()" | "{" | "(" | ")"))
            .cloned()
            .collect();
        if body.is_empty() {
            return safe("defines a function");
        }
        self.wrapped_command(&body, context)
    }
}

/// `-i` with an attached replacement string (`-i{}`, `-i%`) or alone (`{}`).
fn xargs_short_replace(args: &[Word]) -> Option<String> {
    args.iter()
        .take_while(|word| word.text.starts_with('-'))
        .find_map(|word| word.text.strip_prefix("-i"))
        .map(|rest| {
            if rest.is_empty() {
                "{}".to_string()
            } else {
                rest.to_string()
            }
        })
}

fn declaration(args: &[Word]) -> Classification {
    args.iter()
        .filter(|word| is_assignment(word))
        .filter_map(|word| risky_assignment(&word.text))
        .fold(safe("sets shell variables"), Classification::worse)
}
