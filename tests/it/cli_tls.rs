//! A model gateway behind a private CA (a company vLLM or Ollama proxy): odek trusts the
//! system's root store as well as the bundled roots, so pointing `SSL_CERT_FILE` (or the
//! system store) at the CA is enough. Certificates are made with the `openssl` command.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::*;

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the openssl command runs");
    assert!(out.status.success(), "openssl {args:?}: {}", show(&out));
}

/// A CA and a server certificate for 127.0.0.1 signed by it, in `dir`.
fn private_ca(dir: &Path) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut ca = vec!["req", "-x509"];
    ca.extend(ec);
    ca.extend([
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=odek test CA",
    ]);
    openssl(dir, &ca);
    let mut csr = vec!["req"];
    csr.extend(ec);
    csr.extend([
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=127.0.0.1",
    ]);
    openssl(dir, &csr);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .expect("ext");
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "2",
            "-extfile",
            "server.ext",
        ],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_behind_a_private_ca_works_once_the_ca_is_trusted() {
    let sb = Sandbox::new();
    let certs = sb.tmp().join("certs");
    std::fs::create_dir_all(&certs).expect("dir");
    private_ca(&certs);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls_model_server.py");
    let mut server = Command::new("python3")
        .arg(&script)
        .arg(certs.join("server.pem"))
        .arg(certs.join("server.key"))
        .arg("hello over private TLS")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 runs");
    let mut port = String::new();
    BufReader::new(server.stdout.take().expect("stdout"))
        .read_line(&mut port)
        .expect("the port");
    let base_url = format!("https://127.0.0.1:{}/v1", port.trim());

    // Not trusted: a clear certificate error, no answer.
    let mut cmd = sb.odek(&base_url);
    cmd.env("ODEK_API_KEY", "sk-test")
        .args(["run", "say hello"]);
    let untrusted = output(cmd).await;
    assert_ne!(untrusted.status.code(), Some(0), "{}", show(&untrusted));
    assert!(
        show(&untrusted).to_lowercase().contains("certificate"),
        "{}",
        show(&untrusted)
    );
    assert!(
        String::from_utf8_lossy(&untrusted.stderr)
            .contains("hint: the server's TLS certificate is not trusted"),
        "{}",
        show(&untrusted)
    );

    // The CA in the trust store (SSL_CERT_FILE, as for OpenSSL): it works.
    let mut cmd = sb.odek(&base_url);
    cmd.env("ODEK_API_KEY", "sk-test")
        .env("SSL_CERT_FILE", certs.join("ca.pem"))
        .args(["run", "say hello"]);
    let trusted = output(cmd).await;
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(trusted.status.code(), Some(0), "{}", show(&trusted));
    assert!(String::from_utf8_lossy(&trusted.stdout).contains("hello over private TLS"));
}
