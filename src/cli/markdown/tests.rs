use super::*;

fn plain(md: &str, width: usize) -> String {
    render(
        md,
        Look {
            width,
            color: false,
            unicode: true,
        },
    )
}

fn styled(md: &str) -> String {
    render(
        md,
        Look {
            width: 80,
            color: true,
            unicode: true,
        },
    )
}

#[test]
fn emphasis_and_code_become_styles_and_lose_their_marks() {
    let out = styled("Some **bold**, *italic*, ~~gone~~ and `code`.");
    assert_eq!(
        out,
        "Some \x1b[1mbold\x1b[0m, \x1b[3mitalic\x1b[0m, \x1b[9mgone\x1b[0m and \x1b[36mcode\x1b[0m.\n"
    );
    assert!(!out.contains("**") && !out.contains('`'));
}

#[test]
fn headings_are_bold_without_hashes_and_set_apart() {
    let out = styled("# Title\n\n## Part\ntext");
    assert_eq!(out, "\x1b[1;4mTitle\x1b[0m\n\n\x1b[1mPart\x1b[0m\n\ntext\n");
}

#[test]
fn lists_nest_number_and_keep_their_indent_when_wrapped() {
    let md = "- one\n- two words that wrap around\n  - inner\n3. three\n4. four\n";
    let out = plain(md, 24);
    assert_eq!(
        out,
        "• one\n• two words that wrap\n  around\n  • inner\n\n3. three\n4. four\n"
    );
}

#[test]
fn task_lists_show_boxes() {
    assert_eq!(plain("- [x] done\n- [ ] open", 40), "• ☑ done\n• ☐ open\n");
}

#[test]
fn code_blocks_are_set_off_verbatim_with_their_language() {
    let md = "Run:\n\n```rust\nfn main() {\n\tlet x = 1;  // **not bold**\n}\n```\nafter";
    let out = plain(md, 40);
    assert_eq!(
        out,
        "Run:\n\n╭─ rust\n│ fn main() {\n│     let x = 1;  // **not bold**\n│ }\n╰─\n\nafter\n"
    );
}

#[test]
fn tables_align_their_columns() {
    let md = "| name | n | note |\n|:-----|--:|:----:|\n| a | 1 | x |\n| longer | 200 | yy |\n";
    let out = plain(md, 80);
    assert_eq!(
        out,
        "name   │   n │ note\n───────┼─────┼─────\na      │   1 │  x\nlonger │ 200 │  yy\n"
    );
}

#[test]
fn a_table_wider_than_the_terminal_becomes_records_with_nothing_cut() {
    let md = "| key | value |\n|---|---|\n| alpha | a long value that cannot fit |\n| beta | b |\n";
    let out = plain(md, 24);
    assert_eq!(
        out,
        "key: alpha\nvalue: a long value that\ncannot fit\n\nkey: beta\nvalue: b\n"
    );
}

#[test]
fn links_show_their_address_unless_the_text_is_the_address() {
    let out = plain(
        "See [the docs](https://example.com/d) or <https://x.org>.",
        80,
    );
    assert_eq!(
        out,
        "See the docs (https://example.com/d) or https://x.org.\n"
    );
    let styled = styled("[a](https://b)");
    assert!(styled.contains("\x1b[4;34ma\x1b[0m"), "{styled:?}");
}

#[test]
fn quotes_get_a_bar_on_every_line() {
    let out = plain("> quoted text that is long enough to wrap\n> twice", 22);
    assert_eq!(
        out,
        "│ quoted text that is\n│ long enough to wrap\n│ twice\n"
    );
}

#[test]
fn paragraphs_wrap_to_the_width_and_hard_breaks_hold() {
    let out = plain("aaa bbb ccc ddd eee fff ggg hhh\nsoft  \nhard", 20);
    assert_eq!(out, "aaa bbb ccc ddd eee\nfff ggg hhh soft\nhard\n");
}

#[test]
fn control_characters_from_the_model_never_reach_the_terminal() {
    let out = styled("bell\x07 and \x1b]0;title\x07 escape \x1b[31mred\r\n\n```\n\x1b[2Jcode\n```");
    assert!(!out.contains('\x07') && !out.contains('\r'), "{out:?}");
    for (i, _) in out.match_indices('\x1b') {
        assert!(out[i..].starts_with("\x1b["), "{out:?}");
        let end = out[i..].find('m').expect("every escape is an SGR");
        assert!(
            out[i + 2..i + end]
                .chars()
                .all(|c| c.is_ascii_digit() || c == ';'),
            "only odek's own styles: {out:?}"
        );
    }
    // What is left of a sequence shows as harmless text, its ESC as a picture.
    assert!(out.contains("[2Jcode"), "{out:?}");
    assert!(out.contains("\u{241b}]0;title\u{2407}"), "{out:?}");
}

#[test]
fn html_is_shown_as_text() {
    let out = plain("<b>hi</b> <script>x()</script>\n\n<div>\nblock\n</div>", 80);
    assert!(out.contains("<b>hi</b>"), "{out:?}");
    assert!(out.contains("<div>"), "{out:?}");
}

#[test]
fn rules_and_images() {
    let out = plain("a\n\n---\n\n![logo](img.png)", 10);
    assert_eq!(out, "a\n\n──────────\n\n[image: logo]\n(img.png)\n");
}

#[test]
fn ascii_look_for_terminals_without_utf8() {
    let out = render(
        "- a\n\n```\nx\n```",
        Look {
            width: 40,
            color: false,
            unicode: false,
        },
    );
    assert_eq!(out, "- a\n\n+-\n| x\n+-\n");
}

#[test]
fn unterminated_fence_and_empty_input() {
    assert_eq!(plain("", 40), "\n");
    assert_eq!(plain("```\nopen", 40), "╭─\n│ open\n╰─\n");
}

#[test]
fn wide_characters_count_as_two_columns() {
    let md = "| 名前 | x |\n|---|---|\n| 日本語 | y |\n";
    assert_eq!(plain(md, 40), "名前   │ x\n───────┼──\n日本語 │ y\n");
}
