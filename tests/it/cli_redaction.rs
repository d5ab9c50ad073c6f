//! Secrets in what tools read never reach the disk or the model: a file with 40+ secret
//! formats is read with `read_file` and `cat` through the real binary, and neither the
//! session files, the event stream nor the follow-up requests hold any of them.

use std::path::Path;

use crate::support::*;
use serde_json::json;

/// The fixture: realistic fake credentials in the shapes people paste into notes, shells
/// and config files.
const FIXTURE: &str = include_str!("../fixtures/redaction/leaky-notes.txt");

/// Every secret value in [`FIXTURE`] (the part that must disappear).
const SECRETS: &[&str] = &[
    "AKIAVQJXXVBOTHD2WTFL",
    "pdzPaEMM1ZA7V0FhHVJWDBt2hWdQZUm14QhoxhLP",
    "675eVq30XYqaNUDqN9Nifp28",
    "dop_v1_abeec12975fd55911ea2cbd390b656a4d2bad821df997d529975dcb6de0703b4",
    "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",
    "hunter2hunter",
    "s3cr3t!",
    "sk-proj-P-VSGVBrYSuIb9OZiFZ3HLKv797TPNbpjava1bMZT3BlbkFJwIMlvdp5gjTrD8Osj-LnZ5R_j-8U-m7aSz7NRSOt",
    "sk-ant-api03-N_cNljiRkV71kDRuIr2jhTxs_OHKDpnJh-rgiOaPq-N9RtlnnudSkpmKog0Qwp-vaQcT7xl2cwC6dT0ctPVnaawqrczLJAA",
    "ghp_2OkDCJ23VmCwykTp4EilsS2aQnjUHc6LZQ9S",
    "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",
    "glpat-6e9cpCGybY9lMR4pAwBp",
    "npm_G2BqxLHmAuMe57l9JuO4iIhOvqiZnCxh1Gd1",
    "sk_live_CJoWD6W7vjmqz6mYjWc7izH9",
    "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",
    "SKadf32b1cc8fa650bdf6593d1b61b4b17",
    "AIzaSygUl8oPK_HJN45P-ED75cNRqsKz5b70CO8",
    "xoxb-675543966187-1232428454226-d0YG5KE7X5ozhONva1lZp814",
    "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",
    "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",
    "hvs.F8w50SR2Qugs4lIFVRdxtDyKUOtfZUTqr8aFvnKbnHFbDfj3u_ypO09RnKw1zW9-ohP46PbmT1TOkzfR1wKbPXTXx8TT",
    "AGE-SECRET-KEY-1TUCHNSXKFZPAVLT3MUNKJMTVZNRU93EYL98S3MERP65TKL74EULMDNW8RY",
    "dp.pt.HHwJwRJvreuENsrgDUIvMAZCQLzPdaWq33w5bqyhPzD",
    "dapi052e96819b8ac3e6dfeb63cc17fd04d5",
    "lin_api_adI9itK27Vtkpk8mC3mMcSBnTTwXtKWcJzKRBHuj",
    "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",
    "pul-90a16be3388e7f14697f0603577aa6c55e0d19d3",
    "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",
    "shippo_live_e81dd58a0c1f9a51bb5d9fb33fdebd0bd6ba93e3",
    "glsa_4zjIccvbkmUAolhChZ9oZGrp27YmBnBZ_d9f9b9f5",
    "pscale_pw_EtNoQaoBOkwwOA7tOggYDi0TIueidA9G2m7kbtVsPDT",
    "PMAK-ec01407ec6a1b044da05ca4e-d81004c1dec8ee162646ffa9204c1c9eeb",
    "rubygems_488c6daa9b7fcd3ce2818f26ff6bff254199c973226b7226",
    "jcwa2rdf3sep8on3fakc9yy7wswexv23ijlq31xg",
    "ce587e46-20fc-d39a-4d82-4aebf9c5ec62",
    "4Sd8Q~e3p1g1aKfux6fX1L3dd4u2dDGqt.1NvVeI",
    "A3-YGVGBX-PMAEBHU64LS-2ISN4-3MGD5-JILEI",
    "0267838980:AA-kKd2Lq1D595WXjjOt6v3rzKE4RNo88yL",
    "key-ad3995bd6c96fde1797abd723e1f94f4",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI1ODIxMjgzMTAxIiwibmFtZSI6ImRlcGxveS1ib3QiLCJpYXQiOjE3MTgwMDAwMDB9.R74KLO10yZ2ChVIHNaQzlMKYdILjCZO4uEHrIxdNb9U",
    "eliZ9yfNusZseP",
    "OwTTozqvCnAKjsmvnwK24pD8eg5NwFD2D0wQ",
    "S82YTyr+n/dryG4cBIRlNmbh+/3UHdgBDJppkFFEZciCQP00U87juJUBEoAXHmGR",
    "Z2XsTS5MivpF9k9jz89iLWeajzV6xuRXLAsfmhVwlva/byCSEsWAGU0g47kCxhG4",
    "rS2A5e7sAuPFJiN7UZpjxV2KKrgnfHCzbt5G7+eSeiOJcT/HHqodEvUF0f+UzpWc",
];

