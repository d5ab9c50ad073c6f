//! Base32 (RFC 4648: `base32`, and the "extended hex" alphabet of `basenc --base32hex`), as
//! the known-value layer registers a secret in it: whole, with and without padding, and the
//! part that is the value's alone at each of the five places it can start in a 5-byte group.

/// The standard alphabet (`base32`, Python's `b32encode`).
pub(super) const STANDARD: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
/// The "extended hex" alphabet (`basenc --base32hex`, DNSSEC).
pub(super) const HEX: &[u8; 32] = b"0123456789ABCDEFGHIJKLMNOPQRSTUV";

/// `bytes` in base32 with `alphabet`, padded with `=` to a multiple of 8 characters when
/// `pad` is true.
pub(super) fn encode(bytes: &[u8], alphabet: &[u8; 32], pad: bool) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    for chunk in bytes.chunks(5) {
        let mut group = [0u8; 5];
        group[..chunk.len()].copy_from_slice(chunk);
        let bits = group
            .iter()
            .fold(0u64, |acc, byte| (acc << 8) | u64::from(*byte));
        let used = (chunk.len() * 8).div_ceil(5);
        for index in 0..8 {
            if index < used {
                let digit = (bits >> (35 - 5 * index)) & 31;
                out.push(char::from(alphabet[digit as usize]));
            } else if pad {
                out.push('=');
            }
        }
    }
    out
}

/// The characters of the value's base32 that do not depend on the bytes around it, when the
/// value starts `shift` bytes (0 to 4) into a 5-byte group: a longer text encoded whole
/// (`ODEK_API_KEY=…` in an encoded environment) holds one of the five.
pub(super) fn core(bytes: &[u8], shift: usize, alphabet: &[u8; 32]) -> String {
    let mut shifted = vec![0u8; shift];
    shifted.extend_from_slice(bytes);
    let encoded = encode(&shifted, alphabet, false);
    // Character i holds bits 5i..5i+5 of the shifted bytes: only those wholly inside the
    // value's bits (8·shift .. 8·(shift + len)) are the value's alone.
    let first = (8 * shift).div_ceil(5);
    let end = (8 * (shift + bytes.len())) / 5;
    encoded.get(first..end).unwrap_or_default().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test vectors of RFC 4648, section 10.
    #[test]
    fn rfc_4648_vectors() {
        let vectors = [
            ("", "", ""),
            ("f", "MY======", "CO======"),
            ("fo", "MZXQ====", "CPNG===="),
            ("foo", "MZXW6===", "CPNMU==="),
            ("foob", "MZXW6YQ=", "CPNMUOG="),
            ("fooba", "MZXW6YTB", "CPNMUOJ1"),
            ("foobar", "MZXW6YTBOI======", "CPNMUOJ1E8======"),
        ];
        for (plain, standard, hex) in vectors {
            assert_eq!(encode(plain.as_bytes(), STANDARD, true), standard);
            assert_eq!(encode(plain.as_bytes(), HEX, true), hex);
            assert_eq!(
                encode(plain.as_bytes(), STANDARD, false),
                standard.trim_end_matches('=')
            );
        }
    }

    /// Whatever precedes the value, its core is inside the encoding of the whole text.
    #[test]
    fn the_core_is_found_at_every_alignment() {
        let value = b"sk-live-AbCdEfGhIjKlMnOpQrStUv0123456789";
        for prefix in ["", "A", "AB", "ABC", "ABCD", "ODEK_API_KEY="] {
            let mut whole = prefix.as_bytes().to_vec();
            whole.extend_from_slice(value);
            whole.extend_from_slice(b"\nHOME=/");
            for alphabet in [&STANDARD, &HEX] {
                let core = core(value, prefix.len() % 5, alphabet);
                assert!(core.len() >= value.len() * 8 / 5 - 2, "{prefix:?}");
                assert!(encode(&whole, alphabet, true).contains(&core), "{prefix:?}");
            }
        }
    }
}
