//! The rules for interpreters, build tools and package managers (`git` is in
//! [`super::git`]), and the dispatch to both.

use super::analyzer::{Analyzer, Context, safe};
use super::syntax::Word;
use crate::danger_policy::classified;
use crate::danger_policy::{Classification, DangerClass};

/// Interpreters and runtimes: anything they run is arbitrary code.
const INTERPRETERS: &[&str] = &[
    "node",
    "nodejs",
    "ruby",
    "irb",
    "perl",
    "php",
    "lua",
    "luajit",
    "Rscript",
    "R",
    "julia",
    "java",
    "groovy",
    "scala",
    "kotlin",
    "swift",
    "osascript",
    "pwsh",
    "powershell",
    "tclsh",
    "wish",
    "erl",
    "elixir",
    "iex",
    "ghci",
    "runghc",
    "deno",
    "open",
    "xdg-open",
];

/// Build tools, compilers and test runners: they run project code (build scripts, tests,
/// compiler plugins).
const BUILD_TOOLS: &[&str] = &[
    "make", "gmake", "cmake", "ninja", "meson", "bazel", "bazelisk", "buck", "gradle", "gradlew",
    "mvn", "mvnw", "ant", "sbt", "just", "rake", "gcc", "g++", "cc", "c++", "clang", "clang++",
    "rustc", "javac", "tsc", "esbuild", "vite", "webpack", "rollup", "zig", "nasm", "as", "ld",
    "tox", "nox", "pytest", "jest", "vitest", "mocha", "phpunit", "rspec", "ctest", "dotnet",
    "npx", "pnpx", "bunx", "uvx", "eslint", "mypy", "pyright", "pylint", "flake8",
];

/// System and language package managers (subcommand rules in [`package_manager`]).
const PACKAGE_MANAGERS: &[&str] = &[
    "apt",
    "apt-get",
    "aptitude",
    "yum",
    "dnf",
    "microdnf",
    "zypper",
    "apk",
    "brew",
    "port",
    "snap",
    "flatpak",
    "emerge",
    "pkg",
    "gem",
    "conda",
    "mamba",
    "micromamba",
    "composer",
    "bundle",
    "cpan",
    "cpanm",
    "luarocks",
    "opam",
    "pipx",
    "poetry",
    "rustup",
    "winget",
    "choco",
    "scoop",
];

impl Analyzer {
    /// git, interpreters, build tools and package managers.
    pub(super) fn software_program(
        &mut self,
        name: &str,
        args: &[Word],
        context: &Context,
    ) -> Option<Classification> {
        let found = match name {
            "git" => self.git(args, context),
            "cargo" => cargo(args),
            "go" => go(args),
            "npm" | "pnpm" | "yarn" | "bun" => node_package_manager(name, args),
            "uv" => uv(args),
            "dpkg" | "rpm" | "pacman" | "yay" | "paru" | "nix-env" => {
                package_tool_by_flag(name, args)
            }
            _ if is_python(name) => python(name, args),
            _ if is_pip(name) => pip(args),
            _ if INTERPRETERS.contains(&name) => interpreter(name, args),
            _ if BUILD_TOOLS.contains(&name) => build_tool(name, args),
            _ if PACKAGE_MANAGERS.contains(&name) => package_manager(name, args),
            _ => return None,
        };
        let ran = match runner_tail(name, args) {
            Some(tail) => self.trailing_commands(tail, context),
            None => safe("no command to run"),
        };
        Some(found.worse(ran))
    }
}

/// The words after a "run this command" subcommand (`npx X`, `uv run X`, `bundle exec X`,
/// `npm exec X`): they may name any program.
fn runner_tail<'w>(name: &str, args: &'w [Word]) -> Option<&'w [Word]> {
    if matches!(name, "npx" | "pnpx" | "bunx" | "uvx") {
        return Some(args);
    }
    let position = args.iter().position(|word| !word.text.starts_with('-'))?;
    let runs = matches!(
        (name, args[position].text.as_str()),
        ("npm" | "pnpm" | "yarn" | "bun", "exec" | "x" | "dlx")
            | (
                "uv" | "poetry" | "pipx" | "conda" | "mamba" | "micromamba" | "pdm" | "hatch",
                "run"
            )
            | ("uv", "tool")
            | ("bundle" | "opam", "exec")
    );
    runs.then(|| args.get(position + 1..).unwrap_or(&[]))
}

