//! Final answers rendered as Markdown on a terminal (a pseudo-terminal here), raw when piped,
//! with `NO_COLOR` or with `--raw`.

use crate::support::*;

const ANSWER: &str = "# Result\n\nSome **bold** and `code`.\n\n| name | n |\n|------|--:|\n| a | 1 |\n| longer | 200 |\n\n- first\n- second\n";

/// Runs `odek run` in a pseudo-terminal and returns everything it printed.
async fn on_a_terminal(extra_env: &[(&str, &str)], args: &[&str]) -> String {
    terminal_run(ANSWER, extra_env, args).await
}

async fn terminal_run(answer: &str, extra_env: &[(&str, &str)], args: &[&str]) -> String {
    let server = ScriptedServer::start(vec![text(answer)]).await;
    let sb = Sandbox::new();
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("TERM", "xterm").env("LANG", "C.UTF-8");
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    cmd.arg("run").args(args).arg("show me");
    tokio::task::spawn_blocking(move || -> Result<String, rexpect::error::Error> {
        let mut p = rexpect::session::spawn_command(cmd, Some(15_000))?;
        p.exp_eof()
    })
    .await
    .expect("join")
    .map(|latin1| utf8(&latin1))
    .expect("odek ran to the end")
}

/// rexpect reads a byte a character: the text as the terminal shows it.
fn utf8(latin1: &str) -> String {
    let bytes: Vec<u8> = latin1.chars().map(|c| c as u32 as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_answer_is_replaced_by_its_rendering_in_one_synchronized_write() {
    let out = on_a_terminal(&[], &[]).await;
    // The raw text streamed first, then one synchronized update moved up over it.
    let raw_at = out.find("**bold**").expect("the streamed raw text");
    let update = out
        .find("\x1b[?2026h")
        .unwrap_or_else(|| panic!("a synchronized update: {out:?}"));
    assert!(raw_at < update, "{out:?}");
    let rendered = &out[update..];
    // 11 rows of raw text (the pty answers no size: 80 columns).
    assert!(
        rendered.starts_with("\x1b[?2026h\r\x1b[11A\x1b[J"),
        "{rendered:?}"
    );
    assert!(rendered.contains("\x1b[1;4mResult\x1b[0m"), "{rendered:?}");
    assert!(rendered.contains("\x1b[1mbold\x1b[0m"), "{rendered:?}");
    assert!(rendered.contains("\x1b[36mcode\x1b[0m"), "{rendered:?}");
    assert!(
        rendered.contains("• first\r\n• second\r\n\x1b[?2026l"),
        "{rendered:?}"
    );
    // Columns aligned, the numbers to the right as the table asks.
    assert!(
        rendered.contains("longer\x1b[2m │ \x1b[0m200"),
        "{rendered:?}"
    );
    assert!(
        rendered.contains("a     \x1b[2m │ \x1b[0m  1"),
        "{rendered:?}"
    );
    assert!(!rendered.contains("**"), "{rendered:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_answer_taller_than_the_screen_stays_as_it_was_streamed() {
    // 30 lines on a 24-row screen: its top has scrolled away and cannot be rewritten.
    let answer: String = (1..=30).map(|i| format!("- **item** {i}\n")).collect();
    let out = terminal_run(&answer, &[], &[]).await;
    assert!(out.contains("- **item** 30"), "{out:?}");
    assert!(!out.contains("\x1b[?2026h"), "{out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_answer_is_printed_rendered_without_moving_the_cursor() {
    let out = on_a_terminal(&[], &["--no-stream"]).await;
    assert!(!out.contains("**bold**"), "{out:?}");
    assert!(!out.contains("\x1b[?2026h"), "{out:?}");
    assert!(out.contains("\x1b[1mbold\x1b[0m"), "{out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_flag_no_color_and_odek_raw_keep_the_model_text() {
    for (env, args) in [
        (vec![], vec!["--raw"]),
        (vec![("NO_COLOR", "1")], vec![]),
        (vec![("ODEK_RAW", "true")], vec!["--no-stream"]),
    ] {
        let out = on_a_terminal(&env, &args).await;
        assert!(
            out.contains("Some **bold** and `code`."),
            "{env:?} {args:?}: {out:?}"
        );
        assert!(!out.contains("\x1b[1mbold"), "{env:?} {args:?}: {out:?}");
        assert!(!out.contains("\x1b[?2026h"), "{env:?} {args:?}: {out:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn piped_answers_are_the_model_text_byte_for_byte() {
    let server = ScriptedServer::start(vec![text(ANSWER)]).await;
    let sb = Sandbox::new();
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "show me"]);
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", show(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), ANSWER);
}
