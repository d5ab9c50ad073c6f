//! Final answers rendered as Markdown on a terminal: `pulldown-cmark` parses, this small
//! renderer lays the events out with ANSI styles — bold, italics, struck text, headings,
//! lists (nested, numbered, tasks), quotes, code set off, aligned tables, links with their
//! address — wrapped to the terminal's width with the container's indent kept. The model's
//! text never reaches the terminal as control characters: they are dropped.

use pulldown_cmark::{Alignment, CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use unicode_width::UnicodeWidthStr;

use crate::text::visible;

/// How the rendering looks.
#[derive(Debug, Clone, Copy)]
pub struct Look {
    /// Columns available (the terminal's width).
    pub width: usize,
    /// ANSI styles (off only in layout tests).
    pub color: bool,
    /// Box-drawing characters and bullets; ASCII otherwise.
    pub unicode: bool,
}

/// Renders `markdown` for a terminal; the result ends with a newline.
pub fn render(markdown: &str, look: Look) -> String {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut r = Renderer::new(look);
    for event in Parser::new_ext(markdown, options) {
        r.event(event);
    }
    r.finish()
}

/// Text styles, combined as SGR parameters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Style {
    bold: bool,
    italic: bool,
    underline: bool,
    strike: bool,
    dim: bool,
    code: bool,
    link: bool,
}

impl Style {
    fn sgr(self) -> String {
        let flags = [
            (self.bold, "1"),
            (self.dim, "2"),
            (self.italic, "3"),
            (self.underline || self.link, "4"),
            (self.strike, "9"),
            (self.code, "36"),
            (self.link && !self.code, "34"),
        ];
        let codes: Vec<&str> = flags
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, c)| *c)
            .collect();
        codes.join(";")
    }
}

/// One run of text in one style.
#[derive(Debug, Clone)]
struct Piece {
    text: String,
    style: Style,
}

/// Inline content of a paragraph, heading, item or cell, before it is wrapped.
#[derive(Debug, Default, Clone)]
struct Inline {
    pieces: Vec<Piece>,
}

impl Inline {
    fn push(&mut self, text: &str, style: Style) {
        // The model's control characters are shown, never sent (the styling is ours).
        let text = visible(text, true).into_owned();
        if text.is_empty() {
            return;
        }
        match self.pieces.last_mut() {
            Some(last) if last.style == style => last.text.push_str(&text),
            _ => self.pieces.push(Piece { text, style }),
        }
    }

    fn is_empty(&self) -> bool {
        self.pieces.iter().all(|p| p.text.trim().is_empty())
    }
}

/// A container the lines of its blocks are indented under.
#[derive(Debug)]
struct Indent {
    /// The first line's prefix (a list marker), used once.
    first: String,
    /// Every later line's prefix.
    rest: String,
    used: bool,
}

#[derive(Debug)]
struct ListState {
    next: Option<u64>,
}

#[derive(Debug, Default)]
struct Table {
    align: Vec<Alignment>,
    head: Vec<Inline>,
    rows: Vec<Vec<Inline>>,
    in_head: bool,
}

struct Renderer {
    look: Look,
    out: Vec<String>,
    indents: Vec<Indent>,
    lists: Vec<ListState>,
    inline: Inline,
    styles: Vec<Style>,
    links: Vec<String>,
    code: Option<(String, String)>,
    table: Option<Table>,
    /// A blank line goes before the next block (not at the start, not in a tight list).
    pending_gap: bool,
}

