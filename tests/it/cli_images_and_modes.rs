//! Images and modes from the terminal (issue 64, items 4 and 5): `odek run -i` and
//! `@shot.png` send image parts on each wire in its format; a model that takes no images,
//! and an image that cannot be sent, are refused before any request; `--mode plan` refuses
//! writes and keeps reads; the REPL's `/mode` shows the mode in its prompt.

use serde_json::{Value, json};

use crate::support::*;

/// A PNG's signature and a little more: odek checks the magic bytes only.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR-scripted";

fn png_data_url() -> String {
    use base64::Engine as _;
    let data = base64::engine::general_purpose::STANDARD.encode(PNG);
    format!("data:image/png;base64,{data}")
}

/// A sandbox whose model takes images, with `shot.png` in the working directory.
fn seeing_sandbox() -> Sandbox {
    let sb = Sandbox::new();
    sb.global_config(r#"{"images": true}"#);
    std::fs::write(sb.work.join("shot.png"), PNG).expect("png");
    sb
}

async fn run(
    sb: &Sandbox,
    server: &ScriptedServer,
    env: &[(&str, &str)],
    args: &[&str],
) -> std::process::Output {
    let mut cmd = sb.odek(&server.base_url());
    cmd.envs(env.iter().copied()).arg("run").args(args);
    output(cmd).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dash_i_sends_an_image_part_on_the_chat_anthropic_and_responses_wires() {
    let url = png_data_url();
    // Chat Completions: an `image_url` part after the text.
    let server = ScriptedServer::start(vec![text("A chart.")]).await;
    let sb = seeing_sandbox();
    let out = run(&sb, &server, &[], &["-i", "shot.png", "what is this?"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let user = last_user(&server.requests()[0]);
    assert_eq!(
        user["content"],
        json!([{"type": "text", "text": "what is this?\n\n[Image attached: shot.png]"},
               {"type": "image_url", "image_url": {"url": url}}])
    );
    // Anthropic Messages: a base64 `image` block.
    let server = ScriptedServer::start_anthropic(vec![text("A chart.")]).await;
    let env = [
        (
            "ANTHROPIC_API_KEY",
            "sk-ant-api03-test-key-0123456789abcdef",
        ),
        ("ODEK_MODEL", "claude-test"),
    ];
    let args = [
        "--provider",
        "anthropic",
        "--image",
        "shot.png",
        "what is this?",
    ];
    let out = run(&sb, &server, &env, &args).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let image = image_block(&server.requests()[0], "messages", "image");
    let data = url.strip_prefix("data:image/png;base64,").expect("data");
    assert_eq!(
        image["source"],
        json!({"type": "base64", "media_type": "image/png", "data": data})
    );
    // Responses: an `input_image` part.
    let server = ScriptedServer::start_responses(vec![text("A chart.")]).await;
    let env = [
        ("OPENAI_API_KEY", "sk-openai-0123456789abcdef"),
        ("ODEK_MODEL", "gpt-5-mini"),
    ];
    let args = ["--provider", "openai", "-i", "shot.png", "what is this?"];
    let out = run(&sb, &server, &env, &args).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let image = image_block(&server.requests()[0], "input", "input_image");
    assert_eq!(image["image_url"], url);
}

/// The first content part of type `kind` in the request's `list` (`messages`, `input`).
fn image_block(request: &Value, list: &str, kind: &str) -> Value {
    request[list]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .find(|part| part["type"] == kind)
        .cloned()
        .unwrap_or_else(|| panic!("no {kind} part in {request}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_at_image_in_a_run_prompt_goes_as_an_image_part() {
    let server = ScriptedServer::start(vec![text("A chart.")]).await;
    let sb = seeing_sandbox();
    let out = run(&sb, &server, &[], &["explain", "@shot.png", "please"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let user = last_user(&server.requests()[0]);
    assert_eq!(
        user["content"][0]["text"],
        "explain @shot.png please\n\n[Image attached: shot.png]"
    );
    assert_eq!(user["content"][1]["image_url"]["url"], png_data_url());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_takes_no_images_is_refused_before_any_request() {
    let server = ScriptedServer::start(vec![text("never")]).await;
    let sb = Sandbox::new();
    std::fs::write(sb.work.join("shot.png"), PNG).expect("png");
    let out = run(&sb, &server, &[], &["-i", "shot.png", "what is this?"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let err = stderr(&out);
    assert!(
        err.contains(
            "shot.png is an image, and the model test-model does not take images (setting `images`)"
        ),
        "{err}"
    );
    assert!(err.contains("ODEK_IMAGES=true"), "{err}");
    assert_eq!(server.requests().len(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_too_big_not_an_image_or_missing_is_refused_and_nothing_is_sent() {
    let server = ScriptedServer::start(vec![text("never")]).await;
    let sb = seeing_sandbox();
    let mut big = PNG.to_vec();
    big.resize(4 * 1024 * 1024 + 1, 0);
    std::fs::write(sb.work.join("big.png"), big).expect("big");
    std::fs::write(sb.work.join("fake.gif"), "GIF? no, text").expect("fake");
    let mut mid = PNG.to_vec();
    mid.resize(3 * 1024 * 1024, 0);
    std::fs::write(sb.work.join("mid.png"), &mid).expect("mid");
    std::fs::write(sb.work.join("mid2.png"), &mid).expect("mid2");
    let cases = [
        (
            vec!["-i", "big.png", "look"],
            "image big.png is 4194305 bytes, over the 4194304-byte limit",
        ),
        (
            vec!["look at @fake.gif"],
            "fake.gif is not a PNG, JPEG, GIF or WebP image",
        ),
        (vec!["-i", "gone.png", "look"], "image gone.png: "),
        (
            vec!["-i", "mid.png", "look at @mid2.png"],
            "mid2.png: the images would hold 6291456 bytes together, over the 4194304-byte limit",
        ),
    ];
    for (args, message) in cases {
        let out = run(&sb, &server, &[], &args).await;
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", show(&out));
        assert!(stderr(&out).contains(message), "{args:?}: {}", show(&out));
    }
    assert_eq!(server.requests().len(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_mode_refuses_a_write_keeps_a_read_and_tells_the_model_to_plan() {
    let server = ScriptedServer::start(vec![
        tools(&[("read_file", json!({"path": "notes.txt"}))]),
        tools(&[(
            "write_file",
            json!({"path": "out.md", "content": "changed\n"}),
        )]),
        text("The plan: change out.md."),
        text("Plain."),
    ])
    .await;
    let sb = Sandbox::new();
    std::fs::write(sb.work.join("notes.txt"), "the notes").expect("notes");
    let out = run(&sb, &server, &[], &["--mode", "plan", "change out.md"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        stdout(&out).contains("The plan: change out.md."),
        "{}",
        show(&out)
    );
    let requests = server.requests();
    assert!(tool_results(&requests[1])[0].contains("the notes"));
    let refused = tool_results(&requests[2])
        .pop()
        .expect("the write's result");
    assert!(refused.contains("denied"), "{refused}");
    assert!(!sb.work.join("out.md").exists());
    // The note is in every request of the turn, the same bytes each time.
    let notes: Vec<String> = requests[..3].iter().map(plan_note).collect();
    assert!(
        notes[0].contains("[Plan mode: the user wants a plan, not changes."),
        "{notes:?}"
    );
    assert!(notes.iter().all(|n| *n == notes[0]));
    // Without a mode, no note.
    let out = run(&sb, &server, &[], &["hello"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(plan_note(&server.requests()[3]), "");
    let out = run(&sb, &server, &[], &["--mode", "yolo", "hello"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(
        stderr(&out).contains("unknown mode \"yolo\""),
        "{}",
        show(&out)
    );
}

/// The system message that holds the plan-mode note ("" when none does).
fn plan_note(request: &Value) -> String {
    messages(request)
        .iter()
        .filter(|m| m["role"] == "system")
        .filter_map(|m| m["content"].as_str())
        .find(|c| c.contains("[Plan mode:"))
        .unwrap_or("")
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_repl_switches_to_plan_mode_shows_it_in_its_prompt_and_refuses_a_write() {
    let server = ScriptedServer::start(vec![
        tools(&[("write_file", json!({"path": "out.md", "content": "x\n"}))]),
        text("Planned instead."),
    ])
    .await;
    let sb = Sandbox::new();
    let cmd = repl_command(&sb, &server);
    in_pty(cmd, move |p| {
        p.exp_string("odek 1> ")?;
        p.send_line("/mode")?;
        p.exp_string("Mode: none (the configured policy)")?;
        p.exp_string("accept_edits")?;
        p.send_line("/mode plan")?;
        p.exp_string("Mode: plan")?;
        p.exp_string("odek 1 [plan]> ")?;
        p.send_line("write out.md")?;
        p.exp_string("Planned instead.")?;
        p.exp_string("odek 2 [plan]> ")?;
        p.send_line("/mode accept_edits")?;
        p.exp_string("odek 2> ")?;
        p.send_line("/exit")?;
        p.exp_eof()?;
        Ok(())
    })
    .await;
    let requests = server.requests();
    assert!(tool_results(&requests[1])[0].contains("denied"));
    assert!(!sb.work.join("out.md").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_takes_an_image_and_a_mode_for_its_turn_only() {
    let server = ScriptedServer::start(vec![text("First."), text("Second."), text("Third.")]).await;
    let sb = seeing_sandbox();
    let out = run(&sb, &server, &[], &["--session", "first"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let mut cont = sb.odek(&server.base_url());
    cont.args(["continue", "--mode", "plan", "-i", "shot.png", "and this?"]);
    let out = output(cont).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let mut again = sb.odek(&server.base_url());
    again.args(["continue", "and now?"]);
    let out = output(again).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let requests = server.requests();
    assert_eq!(
        last_user(&requests[1])["content"][1]["image_url"]["url"],
        png_data_url()
    );
    assert!(plan_note(&requests[1]).contains("[Plan mode:"));
    // The next turn has its own flags: no mode, and the image stays in the transcript.
    assert_eq!(plan_note(&requests[2]), "");
    assert_eq!(last_user_text(&requests[2]), "and now?");
    assert!(requests[2].to_string().contains(&png_data_url()));
}
