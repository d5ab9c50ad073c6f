//! A nesting cap for HTML before it is converted: elements deeper than [`MAX_DEPTH`] lose
//! their tags (their text stays, in the element at the cap), so a page of thousands of
//! nested elements cannot exhaust the converter's stack or its time. A light scan of tags,
//! not a parser: comments, doctypes, quoted attribute values and the text of `script`,
//! `style` and similar elements are passed over, and elements that never hold content
//! (`br`, `img`, …) or close themselves do not count.

use std::borrow::Cow;

/// The deepest element kept as an element.
pub const MAX_DEPTH: usize = 256;

/// Elements without content.
const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr", "keygen",
];

/// Elements whose content is text up to their end tag.
const RAW_TEXT: &[&str] = &[
    "script",
    "style",
    "textarea",
    "title",
    "xmp",
    "iframe",
    "noembed",
    "noframes",
    "plaintext",
];

/// One piece of the page.
enum Piece {
    /// Text, or markup passed over as it is (a comment, a doctype).
    Other,
    /// A start tag that opens an element (its name, lower case).
    Open(String),
    /// An end tag (its name, lower case).
    Close(String),
}

/// Elements an end tag of another name does not reach past (the HTML parser ignores
/// `</span>` when a `div` is open inside the `span`).
const SPECIAL: &[&str] = &[
    "address",
    "applet",
    "area",
    "article",
    "aside",
    "blockquote",
    "body",
    "button",
    "caption",
    "center",
    "dd",
    "details",
    "dir",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hgroup",
    "html",
    "li",
    "main",
    "marquee",
    "menu",
    "nav",
    "object",
    "ol",
    "p",
    "pre",
    "section",
    "select",
    "summary",
    "table",
    "tbody",
    "td",
    "template",
    "tfoot",
    "th",
    "thead",
    "tr",
    "ul",
];

/// Elements no end tag reaches past.
const SCOPE: &[&str] = &[
    "applet", "caption", "html", "table", "td", "th", "marquee", "object", "template",
];

/// Start tags that close an open `p` first.
const CLOSES_P: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "center",
    "details",
    "dir",
    "div",
    "dl",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hgroup",
    "hr",
    "main",
    "menu",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "summary",
    "table",
    "ul",
];

/// How far up the open elements an end tag is looked for; an end tag whose element is
/// further up counts as closing nothing (the depth is overestimated, never under).
const SEARCH_LIMIT: usize = 512;

/// The open elements, as the HTML parser would roughly hold them: end tags close what the
/// parser's rules let them close, and the common implied end tags (`p`, `li`, `dd`, `dt`,
/// `option`, table rows and cells) are applied. Where it differs from the parser it counts
/// deeper, so nothing deeper than the cap reaches the converter.
#[derive(Default)]
struct OpenElements {
    names: Vec<String>,
}

impl OpenElements {
    fn depth(&self) -> usize {
        self.names.len()
    }

    /// Applies a start tag; returns the depth of the element it opens.
    fn open(&mut self, name: &str) -> usize {
        let implied: &[&str] = match name {
            "li" => &["li"],
            "dd" | "dt" => &["dd", "dt"],
            "option" => &["option"],
            "tr" => &["tr", "td", "th"],
            "td" | "th" => &["td", "th"],
            _ => &[],
        };
        if !implied.is_empty() {
            self.close_implied(implied);
        }
        if CLOSES_P.contains(&name) {
            self.close_implied(&["p"]);
        }
        self.names.push(name.to_string());
        self.names.len()
    }

    /// Closes the nearest open element named in `names`, if no special element is above it.
    fn close_implied(&mut self, names: &[&str]) {
        for (i, open) in self.names.iter().rev().take(SEARCH_LIMIT).enumerate() {
            if names.contains(&open.as_str()) {
                let keep = self.names.len() - i - 1;
                self.names.truncate(keep);
                return;
            }
            if SPECIAL.contains(&open.as_str()) && !matches!(open.as_str(), "p" | "div") {
                return;
            }
        }
    }

    /// Applies an end tag; returns how many elements it closes (0: the parser ignores it).
    fn close(&mut self, name: &str) -> usize {
        let special = SPECIAL.contains(&name);
        for (i, open) in self.names.iter().rev().take(SEARCH_LIMIT).enumerate() {
            if open == name {
                self.names.truncate(self.names.len() - i - 1);
                return i + 1;
            }
            let open = open.as_str();
            if SCOPE.contains(&open) || (!special && SPECIAL.contains(&open)) {
                return 0;
            }
        }
        0
    }
}