impl Renderer {
    fn new(look: Look) -> Self {
        Renderer {
            look,
            out: Vec::new(),
            indents: Vec::new(),
            lists: Vec::new(),
            inline: Inline::default(),
            styles: vec![Style::default()],
            links: Vec::new(),
            code: None,
            table: None,
            pending_gap: false,
        }
    }

    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn with_style(&mut self, change: impl Fn(&mut Style)) {
        let mut s = self.style();
        change(&mut s);
        self.styles.push(s);
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => match &mut self.code {
                Some((_, body)) => body.push_str(&t),
                None => {
                    let s = self.style();
                    self.inline.push(&t, s);
                }
            },
            Event::Code(t) => {
                let mut s = self.style();
                s.code = true;
                self.inline.push(&t, s);
            }
            Event::Html(t) | Event::InlineHtml(t) => {
                // Shown as the text it is; a terminal runs no HTML.
                let s = self.style();
                self.inline.push(&t, s);
            }
            Event::InlineMath(t) | Event::DisplayMath(t) => {
                let s = self.style();
                self.inline.push(&t, s);
            }
            Event::FootnoteReference(t) => {
                let s = self.style();
                self.inline.push(&format!("[^{t}]"), s);
            }
            Event::SoftBreak => {
                let s = self.style();
                self.inline.push(" ", s);
            }
            Event::HardBreak => {
                let s = self.style();
                self.inline.push("\n", s);
            }
            Event::Rule => {
                self.begin_block();
                let rule = if self.look.unicode { "─" } else { "-" };
                let width = self
                    .look
                    .width
                    .saturating_sub(self.prefix_width())
                    .clamp(3, 40);
                let line = self.paint(&rule.repeat(width), dim());
                self.emit_line(&line);
                self.pending_gap = true;
            }
            Event::TaskListMarker(done) => {
                let mark = match (done, self.look.unicode) {
                    (true, true) => "☑ ",
                    (false, true) => "☐ ",
                    (true, false) => "[x] ",
                    (false, false) => "[ ] ",
                };
                let s = self.style();
                self.inline.push(mark, s);
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.begin_block(),
            Tag::Heading { level, .. } => {
                self.begin_block();
                self.with_style(|s| {
                    s.bold = true;
                    s.underline = level == HeadingLevel::H1;
                });
            }
            Tag::BlockQuote(_) => {
                self.flush_inline();
                self.begin_block();
                let bar = if self.look.unicode { "│ " } else { "| " };
                let bar = self.paint(bar, dim());
                self.indents.push(Indent {
                    first: bar.clone(),
                    rest: bar,
                    used: false,
                });
                self.pending_gap = false;
            }
            Tag::CodeBlock(kind) => {
                self.flush_inline();
                self.begin_block();
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split_whitespace().next().unwrap_or("").to_string()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::HtmlBlock => self.begin_block(),
            Tag::List(first) => {
                self.flush_inline();
                if self.lists.is_empty() {
                    self.begin_block();
                }
                self.lists.push(ListState { next: first });
            }
            Tag::Item => {
                self.flush_inline();
                let marker = match self.lists.last_mut() {
                    Some(ListState { next: Some(n) }) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ if self.look.unicode => "• ".to_string(),
                    _ => "- ".to_string(),
                };
                let rest = " ".repeat(marker.width());
                self.indents.push(Indent {
                    first: marker,
                    rest,
                    used: false,
                });
                self.pending_gap = false;
            }
            Tag::Table(align) => {
                self.flush_inline();
                self.begin_block();
                self.table = Some(Table {
                    align,
                    ..Table::default()
                });
            }
            Tag::TableHead => {
                if let Some(t) = &mut self.table {
                    t.in_head = true;
                }
            }
            Tag::TableRow => {
                if let Some(t) = &mut self.table {
                    t.rows.push(Vec::new());
                }
            }
            Tag::TableCell => self.inline = Inline::default(),
            Tag::Emphasis => self.with_style(|s| s.italic = true),
            Tag::Strong => self.with_style(|s| s.bold = true),
            Tag::Strikethrough => self.with_style(|s| s.strike = true),
            Tag::Superscript | Tag::Subscript => self.with_style(|_| {}),
            Tag::Link { dest_url, .. } => {
                self.links.push(dest_url.to_string());
                self.with_style(|s| s.link = true);
            }
            Tag::Image { dest_url, .. } => {
                self.links.push(dest_url.to_string());
                let s = dim_of(self.style());
                self.inline.push("[image: ", s);
                self.styles.push(s);
            }
            Tag::FootnoteDefinition(name) => {
                self.begin_block();
                let s = self.style();
                self.inline.push(&format!("[^{name}]: "), s);
            }
            Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::MetadataBlock(_) => self.begin_block(),
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::HtmlBlock | TagEnd::FootnoteDefinition => {
                self.flush_inline();
                self.pending_gap = true;
            }
            TagEnd::Heading(_) => {
                self.flush_inline();
                self.styles.pop();
                self.pending_gap = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush_inline();
                self.indents.pop();
                self.pending_gap = true;
            }
            TagEnd::CodeBlock => self.end_code(),
            TagEnd::List(_) => {
                self.flush_inline();
                self.lists.pop();
                self.pending_gap = self.lists.is_empty();
            }
            TagEnd::Item => {
                self.flush_inline();
                self.indents.pop();
                self.pending_gap = false;
            }
            TagEnd::Table => self.end_table(),
            TagEnd::TableHead => {
                if let Some(t) = &mut self.table {
                    t.in_head = false;
                }
            }
            TagEnd::TableRow => {}
            TagEnd::TableCell => {
                let cell = std::mem::take(&mut self.inline);
                if let Some(t) = &mut self.table {
                    if t.in_head {
                        t.head.push(cell);
                    } else if let Some(row) = t.rows.last_mut() {
                        row.push(cell);
                    }
                }
            }
            TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Superscript
            | TagEnd::Subscript => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                let url = self.links.pop().unwrap_or_default();
                let shown: String = self
                    .inline
                    .pieces
                    .last()
                    .map(|p| p.text.clone())
                    .unwrap_or_default();
                let bare = url.strip_prefix("mailto:").unwrap_or(&url);
                if !url.is_empty() && !shown.ends_with(bare) {
                    let s = dim_of(self.style());
                    self.inline.push(&format!(" ({url})"), s);
                }
            }
            TagEnd::Image => {
                self.styles.pop();
                let url = self.links.pop().unwrap_or_default();
                let s = dim_of(self.style());
                self.inline.push(&format!("] ({url})"), s);
            }
            TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition
            | TagEnd::MetadataBlock(_) => {
                self.flush_inline();
                self.pending_gap = true;
            }
        }
    }

