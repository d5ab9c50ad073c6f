//! Random ids and nonces from one place: session ids, run ids, wrapper nonces, lock-holder
//! tokens and retry jitter all come from the operating system's random source through here.
//! A leaf module: it knows nothing of what the bytes are for (hex is `crate::util::hex`).

/// Fills `buf` from the operating system's random source.
pub fn fill(buf: &mut [u8]) {
    // The OS random source failing is not recoverable in any useful way; zeroed bytes would
    // silently weaken nonces and collide ids, so fall back to time-derived bytes and never
    // panic.
    if getrandom::fill(buf).is_err() {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (seed >> ((i % 16) * 8)) as u8 ^ (i as u8).wrapping_mul(151);
        }
    }
}

/// `N` random bytes as `2 * N` lowercase hex characters.
pub fn hex_id<const N: usize>() -> String {
    let mut bytes = [0u8; N];
    fill(&mut bytes);
    crate::util::hex::encode(&bytes)
}

/// A random number in `[0, 1)`.
pub fn unit() -> f64 {
    let mut bytes = [0u8; 8];
    fill(&mut bytes);
    (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_lowercase_hex_of_the_asked_length_and_differ() {
        let a = hex_id::<16>();
        assert_eq!(a.len(), 32);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
        );
        assert_ne!(a, hex_id::<16>());
    }

    #[test]
    fn unit_is_in_range() {
        for _ in 0..1000 {
            let u = unit();
            assert!((0.0..1.0).contains(&u), "{u}");
        }
    }
}