/// Key names and context that must stay readable around the redacted values.
const KEPT: &[&str] = &[
    "aws_secret_access_key = [REDACTED]",
    "https://hooks.slack.com/services/[REDACTED]",
    "password=[REDACTED]",
    "password: \"[REDACTED]\"",
    "datadog_api_key: [REDACTED]",
    "postgres://app:[REDACTED]@db.internal:5432/app",
    "Authorization: Bearer [REDACTED]",
];

/// The secrets (of [`SECRETS`]) that `text` still holds.
fn leaked<'a>(text: &str) -> Vec<&'a str> {
    SECRETS
        .iter()
        .copied()
        .filter(|secret| text.contains(secret))
        .collect()
}

/// Every file under `dir`, recursively, as (path, text).
fn files_under(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).expect("read_dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let bytes = std::fs::read(&path).expect("read");
                out.push((
                    path.display().to_string(),
                    String::from_utf8_lossy(&bytes).into_owned(),
                ));
            }
        }
    }
    out
}

#[test]
fn the_fixture_holds_every_listed_secret() {
    assert!(SECRETS.len() >= 32, "at least 32 formats");
    for secret in SECRETS {
        assert!(FIXTURE.contains(secret), "{secret} is not in the fixture");
    }
    // Tool output over 4096 bytes is cut in the middle; the fixture must arrive whole so
    // that nothing is missing for a reason other than redaction.
    assert!(FIXTURE.len() < 3600, "fixture too long: {}", FIXTURE.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_read_by_tools_stay_off_disk_and_out_of_requests() {
    let server = ScriptedServer::start(vec![
        tools(&[("read_file", json!({"path": "leaky-notes.txt"}))]),
        tools(&[("shell", json!({"command": "cat leaky-notes.txt"}))]),
        text("Those credentials should be rotated."),
    ])
    .await;
    let sb = Sandbox::new();
    std::fs::write(sb.work.join("leaky-notes.txt"), FIXTURE).expect("write fixture");
    let events_path = sb.dir.path().join("events.jsonl");
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--events-include-args", "--events-jsonl"])
        .arg(&events_path)
        .arg("look at leaky-notes.txt");
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));

    // What went back to the model: both results arrived whole and redacted.
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{}", show(&out));
    let results = tool_results(&requests[2]);
    assert_eq!(results.len(), 2, "{results:?}");
    for (name, result) in ["read_file", "cat"].iter().zip(&results) {
        let body = unwrap_untrusted(result);
        assert!(!body.contains("bytes omitted"), "{name} result was cut");
        assert!(body.contains("# end of notes"), "{name} result incomplete");
        for kept in KEPT {
            assert!(body.contains(kept), "{name}: {kept:?} missing in\n{body}");
        }
    }
    for (i, request) in requests.iter().enumerate() {
        let text = request.to_string();
        let leaked = leaked(&text);
        assert!(leaked.is_empty(), "request {} leaks {leaked:?}", i + 1);
    }

    // The event stream.
    let events = read(&events_path);
    assert!(events.contains("tool_call_completed"), "{events}");
    let leaked_events = leaked(&events);
    assert!(leaked_events.is_empty(), "events leak {leaked_events:?}");

    // Everything under ODEK_HOME: the session file, any journal, the index, the audit log.
    let sessions_dir = sb.home.join("sessions");
    let files = files_under(&sb.home);
    assert!(
        files.iter().any(|(path, text)| {
            Path::new(path).parent() == Some(sessions_dir.as_path())
                && path.ends_with(".json")
                && text.contains("[REDACTED]")
        }),
        "no session file with redacted content among {:?}",
        files.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
    for (path, text) in &files {
        let leaked = leaked(text);
        assert!(leaked.is_empty(), "{path} leaks {leaked:?}");
    }
}

/// odek's own key: reading a process's environment under `/proc`, however the pid is spelled,
/// is a secret read (denied with nobody to ask); and the key encoded inside a longer text —
/// at each of the three places it can start in a base64 group, or percent-encoded — reaches
/// neither the model nor a file under the home.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odeks_key_is_out_of_reach_of_proc_and_of_encodings() {
    use base64::Engine as _;
    let key = "sk-live-AbCdEfGhIjKlMnOpQrStUv0123456789";
    let encoded: Vec<String> = ["K=", "AK=", "ABK="]
        .iter()
        .map(|prefix| {
            base64::engine::general_purpose::STANDARD.encode(format!("{prefix}{key}\nHOME=/"))
        })
        .collect();
    let percent: String = key.bytes().map(|b| format!("%{b:02X}")).collect();
    // `xxd -p`: 60 digits a line, the key starting mid-line.
    let hex: String = format!("ODEK_API_KEY={key}\n")
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect();
    let xxd: String = hex
        .as_bytes()
        .chunks(60)
        .map(|line| format!("{}\n", String::from_utf8_lossy(line)))
        .collect();
    let spaced: String = key.bytes().map(|b| format!("{b:02x} ")).collect();
    let server = ScriptedServer::start(vec![
        tools(&[
            (
                "shell",
                json!({"command": "tr '\\0' '\\n' < /proc/$PPID/environ | grep ODEK_API | base64 -w0"}),
            ),
            ("shell", json!({"command": "cat /proc/self/environ"})),
            ("read_file", json!({"path": "/proc/self/environ"})),
        ]),
        tools(&[("shell", json!({"command": "cat encoded.txt"}))]),
        text("done"),
    ])
    .await;
    let sb = Sandbox::new();
    std::fs::write(
        sb.work.join("encoded.txt"),
        format!("{}\n{percent}\n{xxd}{spaced}\n", encoded.join("\n")),
    )
    .expect("write");
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("ODEK_API_KEY", key).args(["run", "print the key"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let requests = server.requests();
    let denied = tool_results(&requests[1]);
    assert_eq!(denied.len(), 3, "{denied:?}");
    for result in &denied {
        assert!(
            result.contains("operation denied") && result.contains("secret_read"),
            "{result}"
        );
    }
    // The middle of each encoded line is the key's alone, whatever its alignment.
    let pieces: Vec<&str> = encoded
        .iter()
        .map(|e| &e[8..40])
        .chain([&percent[6..60], &xxd[30..58], &xxd[64..90], &spaced[6..60]])
        .collect();
    let read_back = tool_results(&requests[2]).join("\n");
    assert!(read_back.contains("[REDACTED]"), "{read_back}");
    for piece in &pieces {
        assert!(!read_back.contains(piece), "{piece} reached the model");
    }
    for (path, text) in files_under(&sb.home) {
        for piece in &pieces {
            assert!(!text.contains(piece), "{path} holds {piece}");
        }
        assert!(!text.contains(key), "{path} holds the key");
    }
}

/// A key configured as `"${MY_KEY}"` hides `MY_KEY` from the shell's environment too (and from
/// MCP servers' and sub-agents', which share the rule), not only the `ODEK_*` names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_variable_a_key_is_read_from_is_not_passed_to_commands() {
    let server = ScriptedServer::start(vec![
        tools(&[("shell", json!({"command": "env | cut -d= -f1 | sort"}))]),
        text("done"),
    ])
    .await;
    let sb = Sandbox::new();
    sb.global_config(r#"{"api_key": "${MY_KEY}"}"#);
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("MY_KEY", "sk-mine-0123456789abcdefghij")
        .env("MY_OTHER_SETTING", "kept")
        .args(["run", "--ephemeral", "list the variables"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let names = tool_results(&server.requests()[1]).join("\n");
    assert!(names.contains("MY_OTHER_SETTING"), "{names}");
    assert!(!names.contains("MY_KEY"), "{names}");
}

/// Issue 43, F1: odek's own `/proc/<pid>/environ` shows no key, even to a reader (root, here)
/// whom non-dumpability does not stop; the variables are still there for odek and its children
/// (the server answers with the key it read).
#[tokio::test(flavor = "multi_thread")]
async fn odeks_environ_block_shows_no_key_even_to_root() {
    let key = "sk-live-ZyXwVuTsRqPoNmLkJiH9876543210";
    let server = ScriptedServer::start(vec![text("still keyed")]).await;
    let sb = Sandbox::new();
    sb.global_config(r#"{"api_key": "${MY_KEY}"}"#);
    let served = serve::Served::start_with_env(
        &sb,
        &server.base_url(),
        &[],
        &[
            ("MY_KEY", key),
            ("TELEGRAM_BOT_TOKEN", "123456:ABCdefGHIjklMNOpqrSTUvwxYZ"),
        ],
    );
    let environ = std::fs::read(format!("/proc/{}/environ", served.pid())).expect("read environ");
    let environ = String::from_utf8_lossy(&environ);
    assert!(environ.contains("MY_KEY="), "names stay: {environ:?}");
    assert!(!environ.contains(key), "the key is in the block");
    assert!(!environ.contains("ABCdefGHI"), "the token is in the block");
    served.prompt_completed(json!({"content": "hello"})).await;
    assert_eq!(
        server.auth_headers()[0].as_deref(),
        Some(format!("Bearer {key}").as_str())
    );
}

/// Every file under the home's `sessions` folder (snapshots, journals, the index), as text.
fn issue60_saved(sb: &Sandbox) -> String {
    let mut text = String::new();
    let mut folders = vec![sb.home.join("sessions")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else {
                text.push_str(&String::from_utf8_lossy(
                    &std::fs::read(&path).unwrap_or_default(),
                ));
            }
        }
    }
    text
}

/// The id of the one saved session.
fn issue60_session_id(sb: &Sandbox) -> String {
    std::fs::read_dir(sb.home.join("sessions"))
        .expect("sessions")
        .flatten()
        .filter_map(|e| {
            let path = e.path();
            let stem = path.file_stem()?.to_str()?.to_string();
            (path.extension().is_some_and(|x| x == "json") && stem.len() == 41).then_some(stem)
        })
        .next()
        .expect("a saved session")
}

/// Issue 60, M5: a provider header's value from `${GW_HDR}` is a key: the variable is kept
/// from the shell's environment and the value never saved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_headers_secret_is_kept_from_commands_and_never_saved() {
    let value = "gwhdr-secret-0123456789abcdef";
    let server = ScriptedServer::start(vec![
        tools(&[("shell", json!({"command": format!("env; echo {value}")}))]),
        text("done"),
    ])
    .await;
    let sb = Sandbox::new();
    sb.global_config(
        &json!({"providers": {"gw": {"base_url": server.base_url(), "model": "test-model",
            "headers": {"x-gw-auth": "${GW_HDR}"}}}})
        .to_string(),
    );
    let mut cmd = sb.odek(&server.base_url());
    cmd.env_remove("ODEK_BASE_URL")
        .env_remove("ODEK_MODEL")
        .env("GW_HDR", value)
        .args([
            "run",
            "--provider",
            "gw",
            "--yolo",
            "--no-stream",
            "show the environment",
        ]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let requests = server.requests();
    let result = tool_results(&requests[1]).join("\n");
    assert!(result.contains("HOME="), "the command ran: {result}");
    assert!(!result.contains("GW_HDR"), "{result}");
    assert!(!result.contains(value), "{result}");
    assert!(!issue60_saved(&sb).contains(value));
}

/// Issue 60, L2: provider state (a thinking block and its signature) that holds a token
/// pasted into the conversation is dropped whole: not in the saved session, not in
/// `GET /api/sessions/{id}`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_state_holding_a_pasted_token_is_never_saved_nor_served() {
    let token = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
    let signature = "EqQBCkgIARABGAIiQLissue60signature0123456789/+==";
    let server = ScriptedServer::start_anthropic(vec![anthropic::with_thinking(
        text("Noted."),
        json!([{"type": "thinking", "thinking": format!("the user pasted {token}"),
                "signature": signature}]),
    )])
    .await;
    let sb = Sandbox::new();
    let key = "sk-ant-api03-test-key-0123456789abcdefABCDEF";
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("ANTHROPIC_API_KEY", key)
        .env("ODEK_MODEL", "claude-test")
        .args([
            "run",
            "--provider",
            "anthropic",
            "--thinking",
            "low",
            "--no-stream",
            "remember this",
        ]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let saved = issue60_saved(&sb);
    assert!(saved.contains("Noted."), "the session was saved");
    assert!(!saved.contains(token), "the token is never saved");
    assert!(!saved.contains(signature), "the state is dropped whole");
    let id = issue60_session_id(&sb);
    let served = serve::Served::start_with_env(
        &sb,
        &server.base_url(),
        &[],
        &[("ANTHROPIC_API_KEY", key), ("ODEK_MODEL", "claude-test")],
    );
    let detail = served.get(&format!("/api/sessions/{id}")).await;
    assert_eq!(detail.status, 200, "{}", detail.text);
    assert!(detail.text.contains("Noted."), "{}", detail.text);
    assert!(!detail.text.contains(token) && !detail.text.contains(signature));
}

/// RFC 4648 base32 (`base32`) or base32hex (`basenc --base32hex`) of `bytes`, padded.
fn base32(bytes: &[u8], alphabet: &[u8; 32]) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(5) {
        let mut group = [0u8; 5];
        group[..chunk.len()].copy_from_slice(chunk);
        let bits = group.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b));
        let chars = (chunk.len() * 8).div_ceil(5);
        for index in 0..8 {
            if index < chars {
                out.push(char::from(
                    alphabet[((bits >> (35 - 5 * index)) & 31) as usize],
                ));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Issue 60, H4: the key read from a parent's environment comes out of `base32` (wrapped at
/// 76 columns, as it prints by default, or in one line), `basenc --base32hex` or `base64`
/// (wrapped too), starting at any of the five places in a base32 group (three in base64):
/// none of the characters that are the key's alone reaches the model or a file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odeks_key_in_base32_and_wrapped_base64_is_redacted() {
    use base64::Engine as _;
    const BASE32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    const BASE32HEX: &[u8; 32] = b"0123456789ABCDEFGHIJKLMNOPQRSTUV";
    let key = "sk-live-AbCdEfGhIjKlMnOpQrStUv0123456789";
    let sb = Sandbox::new();
    // Enough before the key that its encoding crosses a line break.
    let plains: Vec<String> = ["K=", "AK=", "ABK=", "ABCK=", "ABCDK="]
        .iter()
        .map(|prefix| format!("PATH=/usr/local/bin:/usr/bin\n{prefix}{key}\nHOME=/root\n"))
        .collect();
    let mut commands = Vec::new();
    for (index, plain) in plains.iter().enumerate() {
        std::fs::write(sb.work.join(format!("env{index}")), plain).expect("write");
        commands.push(format!("base32 env{index}"));
        commands.push(format!("base32 -w0 env{index}"));
        commands.push(format!("basenc --base32hex env{index}"));
        commands.push(format!("base64 env{index}"));
    }
    let calls: Vec<(&str, serde_json::Value)> = commands
        .iter()
        .map(|command| ("shell", json!({ "command": command })))
        .collect();
    let server = ScriptedServer::start(vec![tools(&calls), text("done")]).await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("ODEK_API_KEY", key)
        .args(["run", "--yolo", "print the key"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    // The characters of each encoding that hold the key's bits alone, as 12-character pieces.
    let mut pieces: Vec<String> = Vec::new();
    for plain in &plains {
        let start = plain.find(key).expect("key");
        let end = start + key.len();
        let encodings = [
            (base32(plain.as_bytes(), BASE32), 5),
            (base32(plain.as_bytes(), BASE32HEX), 5),
            (
                base64::engine::general_purpose::STANDARD.encode(plain.as_bytes()),
                6,
            ),
        ];
        for (encoded, bits) in encodings {
            let core = &encoded[(8 * start).div_ceil(bits)..(8 * end) / bits];
            for at in (0..core.len() - 12).step_by(4) {
                pieces.push(core[at..at + 12].to_string());
            }
        }
    }
    let results = tool_results(&server.requests()[1]);
    assert_eq!(results.len(), commands.len());
    let read_back: String = results.join("").replace('\n', "");
    assert!(read_back.contains("[REDACTED]"), "{read_back}");
    for piece in &pieces {
        assert!(
            !read_back.contains(piece.as_str()),
            "{piece} reached the model: {results:?}"
        );
    }
    for (path, text) in files_under(&sb.home) {
        let text = text.replace("\\n", "").replace('\n', "");
        for piece in &pieces {
            assert!(!text.contains(piece.as_str()), "{path} holds {piece}");
        }
    }
}