fn is_python(name: &str) -> bool {
    let version = name
        .strip_prefix("python")
        .or_else(|| name.strip_prefix("pypy"));
    version.is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit() || c == '.'))
        || name == "ipython"
}

fn is_pip(name: &str) -> bool {
    name.strip_prefix("pip")
        .is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

fn prints_version(args: &[Word]) -> bool {
    matches!(
        args,
        [only] if matches!(only.text.as_str(), "--version" | "-V" | "-v" | "version" | "--help" | "-h")
    )
}

fn python(name: &str, args: &[Word]) -> Classification {
    if prints_version(args) {
        return safe(format!("{name} prints its version"));
    }
    let module = args
        .iter()
        .position(|w| w.text == "-m")
        .and_then(|index| Some((args.get(index + 1)?, args.get(index + 2..)?)));
    match module {
        Some((module, rest)) if is_pip(&module.text) => pip(rest),
        Some((module, _)) if matches!(module.text.as_str(), "venv" | "virtualenv") => {
            classified(DangerClass::LocalWrite, "creates a virtual environment")
        }
        _ => classified(
            DangerClass::CodeExecution,
            format!("{name} runs Python code"),
        ),
    }
}

fn interpreter(name: &str, args: &[Word]) -> Classification {
    if prints_version(args) {
        return safe(format!("{name} prints its version"));
    }
    classified(DangerClass::CodeExecution, format!("{name} runs code"))
}

fn build_tool(name: &str, args: &[Word]) -> Classification {
    if prints_version(args) {
        return safe(format!("{name} prints its version"));
    }
    classified(
        DangerClass::CodeExecution,
        format!("{name} builds or runs project code"),
    )
}

/// The first word that is not an option (a subcommand), lower-cased.
fn subcommand(args: &[Word]) -> Option<String> {
    args.iter()
        .find(|word| !word.text.starts_with('-') && !word.text.starts_with('+'))
        .map(|word| word.text.to_ascii_lowercase())
}

fn pip(args: &[Word]) -> Classification {
    match subcommand(args).as_deref() {
        None => safe("pip prints its help"),
        Some("install" | "uninstall") => classified(DangerClass::Install, "pip installs packages"),
        Some("download" | "search" | "index") => {
            classified(DangerClass::NetworkEgress, "pip downloads package data")
        }
        Some(
            "list" | "show" | "freeze" | "check" | "config" | "debug" | "hash" | "help" | "cache"
            | "inspect",
        ) => safe("pip only reads"),
        Some("wheel") => classified(DangerClass::CodeExecution, "pip wheel builds packages"),
        Some(other) => classified(DangerClass::Unknown, format!("unknown pip command {other}")),
    }
}

fn uv(args: &[Word]) -> Classification {
    let words: Vec<&str> = args
        .iter()
        .filter(|w| !w.text.starts_with('-'))
        .map(|w| w.text.as_str())
        .collect();
    match words.as_slice() {
        [] | ["version" | "help", ..] => safe("uv prints information"),
        ["pip", ..] => pip(args.get(1..).unwrap_or(&[])),
        ["run" | "tool" | "build", ..] => classified(DangerClass::CodeExecution, "uv runs code"),
        ["tree", ..] => safe("uv tree only reads"),
        ["venv", ..] => classified(DangerClass::LocalWrite, "uv venv creates an environment"),
        ["publish", ..] => classified(DangerClass::NetworkUpload, "uv publish uploads a package"),
        _ => classified(DangerClass::Install, "uv installs or syncs packages"),
    }
}

fn cargo(args: &[Word]) -> Classification {
    match subcommand(args).as_deref() {
        None => safe("cargo prints its version or help"),
        Some(
            "version" | "help" | "tree" | "metadata" | "locate-project" | "pkgid"
            | "verify-project" | "read-manifest",
        ) => safe("cargo only reads"),
        Some(
            "install" | "uninstall" | "add" | "remove" | "rm" | "update" | "fetch" | "vendor"
            | "generate-lockfile",
        ) => classified(DangerClass::Install, "cargo changes dependencies"),
        Some("publish" | "yank" | "owner" | "login") => {
            classified(DangerClass::NetworkUpload, "cargo publishes to a registry")
        }
        Some("search" | "info") => {
            classified(DangerClass::NetworkEgress, "cargo queries a registry")
        }
        Some("fmt" | "new" | "init" | "clean") => {
            classified(DangerClass::LocalWrite, "cargo changes project files")
        }
        Some(_) => classified(
            DangerClass::CodeExecution,
            "cargo builds or runs project code (build scripts, tests)",
        ),
    }
}

fn go(args: &[Word]) -> Classification {
    let words: Vec<&str> = args
        .iter()
        .filter(|w| !w.text.starts_with('-'))
        .map(|w| w.text.as_str())
        .collect();
    let writes_env = args.iter().any(|w| w.text == "-w" || w.text == "-u");
    match words.as_slice() {
        [] | ["version" | "help" | "doc" | "list", ..] => safe("go only reads"),
        ["env", ..] if writes_env => {
            classified(DangerClass::SystemWrite, "go env -w changes user settings")
        }
        ["env", ..] | ["mod", "graph" | "why" | "verify", ..] => safe("go only reads"),
        ["install" | "get", ..] | ["mod", "download" | "tidy" | "vendor", ..] => {
            classified(DangerClass::Install, "go installs modules")
        }
        ["fmt" | "clean" | "work", ..] | ["mod", ..] => {
            classified(DangerClass::LocalWrite, "go changes project files")
        }
        _ => classified(DangerClass::CodeExecution, "go builds or runs project code"),
    }
}

fn node_package_manager(name: &str, args: &[Word]) -> Classification {
    let Some(sub) = subcommand(args) else {
        return if name == "yarn" {
            classified(DangerClass::Install, "yarn installs dependencies")
        } else {
            safe(format!("{name} prints its help"))
        };
    };
    match sub.as_str() {
        "install" | "i" | "in" | "isntall" | "add" | "ci" | "clean-install" | "update" | "up"
        | "upgrade" | "uninstall" | "un" | "unlink" | "remove" | "rm" | "r" | "link" | "ln"
        | "dedupe" | "prune" | "rebuild" => classified(
            DangerClass::Install,
            format!("{name} {sub} changes dependencies"),
        ),
        "publish" | "unpublish" | "deprecate" | "dist-tag" | "owner" | "access" | "login"
        | "adduser" | "logout" | "team" | "token" | "star" | "unstar" | "hook" => classified(
            DangerClass::NetworkUpload,
            format!("{name} {sub} sends data to the registry"),
        ),
        "view" | "v" | "info" | "show" | "search" | "s" | "outdated" | "audit" | "ping"
        | "whoami" | "fund" | "doctor" | "repo" | "docs" | "bugs" | "home" => classified(
            DangerClass::NetworkEgress,
            format!("{name} {sub} queries the registry"),
        ),
        "ls" | "list" | "la" | "ll" | "get" | "prefix" | "root" | "bin" | "help" | "explain"
        | "why" | "query" | "--version" => safe(format!("{name} {sub} only reads")),
        "version" if args.len() <= 1 => safe(format!("{name} version only reads")),
        "version" | "pack" => classified(
            DangerClass::LocalWrite,
            format!("{name} {sub} writes files"),
        ),
        "config" | "set" => classified(
            DangerClass::SystemWrite,
            format!("{name} {sub} changes user configuration"),
        ),
        _ if name == "npm" && !is_npm_runner(&sub) => {
            classified(DangerClass::Unknown, format!("unknown npm command {sub}"))
        }
        _ => classified(
            DangerClass::CodeExecution,
            format!("{name} {sub} runs package scripts"),
        ),
    }
}

fn is_npm_runner(sub: &str) -> bool {
    matches!(
        sub,
        "run"
            | "run-script"
            | "rum"
            | "urn"
            | "exec"
            | "x"
            | "test"
            | "t"
            | "tst"
            | "start"
            | "stop"
            | "restart"
            | "init"
            | "create"
            | "explore"
    )
}

/// Package tools whose action is a flag (`dpkg -i`, `rpm -e`, `pacman -S`).
fn package_tool_by_flag(name: &str, args: &[Word]) -> Classification {
    let first_flag = args
        .iter()
        .find(|w| w.text.starts_with('-'))
        .map(|w| w.text.as_str())
        .unwrap_or("");
    let install = classified(DangerClass::Install, format!("{name} installs packages"));
    let remove = classified(DangerClass::SystemWrite, format!("{name} removes packages"));
    let read = safe(format!("{name} only queries packages"));
    match (name, first_flag) {
        (_, "--version" | "--help" | "-h" | "-V") => read,
        ("dpkg", "-i" | "--install" | "--unpack") => install,
        (
            "dpkg",
            "-l"
            | "-L"
            | "-s"
            | "-S"
            | "-c"
            | "-I"
            | "--list"
            | "--listfiles"
            | "--status"
            | "--search"
            | "--contents"
            | "--info"
            | "--get-selections"
            | "--print-architecture",
        ) => read,
        ("dpkg", _) => remove,
        ("rpm", flag) if flag.starts_with("-q") || flag == "--query" || flag.starts_with("-V") => {
            read
        }
        ("rpm", flag) if flag.starts_with("-e") || flag == "--erase" => remove,
        ("rpm", _) => install,
        ("nix-env", flag) if flag.starts_with("-q") || flag == "--query" => read,
        ("nix-env", flag) if flag.starts_with("-e") || flag == "--uninstall" => remove,
        ("nix-env", _) => install,
        (_, flag) if flag.starts_with("-Q") || flag.starts_with("-F") => read,
        (_, flag)
            if flag.starts_with("-S")
                && flag[2..].contains(['s', 'i', 'l', 'g'])
                && !flag.contains('y') =>
        {
            read
        }
        (_, flag) if flag.starts_with("-R") || flag.starts_with("-D") => remove,
        _ => install,
    }
}

fn package_manager(name: &str, args: &[Word]) -> Classification {
    let Some(sub) = subcommand(args) else {
        return if name == "bundle" {
            classified(DangerClass::Install, "bundle installs gems")
        } else {
            safe(format!("{name} prints its help"))
        };
    };
    match sub.as_str() {
        "list" | "search" | "show" | "info" | "policy" | "madison" | "depends" | "rdepends"
        | "outdated" | "version" | "help" | "doctor" | "config" | "deps" | "leaves" | "desc"
        | "home" | "contents" | "files" | "query" | "check" | "which" | "env" | "why" | "audit"
        | "status" | "provides" | "whatprovides" | "repolist" | "licenses" => {
            safe(format!("{name} {sub} only reads"))
        }
        "remove" | "purge" | "autoremove" | "uninstall" | "rm" | "erase" | "del" | "delete"
        | "autoclean" | "clean" => classified(
            DangerClass::SystemWrite,
            format!("{name} {sub} removes packages"),
        ),
        "exec" | "run" | "run-script" | "shell" => classified(
            DangerClass::CodeExecution,
            format!("{name} {sub} runs code"),
        ),
        "publish" | "push" => classified(
            DangerClass::NetworkUpload,
            format!("{name} {sub} uploads a package"),
        ),
        _ => classified(
            DangerClass::Install,
            format!("{name} {sub} installs or updates software"),
        ),
    }
}
