//! `odek completions <shell>` and `odek man`: shell completion scripts (clap_complete) and
//! the manual page (clap_mangen), both generated from the same clap definitions as `--help`.

use clap::{Args, ValueEnum};

use super::exit::Exit;

/// Shells `odek completions` writes scripts for.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum CompletionShell {
    /// Bash (bash-completion)
    Bash,
    /// Zsh
    Zsh,
    /// Fish
    Fish,
    /// PowerShell
    Powershell,
}

/// Arguments of `odek completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to write the completion script for
    #[arg(value_enum)]
    shell: CompletionShell,
}

/// Writes the completion script of `cmd` (odek's whole command line) for `args.shell` to
/// stdout.
pub fn completions(args: CompletionsArgs, mut cmd: clap::Command) -> crate::error::Fallible<Exit> {
    use clap_complete::Shell;
    let shell = match args.shell {
        CompletionShell::Bash => Shell::Bash,
        CompletionShell::Zsh => Shell::Zsh,
        CompletionShell::Fish => Shell::Fish,
        CompletionShell::Powershell => Shell::PowerShell,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "odek", &mut script);
    print_bytes(&script)
}

/// Arguments of `odek man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write odek.1 and one page per command (odek-run.1, …) into DIR instead of printing
    /// odek.1
    #[arg(long, value_name = "DIR")]
    dir: Option<std::path::PathBuf>,
}

/// Writes the manual page of `cmd` (roff, section 1) to stdout, or every page into `--dir`.
pub fn man(args: ManArgs, cmd: clap::Command) -> crate::error::Fallible<Exit> {
    use crate::error::Context;
    if let Some(dir) = args.dir {
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        clap_mangen::generate_to(cmd, &dir)
            .with_context(|| format!("cannot write the pages into {}", dir.display()))?;
        return Ok(Exit::Success);
    }
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut page)?;
    print_bytes(&page)
}

/// Writes to stdout; a closed pipe (`odek man | head`) is not an error.
fn print_bytes(bytes: &[u8]) -> crate::error::Fallible<Exit> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => Ok(Exit::Success),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(Exit::Success),
        Err(e) => Err(e.into()),
    }
}
