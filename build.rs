//! Records the target triple and the git commit for `odek version`, and gzips the web UI's
//! files (`ui/`) into the build: `odek serve` sends them compressed, and the binary carries a
//! third of their bytes.

use std::io::Write;
use std::path::Path;
use std::process::Command;

/// The files the browser gets, by folder and extension; tests and Node packages stay out.
const UI_FILES: &[(&str, &[&str])] = &[
    ("", &["html", "css", "svg"]),
    ("js", &["js"]),
    ("vendor", &["js", "txt"]),
];

fn main() {
    if let Err(e) = embed_ui() {
        panic!("embedding the web UI (ui/): {e}");
    }
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".into());
    println!("cargo:rustc-env=ODEK_TARGET={target}");
    let commit = std::env::var("ODEK_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| {
            Command::new("git")
                .args(["rev-parse", "--short=12", "HEAD"])
                .output()
                .ok()
                .filter(|o| o.status.success())
                .and_then(|o| String::from_utf8(o.stdout).ok())
                .map(|s| s.trim().to_string())
        });
    println!(
        "cargo:rustc-env=ODEK_COMMIT={}",
        commit.unwrap_or_else(|| "unknown".into())
    );
    println!("cargo:rerun-if-env-changed=ODEK_COMMIT");
    for path in [".git/HEAD", ".git/refs/heads"] {
        if std::path::Path::new(path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}

/// Writes `$OUT_DIR/ui_assets.rs`: a table of (path, gzipped bytes) of every UI file.
fn embed_ui() -> std::io::Result<()> {
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").map_err(std::io::Error::other)?);
    let mut table = String::from("&[\n");
    for (folder, extensions) in UI_FILES {
        let dir = Path::new("ui").join(folder);
        println!("cargo:rerun-if-changed={}", dir.display());
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut names: Vec<String> = entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| {
                n.rsplit_once('.')
                    .is_some_and(|(_, ext)| extensions.contains(&ext))
            })
            .collect();
        names.sort();
        for name in names {
            let source = dir.join(&name);
            println!("cargo:rerun-if-changed={}", source.display());
            let bytes = std::fs::read(&source)?;
            let path = if folder.is_empty() {
                name.clone()
            } else {
                format!("{folder}/{name}")
            };
            let gz_name = format!("ui-{}.gz", path.replace('/', "-"));
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            gz.write_all(&bytes)?;
            std::fs::write(out.join(&gz_name), gz.finish()?)?;
            table.push_str(&format!(
                "    ({path:?}, include_bytes!(concat!(env!(\"OUT_DIR\"), \"/{gz_name}\"))),\n"
            ));
        }
    }
    table.push(']');
    std::fs::write(out.join("ui_assets.rs"), table)
}