    /// A blank line before a block that follows another one.
    fn begin_block(&mut self) {
        if self.pending_gap && !self.out.is_empty() {
            let prefix = self.prefix_rest();
            self.out.push(prefix.trim_end().to_string());
        }
        self.pending_gap = false;
    }

    fn paint(&self, text: &str, style: Style) -> String {
        let sgr = style.sgr();
        if !self.look.color || sgr.is_empty() || text.is_empty() {
            return text.to_string();
        }
        format!("\x1b[{sgr}m{text}\x1b[0m")
    }

    fn prefix_width(&self) -> usize {
        self.indents.iter().map(|i| visible_width(&i.rest)).sum()
    }

    fn prefix_rest(&self) -> String {
        self.indents.iter().map(|i| i.rest.as_str()).collect()
    }

    /// The prefix of the next line: an unused list marker once, then its indent.
    fn take_prefix(&mut self) -> String {
        let mut prefix = String::new();
        for indent in &mut self.indents {
            prefix.push_str(if indent.used {
                &indent.rest
            } else {
                &indent.first
            });
            indent.used = true;
        }
        prefix
    }

    fn emit_line(&mut self, line: &str) {
        let prefix = self.take_prefix();
        self.out
            .push(format!("{prefix}{line}").trim_end().to_string());
    }

    /// Wraps the inline content gathered so far to the width left after the indent.
    fn flush_inline(&mut self) {
        let inline = std::mem::take(&mut self.inline);
        if inline.is_empty() {
            return;
        }
        let room = self.look.width.saturating_sub(self.prefix_width()).max(20);
        for line in wrap(&inline, room) {
            let painted: String = line.iter().map(|p| self.paint(&p.text, p.style)).collect();
            self.emit_line(&painted);
        }
    }

    fn end_code(&mut self) {
        let Some((lang, body)) = self.code.take() else {
            return;
        };
        let (top, side, bottom) = if self.look.unicode {
            ("╭─", "│ ", "╰─")
        } else {
            ("+-", "| ", "+-")
        };
        let label = if lang.is_empty() {
            top.to_string()
        } else {
            format!("{top} {}", visible(&lang, false))
        };
        let label = self.paint(&label, dim());
        self.emit_line(&label);
        let code_style = Style {
            code: true,
            ..Style::default()
        };
        for line in body.trim_end_matches('\n').split('\n') {
            let text = visible(&line.replace('\t', "    "), false).into_owned();
            let side = self.paint(side, dim());
            let text = self.paint(&text, code_style);
            self.emit_line(&format!("{side}{text}"));
        }
        let bottom = self.paint(bottom, dim());
        self.emit_line(&bottom);
        self.pending_gap = true;
    }

    fn end_table(&mut self) {
        let Some(table) = self.table.take() else {
            return;
        };
        let columns = table
            .rows
            .iter()
            .map(Vec::len)
            .chain([table.head.len()])
            .max()
            .unwrap_or(0);
        let mut widths = vec![0usize; columns];
        for row in table.rows.iter().chain([&table.head]) {
            for (i, cell) in row.iter().enumerate() {
                widths[i] = widths[i].max(flat(cell).width());
            }
        }
        let sep = if self.look.unicode { " │ " } else { " | " };
        let total: usize = widths.iter().sum::<usize>() + sep.width() * columns.saturating_sub(1);
        if total > self.look.width.saturating_sub(self.prefix_width()) {
            self.table_as_records(&table);
        } else {
            self.table_aligned(&table, &widths, sep);
        }
        self.pending_gap = true;
    }

