//! What the shell lexer ([`super::lexer`]) yields: words after quote removal, redirections,
//! simple commands, and everything found in one piece of shell text.

/// One shell word after quote removal.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Word {
    /// The value. Expansions are kept verbatim (`$HOME`, `${X}`, `$((1+2))`), and so are
    /// command substitutions, in their `$(…)` form (a backtick one too), so analysing the
    /// word again (in `sh -c "…"`) sees the substitution again.
    pub text: String,
    /// Contains a parameter expansion or a substitution: the real value is only known when
    /// the command runs.
    pub dynamic: bool,
    /// Contains a command substitution (`$(…)`, backticks): part of its value is another
    /// command's output.
    pub substitution: bool,
    /// Contains an unquoted `*`, `?` or `[`.
    pub glob: bool,
    /// Any part of it was quoted or escaped.
    pub quoted: bool,
    /// The path a process substitution (`<(…)`) becomes, not a word the command wrote.
    pub process_substitution: bool,
    /// Begins with an unquoted tilde-prefix (`~`, `~/…`, `~user`) that the shell expands to
    /// a home directory; the text keeps the `~`.
    pub tilde: bool,
    /// Contains an unquoted `{` and `,` (a brace expansion candidate; set by the lexer, read
    /// by [`super::braces`]).
    pub(super) brace: bool,
    /// Byte ranges of `text` that came from quotes or escapes: braces and commas there are
    /// not brace-expansion syntax (`"{,}"{a,b}` is `{,}a {,}b`).
    pub(super) inert: Vec<(usize, usize)>,
}

impl Word {
    /// A plain word, as a classifier-made argument.
    pub fn literal(text: &str) -> Self {
        Self {
            text: text.to_string(),
            ..Self::default()
        }
    }

    /// A word whose value is only known at run time.
    pub fn dynamic(text: &str) -> Self {
        Self {
            text: text.to_string(),
            dynamic: true,
            ..Self::default()
        }
    }

    /// The same kind of word (dynamic, quoted, glob) with another text.
    pub fn with_text(&self, text: &str) -> Self {
        Self {
            text: text.to_string(),
            ..self.clone()
        }
    }

    /// The word with `marker` replaced by the dynamic `replacement` (`{}` in `find -exec`,
    /// `xargs -I`); the word itself when it holds no marker.
    pub fn with_marker(&self, marker: &str, replacement: &str) -> Self {
        if marker.is_empty() || !self.text.contains(marker) {
            return self.clone();
        }
        let mut substituted = self.with_text(&self.text.replace(marker, replacement));
        substituted.dynamic = true;
        substituted
    }
}

/// What a redirection does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RedirectKind {
    /// `>`, `>>`, `>|`, `&>`, `&>>`, `<>`, `>&file`: opens the target for writing.
    Write,
    /// `<`: opens the target for reading.
    Read,
    /// `2>&1`, `<&3`, `>&-`: duplicates or closes a descriptor.
    Duplicate,
    /// `<<`, `<<-`: a here-document (the body is in [`SimpleCommand::stdin_text`]).
    HereDocument,
    /// `<<<`: a here-string.
    HereString,
}

/// One redirection and its target word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Redirect {
    pub kind: RedirectKind,
    pub target: Word,
}

/// One simple command: words, redirections, and how it is connected to its neighbours.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct SimpleCommand {
    pub words: Vec<Word>,
    pub redirects: Vec<Redirect>,
    /// The text fed on standard input by a here-document or here-string.
    pub stdin_text: Option<String>,
    /// Standard input comes from the previous command through a pipe.
    pub piped_from_previous: bool,
}

/// Everything found in one piece of shell text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Parsed {
    pub commands: Vec<SimpleCommand>,
    /// Bodies of command and process substitutions: shell text that runs too.
    pub substitutions: Vec<String>,
    /// Text that is expanded but not run (parameter-expansion bodies, arithmetic, unquoted
    /// here-document bodies, array literals): it may still contain substitutions.
    pub expansions: Vec<String>,
    /// Names of the functions the text defines.
    pub functions: Vec<String>,
    /// A quote, `$'…'`, substitution or expansion was still open at the end: bash refuses
    /// such text, and what was read of it is not what would run.
    pub incomplete: bool,
}