/// `html` with every element beyond [`MAX_DEPTH`] unwrapped; borrowed when none is.
pub fn flatten_deep(html: &str) -> Cow<'_, str> {
    flatten_beyond(html, MAX_DEPTH)
}

fn flatten_beyond(html: &str, max: usize) -> Cow<'_, str> {
    let mut open = OpenElements::default();
    let mut deepest = 0usize;
    scan(html, |piece, _| match piece {
        Piece::Open(name) => deepest = deepest.max(open.open(&name)),
        Piece::Close(name) => {
            open.close(&name);
        }
        Piece::Other => {}
    });
    if deepest <= max {
        return Cow::Borrowed(html);
    }
    let mut out = String::with_capacity(html.len());
    let mut open = OpenElements::default();
    scan(html, |piece, text| {
        let kept = match piece {
            Piece::Other => true,
            Piece::Open(name) => open.open(&name) <= max,
            Piece::Close(name) => {
                let before = open.depth();
                let closed = open.close(&name);
                before - closed.max(1) < max
            }
        };
        if kept {
            out.push_str(text);
        }
    });
    Cow::Owned(out)
}

/// Caps the parsed tree at `max` levels: the children of an element at that depth are
/// replaced by its descendants' leaves (text, comments, empty elements), in document order.
/// The converter recurses once per level; this bounds it whatever the parser built from
/// markup the scan above misjudged. Iterative: a tree of any depth is safe to cap.
pub fn cap_tree(root: &std::rc::Rc<htmd::Node>, max: usize) {
    let mut pending = vec![(root.clone(), 0usize)];
    while let Some((node, depth)) = pending.pop() {
        if depth < max {
            let children = node.children.borrow();
            pending.extend(children.iter().map(|child| (child.clone(), depth + 1)));
            continue;
        }
        let leaves = leaves_of(&node);
        for leaf in &leaves {
            leaf.parent.set(Some(std::rc::Rc::downgrade(&node)));
        }
        *node.children.borrow_mut() = leaves;
    }
}

/// The leaves below `node`, in document order.
fn leaves_of(node: &std::rc::Rc<htmd::Node>) -> Vec<std::rc::Rc<htmd::Node>> {
    let mut leaves = Vec::new();
    let mut pending: Vec<std::rc::Rc<htmd::Node>> =
        node.children.borrow().iter().rev().cloned().collect();
    while let Some(next) = pending.pop() {
        let children = next.children.borrow();
        if children.is_empty() {
            leaves.push(next.clone());
        } else {
            pending.extend(children.iter().rev().cloned());
        }
    }
    leaves
}

/// Calls `each` with every piece of `html` and its text, in order; the texts put together
/// are `html`.
fn scan(html: &str, mut each: impl FnMut(Piece, &str)) {
    let bytes = html.as_bytes();
    let mut at = 0;
    let mut text_from = 0;
    while let Some(offset) = memchr(b'<', &bytes[at..]) {
        let start = at + offset;
        let Some((piece, end, raw)) = markup_at(html, start) else {
            at = start + 1;
            continue;
        };
        if text_from < start {
            each(Piece::Other, &html[text_from..start]);
        }
        each(piece, &html[start..end]);
        at = end;
        text_from = end;
        if let Some(name) = raw {
            // The element's text runs to its end tag, whatever it holds.
            let close = find_ascii_ci(&bytes[at..], format!("</{name}").as_bytes())
                .map_or(bytes.len(), |i| at + i);
            if text_from < close {
                each(Piece::Other, &html[text_from..close]);
            }
            at = close;
            text_from = close;
        }
    }
    if text_from < html.len() {
        each(Piece::Other, &html[text_from..]);
    }
}