    fn table_aligned(&mut self, table: &Table, widths: &[usize], sep: &str) {
        let sep_painted = self.paint(sep, dim());
        let mut head = table.head.clone();
        for cell in &mut head {
            for p in &mut cell.pieces {
                p.style.bold = true;
            }
        }
        let row_line = |r: &Renderer, row: &[Inline]| -> String {
            let cells: Vec<String> = (0..widths.len())
                .map(|i| {
                    let cell = row.get(i).cloned().unwrap_or_default();
                    let text: String = single_line(&cell)
                        .iter()
                        .map(|p| r.paint(&p.text, p.style))
                        .collect();
                    let gap = widths[i].saturating_sub(flat(&cell).width());
                    match table.align.get(i).copied().unwrap_or(Alignment::None) {
                        Alignment::Right => format!("{}{text}", " ".repeat(gap)),
                        Alignment::Center => {
                            format!("{}{text}{}", " ".repeat(gap / 2), " ".repeat(gap - gap / 2))
                        }
                        _ => format!("{text}{}", " ".repeat(gap)),
                    }
                })
                .collect();
            cells.join(&sep_painted)
        };
        let line = row_line(self, &head);
        self.emit_line(&line);
        let (dash, cross) = if self.look.unicode {
            ("─", "─┼─")
        } else {
            ("-", "-+-")
        };
        let rule: Vec<String> = widths.iter().map(|w| dash.repeat(*w)).collect();
        let rule = self.paint(&rule.join(cross), dim());
        self.emit_line(&rule);
        for row in &table.rows {
            let line = row_line(self, row);
            self.emit_line(&line);
        }
    }

    /// A table too wide for the terminal: each row as `header: value` lines, nothing cut.
    fn table_as_records(&mut self, table: &Table) {
        for (n, row) in table.rows.iter().enumerate() {
            if n > 0 {
                let prefix = self.prefix_rest();
                self.out.push(prefix.trim_end().to_string());
            }
            for (i, cell) in row.iter().enumerate() {
                let mut line = Inline::default();
                let name = table.head.get(i).map(flat).unwrap_or_default();
                line.push(
                    &format!("{name}: "),
                    Style {
                        bold: true,
                        ..Style::default()
                    },
                );
                line.pieces.extend(cell.pieces.iter().cloned());
                self.inline = line;
                self.flush_inline();
            }
        }
    }

    fn finish(mut self) -> String {
        self.flush_inline();
        if self.code.is_some() {
            self.end_code();
        }
        if self.table.is_some() {
            self.end_table();
        }
        let mut text = self.out.join("\n");
        text.push('\n');
        text
    }
}

fn dim() -> Style {
    Style {
        dim: true,
        ..Style::default()
    }
}

fn dim_of(mut s: Style) -> Style {
    s.dim = true;
    s.link = false;
    s
}

/// The text of an inline run without its styles.
fn flat(inline: &Inline) -> String {
    single_line(inline)
        .iter()
        .map(|p| p.text.as_str())
        .collect()
}

/// An inline run on one line (a table cell): line breaks become spaces.
fn single_line(inline: &Inline) -> Vec<Piece> {
    inline
        .pieces
        .iter()
        .map(|p| Piece {
            text: p.text.replace('\n', " "),
            style: p.style,
        })
        .collect()
}

/// The width of a text that may hold SGR sequences.
fn visible_width(text: &str) -> usize {
    let mut width = 0;
    let mut rest = text;
    while let Some(at) = rest.find('\x1b') {
        width += rest[..at].width();
        rest = &rest[at..];
        rest = rest.find('m').map_or("", |end| &rest[end + 1..]);
    }
    width + rest.width()
}

/// Greedy word wrap of styled pieces to `room` columns; hard breaks (`\n`) end a line. A word
/// longer than the room gets a line of its own (the terminal folds it).
fn wrap(inline: &Inline, room: usize) -> Vec<Vec<Piece>> {
    let mut lines: Vec<Vec<Piece>> = vec![Vec::new()];
    let mut width = 0usize;
    let mut pending_space: Option<Style> = None;
    for piece in &inline.pieces {
        for (i, segment) in piece.text.split('\n').enumerate() {
            if i > 0 {
                lines.push(Vec::new());
                width = 0;
                pending_space = None;
            }
            for (j, word) in segment.split(' ').enumerate() {
                if j > 0 {
                    pending_space = Some(piece.style);
                }
                if word.is_empty() {
                    continue;
                }
                let w = word.width();
                let space = usize::from(pending_space.is_some() && width > 0);
                if width > 0 && width + space + w > room {
                    lines.push(Vec::new());
                    width = 0;
                } else if let (Some(style), 1) = (pending_space, space) {
                    push_piece(lines.last_mut(), " ", style);
                    width += 1;
                }
                pending_space = None;
                push_piece(lines.last_mut(), word, piece.style);
                width += w;
            }
        }
    }
    while lines.last().is_some_and(Vec::is_empty) && lines.len() > 1 {
        lines.pop();
    }
    lines
}

fn push_piece(line: Option<&mut Vec<Piece>>, text: &str, style: Style) {
    let Some(line) = line else { return };
    match line.last_mut() {
        Some(last) if last.style == style => last.text.push_str(text),
        _ => line.push(Piece {
            text: text.to_string(),
            style,
        }),
    }
}

#[cfg(test)]
mod tests;
