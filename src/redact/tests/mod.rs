//! Unit tests of the redactor: the behaviour kept from the first version, one sample per
//! credential format (`formats.rs`), the clean corpus (`tests/fixtures/redaction/clean/`),
//! the password judgement and the keyword pass.

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};

use super::patterns::{Finder, GITLEAKS_COMMIT, GITLEAKS_LEFT_OUT, GITLEAKS_RULE_IDS, RULES};
use super::{REDACTED, Redactor, engine, is_secret_env_name};
use crate::util::hex::encode as hex_encode;

mod formats;

fn redact(text: &str) -> String {
    Redactor::new().redact(text).into_owned()
}

fn assert_redacted(text: &str, secret: &str) {
    let out = redact(text);
    assert!(!out.contains(secret), "{secret:?} survived in {out:?}");
    assert!(out.contains(REDACTED), "nothing redacted in {out:?}");
}

/// The cases redaction changes, one `before -> after` per line.
fn changed_by_redaction(cases: &[&str]) -> String {
    cases
        .iter()
        .filter_map(|text| {
            let out = redact(text);
            (out != *text).then(|| format!("{text:?} -> {out:?}"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn assert_clean(text: &str) {
    let redactor = Redactor::new();
    let out = redactor.redact(text);
    assert!(
        matches!(out, Cow::Borrowed(_)),
        "{text:?} was changed to {out:?}"
    );
}

#[test]
fn provider_keys_are_redacted() {
    let cases = [
        "gsk_abcdefghijklmnopqrstuvwxyz0123456789",
        "xai-abcdefghijklmnopqrstuvwxyz0123456789AB",
        "hf_abcdefghijklmnopqrstuvwxyz0123456789",
        "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
        "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123",
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "gho_abcdefghijklmnopqrstuvwxyz0123456789",
        "ghs_abcdefghijklmnopqrstuvwxyz0123456789",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
        "npm_abcdefghijklmnopqrstuvwxyz0123456789",
        "glpat-abcdefghij0123456789",
        "pypi-AgEIcHlwaS5vcmcCJGFiY2Rl",
        "AKIAIOSFODNN7EXAMPLE",
        "ASIAIOSFODNN7EXAMPLE",
        "xoxb-1234567890-1234567890-abcdefghijklmnopqrstuvwx",
        "xapp-1-A0123456789-1234567890-abcdef0123456789abcdef",
        "whsec_abcdefghijklmnopqrstuvwxyz01",
        "sk_live_abcdefghijklmnopqrstuvwx",
        "rk_live_abcdefghijklmnopqrstuvwx",
        "sk_test_abcdefghijklmnopqrstuvwx",
        "123456789:AAHfakeTokenValueExample0123456789abc",
        "AIzaSyA-abcdefghijklmnopqrstuvwxyz012345",
        "SK0123456789abcdef0123456789abcdef",
        "hvs.CAESIabcdefghijklmnopqrstuvwxyz0123",
        "ya29.a0AfH6SMBabcdefghijklmnopqrstuvwxyz",
        "1//0abcdefghijklmnopqrstuvwxyz0123456789",
        "SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",
        "MTIzNDU2Nzg5MDEyMzQ1Njc4.GaBcDe.abcdefghijklmnopqrstuvwxyz0123456",
    ];
    for secret in cases {
        assert_redacted(&format!("value: {secret} end"), secret);
    }
}

#[test]
fn look_alikes_are_left_alone() {
    let cases = [
        "gsk_short",
        "xai-short-value",
        "hf_tooshort",
        "task-notes-abcdefghijklmnopqrstuvwxyz0123456789",
        "risk-assessment-abcdefghijklmnopqrstuvwxyz",
        "ghp_short",
        "github_pat_short",
        "npm_install",
        "glpat-short",
        "pypi-short",
        "AKIA_NOT_A_KEY",
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkq\n-----END PUBLIC KEY-----",
        "eyJhbGciOi.short.token",
        "xoxb-short",
        "xapp-1-short",
        "AccountKey=short",
        "whsec_short",
        "sk_live_short",
        "12345:short",
        "AIzaShort",
        "SKIPPED the step",
        "hvs.short",
        "ya29.short",
        "1//0short",
        "SG.short.short",
        "Mshort.abc.def",
        "postgres://localhost:5432/db",
        "https://example.com/path",
    ];
    for text in cases {
        assert_clean(text);
    }
}

#[test]
fn pem_blocks_are_redacted_whole() {
    let key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA0123456789abcdef\nProc-Type: 4,ENCRYPTED\nabcdefghijklmnopqrstuvwxyz012345\n-----END RSA PRIVATE KEY-----";
    let out = redact(&format!("before\n{key}\nafter"));
    assert_eq!(out, "before\n[REDACTED]\nafter");
    for kind in ["", "EC ", "OPENSSH ", "DSA ", "ED25519 ", "ENCRYPTED "] {
        let block =
            format!("-----BEGIN {kind}PRIVATE KEY-----\nQUJDRA==\n-----END {kind}PRIVATE KEY-----");
        assert_eq!(redact(&block), REDACTED, "{kind}");
    }
}

#[test]
fn pgp_private_key_block_is_redacted() {
    let block = "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF0abcdefghijkl\n=abcd\n-----END PGP PRIVATE KEY BLOCK-----";
    assert_eq!(redact(block), REDACTED);
    assert_clean(
        "-----BEGIN PGP PUBLIC KEY BLOCK-----\nmQINBF\n-----END PGP PUBLIC KEY BLOCK-----",
    );
}

#[test]
fn truncated_private_key_body_is_redacted() {
    let text = "$ cat id_rsa\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\nAAAAAAABAAABlwAAAAdzc2gtcn\n\n... [output truncated]";
    let out = redact(text);
    assert!(!out.contains("b3BlbnNzaC1rZXkt"), "{out}");
    assert!(out.starts_with("$ cat id_rsa\n[REDACTED]"), "{out}");
    assert!(out.ends_with("... [output truncated]"), "{out}");
}

#[test]
fn code_mentioning_pem_headers_is_not_eaten() {
    let code = "if line == \"-----BEGIN RSA PRIVATE KEY-----\" {\n    return parse(rest);\n}";
    let out = redact(code);
    assert!(out.contains("return parse(rest);"), "{out}");
}

#[test]
fn jwt_is_redacted() {
    let jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
    assert_redacted(&format!("token={jwt}"), jwt);
    assert_clean("eyJ.a.b and eyJhbGciOiJIUzI1NiJ9.e30.x");
}

#[test]
fn contextual_assignments_keep_the_key_visible() {
    assert_eq!(
        redact("api_key=abcdefghijklmnopqrstuvwxyz"),
        "api_key=[REDACTED]"
    );
    assert_eq!(
        redact(r#"{"password": "hunter2hunter2"}"#),
        r#"{"password": "[REDACTED]"}"#
    );
    assert_eq!(
        redact("client-secret: 'abcdefghij'"),
        "client-secret: '[REDACTED]'"
    );
    assert_eq!(
        redact("ACCESS_TOKEN: abcdefghijklmnopqrstuvwxyz more"),
        "ACCESS_TOKEN: [REDACTED] more"
    );
    assert_eq!(
        redact("db_password = `correct horse battery`"),
        "db_password = `[REDACTED]`"
    );
}

#[test]
fn contextual_assignments_ignore_code_and_short_values() {
    assert_clean("let password = get_pw();");
    assert_clean("password: String,");
    assert_clean("api_key = \"short\"");
    assert_clean("fn check_password(input: &str) -> bool");
}

#[test]
fn telegram_tokens_are_found_bare_and_in_api_urls() {
    assert_redacted(
        "bot 123456789:AAHfakeTokenValueExample0123456789abc",
        "123456789:AAHfakeTokenValueExample0123456789abc",
    );
    assert_eq!(
        redact(
            "GET https://api.telegram.org/bot123456789:AAHfakeTokenValueExample0123456789abc/getMe"
        ),
        "GET https://api.telegram.org/bot[REDACTED]/getMe"
    );
    assert_clean("12:34:56 std::mem 1234:short 99999:AAshort");
}

#[test]
fn already_redacted_text_stays_borrowed() {
    assert_clean(r#"{"password": "[REDACTED]"}"#);
    assert_clean("api_key=[REDACTED]");
}

#[test]
fn authorization_header_keeps_the_scheme() {
    assert_eq!(
        redact("Authorization: Bearer abcdefghijklmnopqrstuvwxyz.0123"),
        "Authorization: Bearer [REDACTED]"
    );
    assert_eq!(
        redact("-H 'authorization: basic dXNlcjpwYXNzd29yZDEyMw=='"),
        "-H 'authorization: basic [REDACTED]'"
    );
    assert_clean("Authorization: Bearer $TOKEN");
    assert_clean("Authorization: Bearer <your token>");
}

#[test]
fn azure_account_key_keeps_the_name() {
    let key = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ+/==";
    assert_eq!(
        redact(&format!("DefaultEndpointsProtocol=https;AccountKey={key};")),
        "DefaultEndpointsProtocol=https;AccountKey=[REDACTED];"
    );
}

#[test]
fn env_style_assignments_redact_the_value() {
    assert_eq!(
        redact("export GITHUB_TOKEN=abcdefghijklmnopqrstuvwxyz"),
        "export GITHUB_TOKEN=[REDACTED]"
    );
    assert_eq!(
        redact("MY_SERVICE_SECRET=\"abcdefghijklmnopqrstuvwxyz\""),
        "MY_SERVICE_SECRET=\"[REDACTED]\""
    );
    assert_clean("MAX_TOKENS=4096");
    assert_clean("let token = self.next_token_from_the_lexer();");
}

#[test]
fn url_credentials_redact_the_password_only() {
    assert_eq!(
        redact("DATABASE_URL_X postgres://app:s3cretpass@db.internal:5432/app"),
        "DATABASE_URL_X postgres://app:[REDACTED]@db.internal:5432/app"
    );
    for scheme in [
        "postgresql",
        "mysql",
        "mongodb+srv",
        "redis",
        "amqps",
        "mssql",
        "clickhouse",
    ] {
        let out = redact(&format!("{scheme}://user:longpassword@host/db"));
        assert_eq!(out, format!("{scheme}://user:[REDACTED]@host/db"));
    }
    assert_clean("mysql://user:x@host/db");
    assert_clean("ssh://git@github.com:22/org/repo.git");
}

#[test]
fn registered_values_are_redacted_in_every_form() {
    let secret = "my-very-secret value/42";
    let mut redactor = Redactor::new();
    redactor.add_secret(secret);
    let bytes = secret.as_bytes();
    let forms = [
        secret.to_string(),
        STANDARD.encode(bytes),
        STANDARD_NO_PAD.encode(bytes),
        URL_SAFE.encode(bytes),
        URL_SAFE_NO_PAD.encode(bytes),
        hex_encode(bytes),
        hex_encode(bytes).to_ascii_uppercase(),
        "my-very-secret+value%2F42".to_string(),
        secret.chars().rev().collect(),
    ];
    for form in forms {
        let out = redactor.redact(&format!("output: {form}\n")).into_owned();
        assert_eq!(out, "output: [REDACTED]\n", "form {form:?}");
    }
}

/// A key inside a longer text that is encoded whole — `tr '\0' '\n' < /proc/…/environ |
/// base64` — starts at any of the three places in a base64 group; each is found, and no
/// character that is the key's alone is left.
#[test]
fn a_registered_value_inside_a_longer_encoded_text_is_found_at_every_alignment() {
    let key = "sk-live-AbCdEfGhIjKlMnOpQrStUv0123456789";
    let mut redactor = Redactor::new();
    redactor.add_secret(key);
    for prefix in ["", "A", "AB", "ODEK_API_KEY=", "PATH=/bin\0ODEK_API_KEY="] {
        let plain = format!("{prefix}{key}\nHOME=/root\n");
        for engine in [&STANDARD, &URL_SAFE, &STANDARD_NO_PAD] {
            let encoded = engine.encode(plain.as_bytes());
            let out = redactor.redact(&encoded).into_owned();
            assert!(out.contains(REDACTED), "{prefix:?}: {encoded} → {out}");
            // Of the characters that hold the key's bits, at most the two that mix its first
            // and last bits with the bytes around it are left.
            let key_chars = (key.len() * 8).div_ceil(6);
            assert!(
                out.len() <= encoded.len() - (key_chars - 2) + REDACTED.len(),
                "{prefix:?}: {out}"
            );
        }
    }
    let percent: String = key.bytes().map(|b| format!("%{b:02X}")).collect();
    assert_eq!(
        redactor.redact(&format!("q={percent}&x=1")),
        "q=[REDACTED]&x=1"
    );
    assert_eq!(
        redactor.redact(&format!("q={}&x=1", percent.to_ascii_lowercase())),
        "q=[REDACTED]&x=1"
    );
}

/// Hex the way dump tools print it — `xxd -p` lines of 60 digits, bytes between spaces
/// (`od -An -tx1`), `aa:bb`, `0x61, 0x62`, `\x61\x62`, upper case — is found too, separators
/// and line breaks included in what is replaced, at any byte offset in the dump.
#[test]
fn a_registered_values_hex_is_found_across_separators_and_line_breaks() {
    let key = "sk-live-AbCdEfGhIjKlMnOpQrStUv0123456789";
    let mut redactor = Redactor::new();
    redactor.add_secret(key);
    let hex: Vec<String> = format!("ODEK_API_KEY={key}\nHOME=/")
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect();
    let plain = hex.concat();
    let key_hex: String = key.bytes().map(|b| format!("{b:02x}")).collect();
    let xxd_p: String = plain
        .as_bytes()
        .chunks(60)
        .map(|line| format!("{}\n", std::str::from_utf8(line).expect("ascii")))
        .collect();
    let spaced = hex.join(" ");
    let od: String = hex
        .chunks(16)
        .map(|l| format!(" {}\n", l.join(" ")))
        .collect();
    let colons = hex.join(":").to_ascii_uppercase();
    let c_array = hex
        .iter()
        .map(|h| format!("0x{h}"))
        .collect::<Vec<_>>()
        .join(", ");
    let escaped: String = hex.iter().map(|h| format!("\\x{h}")).collect();
    for dump in [xxd_p, spaced, od, colons, c_array, escaped] {
        let out = redactor.redact(&dump).into_owned();
        assert!(out.contains(REDACTED), "{dump} → {out}");
        let digits: String = out
            .chars()
            .filter(char::is_ascii_hexdigit)
            .collect::<String>()
            .to_ascii_lowercase();
        assert!(
            !digits.contains(&key_hex[4..key_hex.len() - 4]),
            "{dump} → {out}"
        );
        assert!(out.len() < dump.len() / 2, "{dump} → {out}");
    }
    // Ordinary hex (a digest, a MAC address, a UUID) is left alone.
    for clean in [
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "link/ether 52:54:00:12:34:56 brd ff:ff:ff:ff:ff:ff",
        "id 123e4567-e89b-12d3-a456-426614174000",
    ] {
        assert_eq!(redactor.redact(clean), clean);
    }
}

#[test]
fn many_registered_values_are_all_found() {
    // 40 values, 680 forms: more than the SIMD searcher takes, so the automaton serves.
    let values: Vec<String> = (0..40)
        .map(|i| format!("registered-value-{i:03}-xyz"))
        .collect();
    let mut redactor = Redactor::new();
    redactor.add_secrets_from_env(
        values
            .iter()
            .enumerate()
            .map(|(i, value)| (format!("SECRET_{i}"), value.clone())),
    );
    for value in &values {
        let hex = hex_encode(value.as_bytes());
        let out = redactor
            .redact(&format!("a {value} b {hex} c"))
            .into_owned();
        assert_eq!(out, "a [REDACTED] b [REDACTED] c");
    }
}

#[test]
fn short_values_are_not_registered() {
    let mut redactor = Redactor::new();
    redactor.add_secret("short");
    redactor.add_secret("  1234567 \n");
    assert_eq!(redactor.known_form_count(), 0);
    assert_eq!(redactor.redact("short 1234567"), "short 1234567");
    redactor.add_secret(" 12345678\n");
    assert_eq!(redactor.redact("pin 12345678."), "pin [REDACTED].");
}

#[test]
fn env_values_are_registered_by_name() {
    let mut redactor = Redactor::new();
    redactor.add_secrets_from_env([
        ("MY_API_TOKEN".to_string(), "tok-value-123456".to_string()),
        ("HOME".to_string(), "/home/someone".to_string()),
        ("MAX_TOKENS".to_string(), "4096000000".to_string()),
    ]);
    assert_eq!(
        redactor.redact("a tok-value-123456 b /home/someone 4096000000"),
        "a [REDACTED] b /home/someone 4096000000"
    );
}

#[test]
fn secret_env_names() {
    for name in [
        "API_KEY",
        "OPENAI_API_KEY",
        "GITHUB_TOKEN",
        "aws-secret-access-key",
        "DB_PASSWORD",
        "MYSQL_PASSWD",
        "FTP_PASS",
        "GOOGLE_CREDENTIALS",
        "AZURE_CREDENTIAL",
        "SSH_PRIVATEKEY",
        "S3_ACCESSKEY",
        "S3_SECRETKEY",
        "OPENAIAPIKEY",
        "MYTOKEN",
        "APPSECRET",
        "ROOTPASSWORD",
        "GCPCREDENTIALS",
        "TOKEN",
    ] {
        assert!(is_secret_env_name(name), "{name}");
    }
    for name in [
        "HOME",
        "PATH",
        "MAX_TOKENS",
        "MONKEY",
        "KEYBOARD",
        "TOKENBUCKET",
        "GIT_AUTHOR_NAME",
        "COMPASS",
        "BYPASS",
        "PASSAGE_DIR",
    ] {
        assert!(!is_secret_env_name(name), "{name}");
    }
}

#[test]
fn unicode_text_is_untouched() {
    let text = "héllo wörld — 日本語のテキスト 🚀 Ünïcödé ключ=значение";
    assert_clean(text);
    let mut redactor = Redactor::new();
    redactor.add_secret("日本語のテキスト");
    assert_eq!(
        redactor.redact(text),
        "héllo wörld — [REDACTED] 🚀 Ünïcödé ключ=значение"
    );
}

#[test]
fn clean_text_is_borrowed() {
    let mut redactor = Redactor::new();
    redactor.add_secret("registered-secret-value");
    let text = "fn main() {\n    println!(\"hello\");\n}\n";
    assert!(matches!(redactor.redact(text), Cow::Borrowed(_)));
    assert!(matches!(redactor.redact(""), Cow::Borrowed(_)));
}

#[test]
fn source_like_text_is_clean() {
    let snippet = "/// Handles request 7 (see https://example.com/docs/7).\n\
        pub fn handle_7(ctx: &mut Context, input: &str) -> Result<Output, Error> {\n\
        let value = ctx.lookup(\"key_7\").unwrap_or_default();\n\
        let password_hint = Some(\"Enter the password\");\n\
        tracing::debug!(target: \"odek::tools\", \"value={value} at 12:34:56\");\n\
        Ok(Output::new(value, MAX_TOKENS, \"Ünïcödé – 日本語\"))\n}\n";
    let mut redactor = Redactor::new();
    redactor.add_secret("registered-known-secret-value");
    assert!(matches!(redactor.redact(snippet), Cow::Borrowed(_)));
}

#[test]
fn redact_json_walks_nested_values_but_not_keys() {
    let mut redactor = Redactor::new();
    redactor.add_secret("super-secret-value");
    let mut value = serde_json::json!({
        "super-secret-value": "key stays",
        "list": ["a", "super-secret-value", {"deep": ["x super-secret-value y"]}],
        "token": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "n": 5,
        "b": true,
        "nothing": null,
    });
    redactor.redact_json(&mut value);
    let expected = serde_json::json!({
        "super-secret-value": "key stays",
        "list": ["a", "[REDACTED]", {"deep": ["x [REDACTED] y"]}],
        "token": "[REDACTED]",
        "n": 5,
        "b": true,
        "nothing": null,
    });
    assert_eq!(value, expected);
}

#[test]
fn debug_output_hides_values() {
    let mut redactor = Redactor::new();
    redactor.add_secret("super-secret-value");
    let printed = format!("{redactor:?}");
    assert!(!printed.contains("super-secret-value"));
}

proptest::proptest! {
    #[test]
    fn redaction_never_panics_and_removes_registered_values(
        prefix in "\\PC{0,40}", suffix in "\\PC{0,40}", secret in "[a-zA-Z0-9]{8,24}"
    ) {
        proptest::prop_assume!(secret != "REDACTED");
        let mut redactor = Redactor::new();
        redactor.add_secret(&secret);
        let out = redactor.redact(&format!("{prefix}{secret}{suffix}")).into_owned();
        proptest::prop_assert!(!out.contains(secret.as_str()));
    }
}

// ---- The rule table --------------------------------------------------------------------

#[test]
fn every_rule_compiles_and_has_lower_case_keywords() {
    for rule in RULES {
        if let Finder::Regex { regex, .. } = &rule.finder {
            assert!(
                regex::Regex::new(regex).is_ok(),
                "{} fails to compile",
                rule.name
            );
        }
        for keyword in rule.keywords {
            assert!(
                !keyword.is_empty() && keyword.is_ascii() && *keyword == keyword.to_lowercase(),
                "{}: keyword {keyword:?} must be lower-case ASCII",
                rule.name
            );
        }
    }
    assert_eq!(RULES.len(), 163, "the docs give the number of rules");
    let mut names: Vec<&str> = RULES.iter().map(|rule| rule.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), RULES.len(), "rule names are unique");
}

/// Every pinned gitleaks rule is covered by a rule here or left out with a reason, never
/// both; every covered one has a sample, and the sample is found by a rule that claims it
/// (not only by accident, by some broader rule).
#[test]
fn every_pinned_gitleaks_rule_is_covered_or_left_out_for_a_reason() {
    assert_eq!(GITLEAKS_RULE_IDS.len(), 218, "rules at the pinned commit");
    let covered: Vec<&str> = RULES
        .iter()
        .flat_map(|rule| rule.covers.iter().copied())
        .collect();
    let mut problems = Vec::new();
    for id in GITLEAKS_RULE_IDS {
        let is_covered = covered.contains(id);
        let left_out = GITLEAKS_LEFT_OUT.iter().any(|(left, _)| left == id);
        if is_covered == left_out {
            problems.push(format!("{id}: covered {is_covered}, left out {left_out}"));
        }
        if is_covered && !formats::CASES.iter().any(|case| case.format == *id) {
            problems.push(format!("{id}: no sample in formats.rs"));
        }
    }
    for id in &covered {
        if !GITLEAKS_RULE_IDS.contains(id) {
            problems.push(format!("{id}: not a rule id at the pinned commit"));
        }
    }
    for case in formats::CASES {
        if case.format.starts_with("extra:") {
            continue;
        }
        let claimed = engine::matching_rules(case.text)
            .into_iter()
            .any(|index| RULES[index].covers.contains(&case.format));
        if !claimed {
            problems.push(format!(
                "{}: no rule that covers it matches {:?}",
                case.format, case.text
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let covered_count = GITLEAKS_RULE_IDS.len() - GITLEAKS_LEFT_OUT.len();
    assert_eq!(covered_count, 216);
}

#[test]
fn the_pinned_commit_is_named_in_the_docs() {
    assert!(include_str!("../mod.rs").contains(GITLEAKS_COMMIT));
    assert!(include_str!("../../../docs/SESSIONS.md").contains(GITLEAKS_COMMIT));
}

#[test]
fn every_rule_finds_at_least_one_sample() {
    let mut matched = vec![false; RULES.len()];
    for case in formats::CASES {
        for index in engine::matching_rules(case.text) {
            matched[index] = true;
        }
    }
    let unmatched: Vec<&str> = RULES
        .iter()
        .zip(&matched)
        .filter(|(_, matched)| !**matched)
        .map(|(rule, _)| rule.name)
        .collect();
    assert!(
        unmatched.is_empty(),
        "rules without a sample: {unmatched:?}"
    );
}

/// A keyword-anchored rule searched from its keywords finds exactly what a whole-text
/// search finds: on every sample, on the clean corpus, and on a few tricky lines.
#[test]
fn keyword_anchored_rules_find_what_a_whole_text_search_finds() {
    let extra = [
        "x dd_api_key=0123456789abcdef0123456789abcdef and DATADOG_KEY=abcdefghijklmnopqrstuvwxyz0123456789abcd",
        "api_key=short\napi_key=abcdefghijklmnopqrstuvwxyz\n",
        "password_hint = 1 password=hunter2hunter password: \"s3cr3t!\"",
        "PASSWORD=a1\r\nPASSWORD=b2b2b2\r\n",
        "token TOKEN= TOKEN=abcdefghijklmnopqrstuvwxyz0123",
    ];
    let texts = formats::CASES
        .iter()
        .map(|case| case.text)
        .chain(CLEAN_CORPUS.iter().map(|(_, text)| *text))
        .chain(extra);
    let mut differences = Vec::new();
    for text in texts {
        for (index, rule) in RULES.iter().enumerate() {
            let Finder::Regex {
                at_keyword: true, ..
            } = rule.finder
            else {
                continue;
            };
            let (anchored, whole) = engine::anchored_and_whole_spans(index, text);
            if anchored != whole {
                differences.push(format!(
                    "{}: {anchored:?} from keywords, {whole:?} whole, in {text:?}",
                    rule.name
                ));
            }
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

// ---- One sample per format ---------------------------------------------------------------

#[test]
fn every_format_sample_is_redacted() {
    let mut failures = Vec::new();
    for case in formats::CASES {
        assert!(case.text.contains(case.secret), "{}: bad row", case.format);
        let out = redact(case.text);
        if out.contains(case.secret) || !out.contains(REDACTED) {
            failures.push(format!("{}: secret survived in {out:?}", case.format));
        } else if !case.keep.is_empty() && !out.contains(case.keep) {
            failures.push(format!("{}: {:?} lost in {out:?}", case.format, case.keep));
        }
        // The secret alone, and inside JSON as a tool result or a session would hold it.
        let alone = redact(case.secret);
        if case.keep.is_empty() && alone.contains(case.secret) {
            failures.push(format!("{}: bare value survived", case.format));
        }
        let json = serde_json::json!({"output": case.text}).to_string();
        if redact(&json).contains(case.secret) {
            failures.push(format!("{}: survived inside JSON", case.format));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_five_formats_of_the_issue_are_redacted_with_their_keys_kept() {
    let cases = [
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKY",
            "aws_secret_access_key = [REDACTED]",
        ),
        (
            "[profile ci]\naws_secret_access_key=Zq3+fK9/2mWcPbT7uVx1LrE0yHnD8aGsJkQ4iO6p\n",
            "[profile ci]\naws_secret_access_key=[REDACTED]\n",
        ),
        (
            "SLACK_URL=https://hooks.slack.com/services/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",
            "SLACK_URL=https://hooks.slack.com/services/[REDACTED]",
        ),
        (
            "doctl auth init -t dop_v1_0f8c2b7e4a1d9e6c3b5a8f7d2e1c4b9a6d3f8e2c7b1a5d4e9f6c3a8b2d7e1f4a",
            "doctl auth init -t [REDACTED]",
        ),
        (
            "X-Shopify-Access-Token: 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",
            "X-Shopify-Access-Token: [REDACTED]",
        ),
        ("password=hunter2hunter", "password=[REDACTED]"),
        ("password: \"s3cr3t!\"", "password: \"[REDACTED]\""),
    ];
    for (text, expected) in cases {
        assert_eq!(redact(text), expected, "{text}");
    }
}

// ---- The clean corpus ---------------------------------------------------------------------

/// Everyday tool output that must come back byte for byte (and without a copy).
macro_rules! clean_corpus {
    ($($name:literal),* $(,)?) => {
        &[$(($name, include_str!(concat!("../../../tests/fixtures/redaction/clean/", $name)))),*]
    };
}

const CLEAN_CORPUS: &[(&str, &str)] = clean_corpus!(
    "01-git-log.txt",
    "02-git-log-oneline.txt",
    "03-git-show-stat.txt",
    "04-sha256sum.txt",
    "05-sha1-md5.txt",
    "06-cargo-lock.txt",
    "07-uuids.txt",
    "08-png-data-uri.txt",
    "09-css-background.txt",
    "10-ls-l.txt",
    "11-docker-ps.txt",
    "12-docker-images.txt",
    "13-package-lock.txt",
    "14-yarn-lock.txt",
    "15-go-sum.txt",
    "16-go-mod.txt",
    "17-rust-code.txt",
    "18-python-code.txt",
    "19-js-code.txt",
    "20-json-config.txt",
    "21-urls-with-query.txt",
    "22-timestamps.txt",
    "23-ip-addr.txt",
    "24-ssh-public-key.txt",
    "25-certificate.txt",
    "26-pgp-public-key.txt",
    "27-env-example.txt",
    "28-docker-compose.txt",
    "29-github-actions.txt",
    "30-kubectl.txt",
    "31-configmap.txt",
    "32-aws-cli.txt",
    "33-cargo-build.txt",
    "34-cargo-test.txt",
    "35-python-traceback.txt",
    "36-http-response.txt",
    "37-pip-freeze-hashes.txt",
    "38-sql-schema.txt",
    "39-nginx-conf.txt",
    "40-terraform-plan.txt",
    "41-ps-df.txt",
    "42-openssl-x509.txt",
    "43-minified-js.txt",
    "44-markdown-docs.txt",
    "45-base64-blob.txt",
);

#[test]
fn the_clean_corpus_comes_back_unchanged() {
    assert!(CLEAN_CORPUS.len() >= 40);
    let mut changed = Vec::new();
    for (name, text) in CLEAN_CORPUS {
        let out = Redactor::new().redact(text);
        if !matches!(out, Cow::Borrowed(_)) {
            changed.push(format!("{name}:\n{out}"));
        }
        // Inside a JSON string too, as a session file holds it.
        let json = serde_json::to_string(text).expect("json");
        if Redactor::new().redact(&json) != json {
            changed.push(format!("{name} (as JSON) changed"));
        }
    }
    assert!(changed.is_empty(), "{}", changed.join("\n\n"));
}

#[test]
fn every_clean_fixture_is_in_the_corpus() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/redaction/clean"
    );
    let mut on_disk: Vec<String> = std::fs::read_dir(dir)
        .expect("clean corpus directory")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    on_disk.sort();
    let listed: Vec<String> = CLEAN_CORPUS
        .iter()
        .map(|(name, _)| name.to_string())
        .collect();
    assert_eq!(on_disk, listed);
}

// ---- Passwords ------------------------------------------------------------------------------

#[test]
fn the_password_check_reads_the_groups_it_expects() {
    let rule = RULES
        .iter()
        .find(|rule| rule.name == "password_assignment")
        .expect("rule");
    let Finder::Regex { regex, .. } = &rule.finder else {
        panic!("a regex rule");
    };
    let compiled = regex::Regex::new(regex).expect("compiles");
    let names: Vec<Option<&str>> = compiled.capture_names().take(4).collect();
    assert_eq!(names, [None, Some("key"), Some("suffix"), Some("op")]);
}

#[test]
fn password_values_are_redacted_however_short() {
    let cases = [
        ("password=hunter2hunter", "password=[REDACTED]"),
        ("password: \"s3cr3t!\"", "password: \"[REDACTED]\""),
        ("PASSWORD='p4ss'", "PASSWORD='[REDACTED]'"),
        ("DB_PASSWORD=supersecret", "DB_PASSWORD=[REDACTED]"),
        (
            "MYSQL_ROOT_PASSWORD=Tr0ub4dor",
            "MYSQL_ROOT_PASSWORD=[REDACTED]",
        ),
        ("export PGPASSWORD=pa55word", "export PGPASSWORD=[REDACTED]"),
        (
            "{\"password\":\"correct horse\"}",
            "{\"password\":\"[REDACTED]\"}",
        ),
        ("  password: hunter22\n", "  password: [REDACTED]\n"),
        ("db.password = s3cret!", "db.password = [REDACTED]"),
        ("passwd=abc123", "passwd=[REDACTED]"),
        ("SMTP_PASS=mail-2024", "SMTP_PASS=[REDACTED]"),
        ("smtp.pass: \"mailpw\"", "smtp.pass: \"[REDACTED]\""),
        (
            "Server=db;Uid=sa;Pwd=Str0ng!Pass;",
            "Server=db;Uid=sa;Pwd=[REDACTED];",
        ),
        (
            "key_passphrase = 'open sesame'",
            "key_passphrase = '[REDACTED]'",
        ),
        (
            "confirm_password: \"hunter22\"",
            "confirm_password: \"[REDACTED]\"",
        ),
        ("rootPassword: \"admin123\"", "rootPassword: \"[REDACTED]\""),
        (
            "mysql --password=Sql!2024 db",
            "mysql --password=[REDACTED] db",
        ),
        (
            "mysql --password Sql!2024 db",
            "mysql --password [REDACTED] db",
        ),
        (
            "https://x.example/login?user=bob&password=pw2024&next=/",
            "https://x.example/login?user=bob&password=[REDACTED]&next=/",
        ),
        (
            "connect(host, password=\"hunter22\")",
            "connect(host, password=\"[REDACTED]\")",
        ),
        ("$db_password = 'P@ss';", "$db_password = '[REDACTED]';"),
        ("passcode: 482913", "passcode: [REDACTED]"),
    ];
    for (text, expected) in cases {
        assert_eq!(redact(text), expected, "{text}");
    }
}

#[test]
fn password_look_alikes_stay_readable() {
    let cases = [
        "let password_hint = Some(\"Enter the password\");",
        "password = get_password()",
        "password: ${DB_PASSWORD}",
        "password: \"${DB_PASSWORD}\"",
        "password=",
        "password=\n",
        "password=<your-password>",
        "password: \"<your-password>\"",
        "password=xxx",
        "password: \"xxxxxxxx\"",
        "password: '********'",
        "password=changeme",
        "ADMIN_PASSWORD=changeme",
        "password = password",
        "connect(user=user, password=password)",
        "password: String,",
        "pub password: Option<String>,",
        "fn set_password(&mut self, password: &str)",
        "password = self.password",
        "password = config.db.password;",
        "password = os.environ[\"PGPASSWORD\"]",
        "password = Secret::new(raw)",
        "password: None",
        "password=true",
        "password_file = /run/secrets/db",
        "passwordFile: \"/etc/app/pw\"",
        "PASSWORD_MIN_LENGTH=12",
        "password_reset_url: https://example.com/reset",
        "\"password\": \"Password\"",
        "label: password: \"Enter your password\"",
        "the password is hunter22",
        "Password: ",
        "bypass=1234",
        "OLDPWD=/home/dana/src",
        "PWD=/home/dana",
        "pass: 12 fail: 0",
        "passes: 1024",
        "passthrough=enabled",
        "password: \"abc\"",
        "password: !vault |",
        "password=%(db_password)s",
        "password: \"{{ .Values.password }}\"",
        "password = $DB_PASSWORD",
        "password: \"[REDACTED]\"",
    ];
    let changed = changed_by_redaction(&cases);
    assert!(changed.is_empty(), "{changed}");
}

// ---- Other contextual forms -------------------------------------------------------------

#[test]
fn assignments_ignore_references_and_code() {
    let cases = [
        "api_key = os.environ.get(\"API_KEY\")",
        "api_key: ${OPENAI_API_KEY}",
        "\"api_key\": \"<your api key>\"",
        "access_token = response.json()[\"access_token\"]",
        "access_token = self.session.fetch_access_token_from_cache()",
        "client_secret: \"{{ secrets.client_secret }}\"",
        "export GITHUB_TOKEN=$(gh auth token --hostname github.com)",
        "export API_TOKEN=${{ secrets.API_TOKEN }}",
        "private_key = load_private_key_from_path(path)",
        "postgres://app:${DB_PASSWORD}@db:5432/app",
        "https://user:<password>@example.com/",
        "curl -u admin:$ADMIN_PASSWORD https://ci.example.com",
        "curl -u deploy:changeme https://ci.example.com",
        "curl -H \"Authorization: Bearer $TOKEN\" https://api.example.com",
    ];
    let changed = changed_by_redaction(&cases);
    assert!(changed.is_empty(), "{changed}");
}

#[test]
fn kubernetes_secret_data_values_are_redacted() {
    let manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  LOG_LEVEL: debug\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: Opaque\ndata:\n  username: YWRtaW4=\n  password: \"cDRzc3cwcmQxMjM0NTY=\"\n  tls.key: |\n    LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0t\n    TUlJRXZRSUJBREFOQmdrcWhraUc5dzBCQVFF\nstringData:\n  extra: plain-text-value\n";
    let out = redact(manifest);
    for secret in [
        "YWRtaW4=",
        "cDRzc3cwcmQxMjM0NTY=",
        "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0t",
        "TUlJRXZRSUJBREFOQmdrcWhraUc5dzBCQVFF",
        "plain-text-value",
    ] {
        assert!(!out.contains(secret), "{secret} survived:\n{out}");
    }
    assert!(
        out.contains("LOG_LEVEL: debug"),
        "the ConfigMap is untouched:\n{out}"
    );
    assert!(out.contains("  username: [REDACTED]\n"), "{out}");
    assert!(out.contains("  password: \"[REDACTED]\"\n"), "{out}");
    assert!(
        out.contains("  tls.key: |\n    [REDACTED]\n    [REDACTED]\n"),
        "{out}"
    );

    let json = r#"{"apiVersion":"v1","kind":"Secret","data":{"password":"cDRzc3cwcmQ=","user":"YWRtaW4="},"type":"Opaque"}"#;
    assert_eq!(
        redact(json),
        r#"{"apiVersion":"v1","kind":"Secret","data":{"password":"[REDACTED]","user":"[REDACTED]"},"type":"Opaque"}"#
    );
}

// ---- The keyword pass ----------------------------------------------------------------------

#[test]
fn the_keyword_pass_wakes_few_rules_on_source_text() {
    let snippet = "/// Handles request 7 (see https://example.com/docs/7).\n\
        pub fn handle_7(ctx: &mut Context, input: &str) -> Result<Output, Error> {\n\
        let value = ctx.lookup(\"key_7\").unwrap_or_default();\n\
        let password_hint = Some(\"Enter the password\");\n\
        Ok(Output::new(value, MAX_TOKENS, \"Ünïcödé – 日本語\"))\n}\n";
    let woken = engine::woken_rule_names(snippet);
    let always: Vec<&str> = RULES
        .iter()
        .filter(|rule| rule.keywords.is_empty())
        .map(|rule| rule.name)
        .collect();
    let by_keyword: Vec<&&str> = woken.iter().filter(|name| !always.contains(name)).collect();
    assert_eq!(
        by_keyword,
        [
            &"url_credentials",
            &"password_assignment",
            &"env_assignment"
        ],
        "woken: {woken:?}"
    );
    assert!(always.len() <= 5, "rules without keywords: {always:?}");
}

#[test]
fn keywords_match_in_any_case_and_inside_other_keywords() {
    // `DD_API_KEY` wakes the Datadog rule, and `API_KEY` inside it the assignment rule.
    let woken = engine::woken_rule_names("DD_API_KEY=x");
    assert!(woken.contains(&"datadog"), "{woken:?}");
    assert!(woken.contains(&"secret_assignment"), "{woken:?}");
    assert_eq!(
        redact("DD_API_KEY=0123456789abcdef0123456789abcdef"),
        "DD_API_KEY=[REDACTED]"
    );
    assert_eq!(
        redact(
            "DOP_V1_ is not a token, dop_v1_0f8c2b7e4a1d9e6c3b5a8f7d2e1c4b9a6d3f8e2c7b1a5d4e9f6c3a8b2d7e1f4a is"
        ),
        "DOP_V1_ is not a token, [REDACTED] is"
    );
}

#[test]
fn overlapping_matches_become_one_marker() {
    // The URL rule and the GitHub rule both match the token; one marker replaces it.
    assert_eq!(
        redact("https://x-access:ghp_2OkDCJ23VmCwykTp4EilsS2aQnjUHc6LZQ9S@github.com/a/b.git"),
        "https://x-access:[REDACTED]@github.com/a/b.git"
    );
}

/// Streams `text` in pieces of `size` characters and returns what went out.
fn streamed(redactor: &std::sync::Arc<Redactor>, text: &str, size: usize, hold: usize) -> String {
    let mut stream = super::stream::StreamRedactor::with_hold(redactor.clone(), hold);
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    for piece in chars.chunks(size) {
        out.push_str(&stream.push(&piece.iter().collect::<String>()));
    }
    out + &stream.finish()
}

#[test]
fn every_format_streamed_in_pieces_comes_out_as_the_whole_text_redacted() {
    // HOLD is the smallest hold back (in steps of 16 bytes) for which this holds; with less,
    // a PEM header or the `FlyV1 ` prefix goes out before it is known to begin a secret.
    let redactor = std::sync::Arc::new(Redactor::new());
    let filler = "Some words the model wrote before it. ".repeat(12);
    let fixture = include_str!("../../../tests/fixtures/redaction/leaky-notes.txt");
    let texts = formats::CASES
        .iter()
        .map(|case| format!("{filler}{}\nand a line after it.", case.text))
        .chain([fixture.to_string()]);
    for text in texts {
        for size in [1, 3, 7] {
            let out = streamed(&redactor, &text, size, super::stream::HOLD);
            assert_eq!(out, redactor.redact(&text), "pieces of {size}");
        }
    }
}

/// Issue 60, H4: a registered value in base32 and base32hex (padded, as `base32` and `basenc
/// --base32hex` print it), inside a longer encoded text at each of the five alignments, and
/// base64 or base32 wrapped at 76 columns with the value across a line break.
#[test]
fn a_registered_value_is_found_in_base32_and_across_wrapped_lines() {
    let key = "sk-live-AbCdEfGhIjKlMnOpQrStUv0123456789";
    let mut redactor = Redactor::new();
    redactor.add_secret(key);
    for alphabet in [super::base32::STANDARD, super::base32::HEX] {
        let whole = super::base32::encode(key.as_bytes(), alphabet, true);
        assert_eq!(redactor.redact(&format!("{whole}\n")), "[REDACTED]\n");
        for prefix in ["", "A", "AB", "ABC", "ABCD", "ODEK_API_KEY="] {
            let plain = format!("{prefix}{key}\nHOME=/root\n");
            let encoded = super::base32::encode(plain.as_bytes(), alphabet, true);
            let out = redactor.redact(&encoded).into_owned();
            let key_chars = (key.len() * 8) / 5;
            assert!(
                out.contains(REDACTED)
                    && out.len() <= encoded.len() - (key_chars - 2) + REDACTED.len(),
                "{prefix:?}: {encoded} → {out}"
            );
        }
    }
    let plain = format!("PATH=/usr/local/bin:/usr/bin:/bin\nODEK_API_KEY={key}\nHOME=/root\n");
    let wrap = |encoded: String| -> String {
        encoded
            .as_bytes()
            .chunks(76)
            .map(|line| format!("{}\n", std::str::from_utf8(line).expect("ascii")))
            .collect()
    };
    for encoded in [
        wrap(STANDARD.encode(plain.as_bytes())),
        wrap(super::base32::encode(
            plain.as_bytes(),
            super::base32::STANDARD,
            true,
        )),
    ] {
        assert!(encoded.lines().count() >= 2, "{encoded}");
        let out = redactor.redact(&encoded).into_owned();
        assert!(out.contains(REDACTED), "{encoded} → {out}");
        let joined = out.replace('\n', "");
        let core = super::base32::core(key.as_bytes(), 2, super::base32::STANDARD);
        assert!(!joined.contains(&core[4..20]), "{out}");
        let core = base64_core_of(key, &plain);
        assert!(!joined.contains(&core), "{out}");
    }
}

/// Twelve characters from the middle of the key's part of `plain`'s base64.
fn base64_core_of(key: &str, plain: &str) -> String {
    let start = plain.find(key).expect("key");
    let encoded = STANDARD.encode(plain.as_bytes());
    let first = (8 * start).div_ceil(6) + 4;
    encoded[first..first + 12].to_string()
}

/// A registered value's base32 wrapped across lines, streamed a few characters at a time,
/// comes out as the whole text redacted: the line before the break is held back until the
/// next one shows whether it continues a form.
#[test]
fn a_wrapped_encoding_streamed_in_pieces_comes_out_redacted() {
    let key = "sk-live-AbCdEfGhIjKlMnOpQrStUv0123456789";
    let mut redactor = Redactor::new();
    redactor.add_secret(key);
    let redactor = std::sync::Arc::new(redactor);
    let plain = format!("PATH=/usr/local/bin:/usr/bin:/bin\nODEK_API_KEY={key}\nHOME=/root\n");
    let encoded = super::base32::encode(plain.as_bytes(), super::base32::STANDARD, true);
    let wrapped: String = encoded
        .as_bytes()
        .chunks(76)
        .map(|line| format!("{}\n", std::str::from_utf8(line).expect("ascii")))
        .collect();
    let text = format!("Here it is:\n{wrapped}and that is all.");
    assert!(redactor.redact(&text).contains(REDACTED));
    for size in [1, 5, 13] {
        let out = streamed(&redactor, &text, size, super::stream::HOLD);
        assert_eq!(out, redactor.redact(&text), "pieces of {size}");
    }
}
