//! ANSI styling that respects `--no-color`, `NO_COLOR` and non-terminal output.

/// Colours on or off.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    enabled: bool,
}

impl Style {
    /// Styling for a stream: on only when it is a terminal and colour is allowed.
    pub fn new(enabled: bool) -> Self {
        Style { enabled }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.enabled {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    /// Faint text (narration, metadata).
    pub fn dim(&self, text: &str) -> String {
        self.paint("2", text)
    }

    /// Success.
    pub fn green(&self, text: &str) -> String {
        self.paint("32", text)
    }

    /// Failure.
    pub fn red(&self, text: &str) -> String {
        self.paint("31", text)
    }

    /// Warnings.
    pub fn yellow(&self, text: &str) -> String {
        self.paint("33", text)
    }

    /// Emphasis.
    pub fn bold(&self, text: &str) -> String {
        self.paint("1", text)
    }

    /// Tool names.
    pub fn cyan(&self, text: &str) -> String {
        self.paint("36", text)
    }
}
