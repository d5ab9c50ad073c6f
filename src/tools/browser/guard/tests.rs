use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::tools::web::WebSettings;

fn settings(
    allow_local: AllowLocal,
    private_hosts: &[&str],
    allow_hosts: &[&str],
) -> BrowserSettings {
    BrowserSettings {
        executable: "chromium".into(),
        allow_local,
        web: Arc::new(WebSettings {
            allow_hosts: allow_hosts.iter().map(|h| h.to_string()).collect(),
            allow_private_hosts: private_hosts.iter().map(|h| h.to_string()).collect(),
            ..WebSettings::default()
        }),
        timeout: Duration::from_secs(5),
        images: false,
    }
}

async fn allowed(url: &str, s: &BrowserSettings) -> Result<(), ToolError> {
    verdict(&Url::parse(url).expect("url"), s).await
}

#[tokio::test]
async fn the_verdict_table() {
    use AllowLocal::{Loopback, None, Private};
    // (url, allow_local, web.allow_private_hosts, allowed?)
    let table: &[(&str, AllowLocal, &[&str], bool)] = &[
        ("http://127.0.0.1:8000/", None, &[], false),
        ("http://127.0.0.1:8000/", Loopback, &[], true),
        ("http://127.0.0.1:8000/", Private, &[], true),
        ("http://127.0.0.1:8000/", None, &["127.0.0.1:8000"], true),
        ("http://127.0.0.1:8001/", None, &["127.0.0.1:8000"], false),
        ("http://[::1]:3000/", Loopback, &[], true),
        ("http://[::1]:3000/", None, &[], false),
        ("http://localhost:3000/", Loopback, &[], true),
        ("http://localhost:3000/", None, &[], false),
        ("http://localhost:3000/", None, &["localhost"], true),
        ("http://192.168.1.10/", Loopback, &[], false),
        ("http://192.168.1.10/", Private, &[], true),
        ("http://10.0.0.1/", Private, &[], true),
        ("http://[fd00::1]/", Private, &[], true),
        ("http://169.254.169.254/", Private, &[], false),
        ("http://169.254.169.254/", Loopback, &[], false),
        ("http://169.254.169.254/", None, &["169.254.169.254"], true),
        ("http://100.64.0.1/", Private, &[], false),
        ("http://0.0.0.0:8000/", Private, &[], false),
        ("http://224.0.0.1/", Private, &[], false),
        ("http://[::ffff:127.0.0.1]/", None, &[], false),
        ("http://[::ffff:127.0.0.1]/", Loopback, &[], true),
        ("http://93.184.216.34/", None, &[], true),
        ("https://[2606:4700::1111]/", None, &[], true),
    ];
    for &(url, allow_local, listed, expected) in table {
        let got = allowed(url, &settings(allow_local, listed, &[])).await;
        assert_eq!(
            got.is_ok(),
            expected,
            "{url} {allow_local:?} {listed:?}: {got:?}"
        );
        if let Err(e) = got {
            assert!(e.0.starts_with("browser: refused: "), "{e}");
            assert!(e.0.contains("browser.allow_local"), "{e}");
        }
    }
}

#[tokio::test]
async fn the_refusal_names_the_rule() {
    let s = settings(AllowLocal::Private, &[], &[]);
    let e = allowed("http://169.254.169.254/latest/meta-data/", &s)
        .await
        .expect_err("metadata");
    assert!(
        e.0.starts_with(
            "browser: refused: 169.254.169.254 is a link-local address (cloud metadata"
        ),
        "{e}"
    );
    let e = allowed("http://localhost:9/", &settings(AllowLocal::None, &[], &[]))
        .await
        .expect_err("localhost");
    assert!(e.0.contains("localhost resolves to "), "{e}");
    assert!(e.0.contains("a loopback address"), "{e}");
}

#[tokio::test]
async fn only_http_and_https_are_opened() {
    let s = settings(AllowLocal::Private, &["*"], &[]);
    for (url, scheme) in [
        ("file:///etc/passwd", "file"),
        ("chrome://settings", "chrome"),
        ("javascript:alert(1)", "javascript"),
        ("data:text/html,<b>x</b>", "data"),
        ("ftp://example.com/", "ftp"),
        ("ws://127.0.0.1:9/", "ws"),
    ] {
        let e = allowed(url, &s).await.expect_err(url);
        assert_eq!(
            e.0,
            format!("browser: {scheme}: URLs are not opened; only http and https"),
            "{url}"
        );
    }
}

#[test]
fn opening_a_host_asks_unless_allowed_or_local() {
    let s = settings(AllowLocal::Loopback, &[], &["docs.rs", "*.example.com"]);
    let asked = |url: &str, s: &BrowserSettings| classify_open(url, s).map(|c| c.scope);
    assert_eq!(
        asked("https://news.example.org/", &s),
        Some(Some("host:news.example.org".into()))
    );
    assert_eq!(asked("https://docs.rs/serde", &s), None);
    assert_eq!(asked("https://a.example.com/", &s), None);
    assert_eq!(asked("http://localhost:3000/", &s), None);
    assert_eq!(asked("http://127.0.0.1:3000/", &s), None);
    assert_eq!(asked("http://[::1]:3000/", &s), None);
    assert_eq!(asked("not a url", &s), None);
    let none = settings(AllowLocal::None, &[], &[]);
    assert_eq!(
        asked("http://127.0.0.1:3000/", &none),
        Some(Some("host:127.0.0.1".into()))
    );
    assert_eq!(
        asked("http://192.168.1.2/", &s),
        Some(Some("host:192.168.1.2".into()))
    );
}

#[test]
fn a_known_secret_is_not_typed() {
    let mut redactor = Redactor::new();
    redactor.add_secret("sk-test-abcdefghijklmnop123456");
    assert!(refuse_secret("hello", &redactor).is_ok());
    let e = refuse_secret("key: sk-test-abcdefghijklmnop123456", &redactor).expect_err("secret");
    assert!(e.0.contains("holds a secret odek knows"), "{e}");
    assert!(e.0.contains("not typed"), "{e}");
}
