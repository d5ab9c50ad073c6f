//! What a release's files hold: the `SHA256SUMS` line of one archive, the archive's SHA-256,
//! and `odek` taken out of the archive, with caps on what is read.

use std::io::Read;

use sha2::{Digest, Sha256};

use super::ReleaseError;

/// The largest `odek` taken out of an archive (the release binary is ~11 MiB).
pub const MAX_BINARY_BYTES: u64 = 256 * 1024 * 1024;

/// The most bytes inflated from an archive before giving up (a gzip bomb stops here).
const MAX_INFLATED_BYTES: u64 = 512 * 1024 * 1024;

/// The SHA-256 that `sums` (in `sha256sum` format) gives for `file_name`, as 32 bytes.
pub fn expected_sha256(sums: &str, file_name: &str) -> Option<[u8; 32]> {
    sums.lines().find_map(|line| {
        let (hash, name) = line
            .trim_end_matches('\r')
            .split_once(char::is_whitespace)?;
        // `sha256sum` writes "<hash>  <name>" (text) or "<hash> *<name>" (binary).
        let name = name.trim_start_matches(' ').trim_start_matches('*');
        if name == file_name {
            parse_hex(hash)
        } else {
            None
        }
    })
}

/// The SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

fn parse_hex(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 || !text.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// The bytes of `odek` at the top level of the gzipped tar `archive` (named `name` in
/// messages).
pub fn extract_binary(archive: &[u8], name: &str) -> Result<Vec<u8>, ReleaseError> {
    let unreadable = |e: std::io::Error| ReleaseError::Archive {
        name: name.to_string(),
        reason: e.to_string(),
    };
    let inflated = flate2::read::GzDecoder::new(archive).take(MAX_INFLATED_BYTES);
    let mut tar = tar::Archive::new(inflated);
    for entry in tar.entries().map_err(unreadable)? {
        let mut entry = entry.map_err(unreadable)?;
        let path = entry.path().map_err(unreadable)?;
        let top_level_odek = path
            .to_str()
            .is_some_and(|p| matches!(p, "odek" | "./odek"));
        if !top_level_odek {
            continue;
        }
        if !entry.header().entry_type().is_file() {
            return Err(ReleaseError::Archive {
                name: name.to_string(),
                reason: "its `odek` is not a regular file".into(),
            });
        }
        if entry.size() > MAX_BINARY_BYTES {
            return Err(ReleaseError::Archive {
                name: name.to_string(),
                reason: format!("its `odek` is larger than {MAX_BINARY_BYTES} bytes"),
            });
        }
        let mut bytes = Vec::with_capacity(usize::try_from(entry.size()).unwrap_or(0));
        entry.read_to_end(&mut bytes).map_err(unreadable)?;
        if bytes.is_empty() {
            return Err(ReleaseError::Archive {
                name: name.to_string(),
                reason: "its `odek` is empty".into(),
            });
        }
        return Ok(bytes);
    }
    Err(ReleaseError::NoBinary {
        name: name.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tar_gz(files: &[(&str, &[u8], tar::EntryType)]) -> Vec<u8> {
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut tar = tar::Builder::new(gz);
        for (name, bytes, kind) in files {
            let mut header = tar::Header::new_gnu();
            header.set_size(bytes.len() as u64);
            header.set_mode(0o755);
            header.set_entry_type(*kind);
            tar.append_data(&mut header, name, *bytes).expect("entry");
        }
        tar.into_inner().expect("tar").finish().expect("gz")
    }

    const FILE: tar::EntryType = tar::EntryType::Regular;

    #[test]
    fn finds_the_line_of_one_archive_in_either_sha256sum_format() {
        let a = crate::util::hex::encode(&sha256(b"a"));
        let b = crate::util::hex::encode(&sha256(b"b"));
        let sums = format!("{a}  odek-1.0.0-x.tar.gz\r\n{b} *odek-1.0.0-y.tar.gz\n");
        assert_eq!(
            expected_sha256(&sums, "odek-1.0.0-x.tar.gz"),
            Some(sha256(b"a"))
        );
        assert_eq!(
            expected_sha256(&sums, "odek-1.0.0-y.tar.gz"),
            Some(sha256(b"b"))
        );
        assert_eq!(expected_sha256(&sums, "odek-1.0.0-z.tar.gz"), None);
        assert_eq!(
            expected_sha256("zz  odek-1.0.0-x.tar.gz", "odek-1.0.0-x.tar.gz"),
            None
        );
        assert_eq!(
            crate::util::hex::encode(&sha256(b"")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn takes_the_top_level_odek_and_nothing_else() {
        let archive = tar_gz(&[
            ("LICENSE", b"MIT", FILE),
            ("sub/odek", b"not this", FILE),
            ("odek", b"\x7fELF binary", FILE),
        ]);
        assert_eq!(
            extract_binary(&archive, "a.tar.gz").expect("found"),
            b"\x7fELF binary"
        );
        let dotted = tar_gz(&[("./odek", b"bin", FILE)]);
        assert_eq!(extract_binary(&dotted, "a").expect("found"), b"bin");
    }

    #[test]
    fn refuses_archives_without_a_usable_odek() {
        let none = tar_gz(&[("LICENSE", b"MIT", FILE), ("README.md", b"#", FILE)]);
        assert!(matches!(
            extract_binary(&none, "a"),
            Err(ReleaseError::NoBinary { .. })
        ));
        let folder = tar_gz(&[("odek", b"", tar::EntryType::Directory)]);
        assert!(matches!(
            extract_binary(&folder, "a"),
            Err(ReleaseError::Archive { .. })
        ));
        let empty = tar_gz(&[("odek", b"", FILE)]);
        assert!(matches!(
            extract_binary(&empty, "a"),
            Err(ReleaseError::Archive { .. })
        ));
        assert!(matches!(
            extract_binary(b"not gzip at all", "a"),
            Err(ReleaseError::Archive { .. })
        ));
    }
}