/// The markup starting at `start` (a `<`): its kind, where it ends, and for a raw-text
/// element's start tag its name. `None` when the `<` is text.
fn markup_at(html: &str, start: usize) -> Option<(Piece, usize, Option<&'static str>)> {
    let bytes = html.as_bytes();
    let rest = &bytes[start + 1..];
    if rest.starts_with(b"!--") {
        let end = find(rest, b"-->").map_or(bytes.len(), |i| start + 1 + i + 3);
        return Some((Piece::Other, end, None));
    }
    let (closing, name_from) = match rest.first()? {
        b'/' => (true, start + 2),
        b'!' | b'?' => return Some((Piece::Other, tag_end(bytes, start + 1), None)),
        c if c.is_ascii_alphabetic() => (false, start + 1),
        _ => return None,
    };
    let name_len = bytes[name_from..]
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'-')
        .count();
    if name_len == 0 {
        return None;
    }
    let name = html[name_from..name_from + name_len].to_ascii_lowercase();
    let end = tag_end(bytes, name_from + name_len);
    if closing {
        return Some((Piece::Close(name), end, None));
    }
    let self_closing = end >= 2 && bytes[end - 2] == b'/';
    if self_closing || VOID.contains(&name.as_str()) {
        return Some((Piece::Other, end, None));
    }
    let raw = RAW_TEXT.iter().find(|r| **r == name).copied();
    Some((Piece::Open(name), end, raw))
}

/// Just past the `>` that ends a tag begun before `from` (quoted values passed over).
fn tag_end(bytes: &[u8], from: usize) -> usize {
    let mut quote = None;
    for (i, &c) in bytes.iter().enumerate().skip(from) {
        match (quote, c) {
            (None, b'"' | b'\'') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, b'>') => return i + 1,
            _ => {}
        }
    }
    bytes.len()
}

fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|c| *c == needle)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn find_ascii_ci(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_within_the_cap_is_left_as_it_is() {
        let html = r#"<div class="a>b"><p>x < y</p><br><img src=x /><!-- <div> --><script>if (a<b) {}</script></div>"#;
        assert!(matches!(flatten_beyond(html, 2), Cow::Borrowed(_)));
    }

    #[test]
    fn elements_beyond_the_cap_lose_their_tags_and_keep_their_text() {
        let html = "<div><div><div><b>deep</b> text</div></div></div><p>after</p>";
        assert_eq!(
            flatten_beyond(html, 2),
            "<div><div>deep text</div></div><p>after</p>"
        );
    }

    /// `<span><div></span>`: the parser ignores the `</span>` (a `div` is open inside it), so
    /// the elements nest; the scan counts them so too.
    #[test]
    fn end_tags_the_parser_ignores_do_not_lower_the_depth() {
        let html = "<span><div></span>".repeat(10);
        let flat = flatten_beyond(&html, 4);
        assert_eq!(
            flat.matches("<div>").count() + flat.matches("<span>").count(),
            4
        );
    }

    /// Unclosed `li` and `p` are closed by the next one, as the parser does: a long list
    /// written without end tags keeps its items.
    #[test]
    fn implied_end_tags_close_list_items_and_paragraphs() {
        let html = format!(
            "<ul>{}</ul>{}",
            "<li>item".repeat(1000),
            "<p>para".repeat(1000)
        );
        assert!(matches!(flatten_beyond(&html, 4), Cow::Borrowed(_)));
    }

    /// Whatever the scan misjudges, the parsed tree is capped too.
    #[test]
    fn the_parsed_tree_is_capped_and_keeps_its_text_in_order() {
        let html = format!("{}a<b>b</b>c{}", "<div>".repeat(600), "</div>".repeat(600));
        let tree = htmd::HtmlToMarkdown::new()
            .html_to_tree(&html)
            .expect("parsed");
        cap_tree(&tree, 10);
        let mut deepest = 0;
        let mut pending = vec![(tree.clone(), 0)];
        while let Some((node, depth)) = pending.pop() {
            deepest = deepest.max(depth);
            pending.extend(
                node.children
                    .borrow()
                    .iter()
                    .map(|c| (c.clone(), depth + 1)),
            );
        }
        assert!(deepest <= 11, "{deepest}");
        let markdown = htmd::HtmlToMarkdown::new().tree_to_markdown(&tree);
        assert_eq!(markdown.trim(), "abc");
    }

    #[test]
    fn fifty_thousand_nested_elements_become_a_page_at_the_cap() {
        let depth = 50_000;
        let html = format!("{}deep{}", "<div>".repeat(depth), "</div>".repeat(depth));
        let flat = flatten_deep(&html);
        assert_eq!(flat.matches("<div>").count(), MAX_DEPTH);
        assert_eq!(flat.matches("</div>").count(), MAX_DEPTH);
        assert!(flat.contains("deep"));
    }
}
