//! Copying memory in the static (musl) build.
//!
//! musl's x86_64 `memcpy` and `memmove` start every copy with `rep movsq`, whose set-up costs
//! about 10 ns: five times what glibc takes for the whole copy of a few bytes. Serialising a
//! request writes thousands of such small pieces (every JSON fragment is a copy), and a
//! 100-iteration run spent 18 % of its CPU there. The static build's `main.rs` exports
//! `memcpy` and `memmove` over [`copy_bytes`], which moves up to 64 bytes with a few
//! overlapping loads and stores and leaves longer copies to `rep movsb` (fast forward strings
//! on every x86_64 CPU of the last decade). docs/PERFORMANCE.md ("Weight") has the figures.
//!
//! No loops: a compiler that recognises a copy loop turns it into a call to `memmove`,
//! which here would call itself.
//!
//! The fast path is x86_64's (`rep movsb`, `std; rep movsq`). Every other architecture
//! gets [`copy_portable`] behind the same contract (`core::ptr::copy`, the C library's own
//! `memmove`; musl's aarch64 one is already written in assembly, so `main.rs` exports
//! nothing there). [`copy_portable`] is compiled everywhere, so the tests check both paths
//! on an x86_64 machine.
//!
//! musl's `memcmp` compares one byte at a time: the equality checks that let a request reuse
//! the previous one's encoded messages (`llm/wire/kept.rs`) spent a fifth of a 400-iteration
//! run there. [`same_bytes`] compares eight bytes at a time; those checks use it. (Exporting
//! it as `memcmp` and `bcmp`, as `memcpy` is, crashed LLVM's code generation in the fat-LTO
//! build.) It is plain Rust (unaligned loads), the same on every architecture.

#![allow(unsafe_code)]

use core::ptr::read_unaligned as load;

/// Copies `n` bytes from `src` to `dest`. The two ranges may overlap (`memmove`'s contract,
/// which also serves `memcpy`). On x86_64 this is the fast path of the module docs, which
/// never calls `memmove` (so it may back `memmove` itself); elsewhere it is
/// [`copy_portable`].
///
/// # Safety
/// `src` must be valid for reads of `n` bytes and `dest` for writes of `n` bytes.
#[inline(always)]
pub unsafe fn copy_bytes(dest: *mut u8, src: *const u8, n: usize) {
    // SAFETY: the caller's contract is the same for both paths.
    unsafe {
        #[cfg(target_arch = "x86_64")]
        self::x86_64::copy_bytes(dest, src, n);
        #[cfg(not(target_arch = "x86_64"))]
        copy_portable(dest, src, n);
    }
}

/// [`copy_bytes`]'s contract on any architecture: `core::ptr::copy`, which is the C
/// library's `memmove` — so, unlike the x86_64 path, it must never be exported as `memmove`.
///
/// # Safety
/// `src` must be valid for reads of `n` bytes and `dest` for writes of `n` bytes.
#[inline(always)]
pub unsafe fn copy_portable(dest: *mut u8, src: *const u8, n: usize) {
    // SAFETY: the caller's contract; `ptr::copy` allows the ranges to overlap.
    unsafe { core::ptr::copy(src, dest, n) }
}

/// The x86_64 fast path: overlapping loads up to 64 bytes, string instructions beyond.
#[cfg(target_arch = "x86_64")]
mod x86_64 {
    use core::arch::asm;
    use core::ptr::{read_unaligned as load, write_unaligned as store};

    /// Up to 64 bytes with a few overlapping loads and stores, `rep movsb` beyond.
    ///
    /// # Safety
    /// `src` must be valid for reads of `n` bytes and `dest` for writes of `n` bytes.
    #[inline(always)]
    pub(super) unsafe fn copy_bytes(dest: *mut u8, src: *const u8, n: usize) {
        // SAFETY: the caller's contract; every helper reads all its bytes before it writes any,
        // so overlap within one helper is harmless, and `copy_long` picks the direction.
        unsafe {
            if n <= 16 {
                copy_small(dest, src, n);
            } else if n <= 32 {
                let (a, b) = (
                    load(src as *const [u8; 16]),
                    load(src.add(n - 16) as *const [u8; 16]),
                );
                store(dest as *mut [u8; 16], a);
                store(dest.add(n - 16) as *mut [u8; 16], b);
            } else if n <= 64 {
                let a = load(src as *const [u8; 32]);
                let b = load(src.add(n - 32) as *const [u8; 32]);
                store(dest as *mut [u8; 32], a);
                store(dest.add(n - 32) as *mut [u8; 32], b);
            } else {
                copy_long(dest, src, n);
            }
        }
    }

    /// Up to 16 bytes: two overlapping loads of the widest size that fits.
    #[inline(always)]
    unsafe fn copy_small(dest: *mut u8, src: *const u8, n: usize) {
        // SAFETY: `n <= 16` bytes inside the caller's ranges; both loads happen before the stores.
        unsafe {
            if n >= 8 {
                let (a, b) = (load(src as *const u64), load(src.add(n - 8) as *const u64));
                store(dest as *mut u64, a);
                store(dest.add(n - 8) as *mut u64, b);
            } else if n >= 4 {
                let (a, b) = (load(src as *const u32), load(src.add(n - 4) as *const u32));
                store(dest as *mut u32, a);
                store(dest.add(n - 4) as *mut u32, b);
            } else if n >= 2 {
                let (a, b) = (load(src as *const u16), load(src.add(n - 2) as *const u16));
                store(dest as *mut u16, a);
                store(dest.add(n - 2) as *mut u16, b);
            } else if n == 1 {
                *dest = *src;
            }
        }
    }

    /// More than 64 bytes: `rep movsb` forwards when `dest` does not start inside the source
    /// (disjoint ranges, or `dest` below `src`); otherwise, from the end, eight bytes at a time
    /// (the direction flag set for the instruction and cleared after it, as the ABI expects),
    /// then the remaining head of fewer than eight bytes.
    #[inline(always)]
    unsafe fn copy_long(dest: *mut u8, src: *const u8, n: usize) {
        let forward = (dest as usize).wrapping_sub(src as usize) >= n;
        // SAFETY: the string instructions touch exactly `n` bytes of each range, in an order that
        // reads every source byte before the destination overwrites it; the direction flag is
        // clear again when the block ends.
        unsafe {
            if forward {
                asm!(
                    "rep movsb",
                    inout("rcx") n => _,
                    inout("rdi") dest => _,
                    inout("rsi") src => _,
                    options(nostack, preserves_flags)
                );
            } else {
                let head = n % 8;
                asm!(
                    "std",
                    "rep movsq",
                    "cld",
                    inout("rcx") n / 8 => _,
                    inout("rdi") dest.add(n - 8) => _,
                    inout("rsi") src.add(n - 8) => _,
                    options(nostack)
                );
                copy_small(dest, src, head);
            }
        }
    }
}

/// Whether `a` and `b` hold the same bytes: 32 at a time (four 8-byte words whose
/// differences are or-ed, no branch per word), the rest by [`compare_bytes`].
pub fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let (n, x, y) = (a.len(), a.as_ptr(), b.as_ptr());
    let mut at = 0;
    // SAFETY: every load lies inside the first `n` bytes of both slices.
    unsafe {
        while at + 32 <= n {
            let differ = (load(x.add(at) as *const u64) ^ load(y.add(at) as *const u64))
                | (load(x.add(at + 8) as *const u64) ^ load(y.add(at + 8) as *const u64))
                | (load(x.add(at + 16) as *const u64) ^ load(y.add(at + 16) as *const u64))
                | (load(x.add(at + 24) as *const u64) ^ load(y.add(at + 24) as *const u64));
            if differ != 0 {
                return false;
            }
            at += 32;
        }
        compare_bytes(x.add(at), y.add(at), n - at) == 0
    }
}

/// Compares `n` bytes at `a` and `b` as unsigned bytes: negative, zero or positive as the
/// first differing byte of `a` is below or above that of `b` (`memcmp`'s contract, which
/// also serves `bcmp`).
///
/// # Safety
/// `a` and `b` must be valid for reads of `n` bytes.
pub unsafe fn compare_bytes(a: *const u8, b: *const u8, n: usize) -> i32 {
    let mut at = 0;
    // SAFETY: every load lies inside the first `n` bytes of both ranges.
    unsafe {
        while at + 8 <= n {
            let (x, y) = (load(a.add(at) as *const u64), load(b.add(at) as *const u64));
            if x != y {
                // As big-endian numbers, the first byte in memory weighs most.
                return if u64::from_be(x) < u64::from_be(y) {
                    -1
                } else {
                    1
                };
            }
            at += 8;
        }
        while at < n {
            let (x, y) = (*a.add(at), *b.add(at));
            if x != y {
                return i32::from(x) - i32::from(y);
            }
            at += 1;
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::{compare_bytes, copy_bytes, copy_portable};

    /// A copy function of [`copy_bytes`]'s contract.
    type Copy = unsafe fn(*mut u8, *const u8, usize);

    /// The dispatching function (x86_64's fast path here) and the portable fallback.
    const BOTH: [(&str, Copy); 2] = [("copy_bytes", copy_bytes), ("copy_portable", copy_portable)];

    fn compared(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        assert_eq!(a.len(), b.len());
        // SAFETY: both slices hold `a.len()` bytes.
        unsafe { compare_bytes(a.as_ptr(), b.as_ptr(), a.len()) }.cmp(&0)
    }

    #[test]
    fn sameness_finds_any_one_differing_byte_at_every_length() {
        for n in (0..=100).chain([255, 256, 1000]) {
            let base = pattern(n);
            assert!(super::same_bytes(&base, &base.clone()), "{n}");
            assert!(!super::same_bytes(&base, &base[..n.saturating_sub(1)]) || n == 0);
            for place in 0..n {
                let mut other = base.clone();
                other[place] ^= 0x80;
                assert!(!super::same_bytes(&base, &other), "{n} {place}");
            }
        }
    }

    #[test]
    fn comparisons_order_as_unsigned_bytes_at_every_length_and_place() {
        for n in 0..=40 {
            let base = pattern(n);
            assert_eq!(compared(&base, &base), std::cmp::Ordering::Equal, "{n}");
            for place in 0..n {
                for delta in [1u8, 0x7f, 0x80, 0xff] {
                    let mut other = base.clone();
                    other[place] = other[place].wrapping_add(delta);
                    // A later byte differing the other way must not decide.
                    if place + 1 < n {
                        other[n - 1] = base[n - 1].wrapping_sub(1);
                    }
                    assert_eq!(
                        compared(&base, &other),
                        base.cmp(&other),
                        "{n} {place} {delta}"
                    );
                    assert_eq!(
                        compared(&other, &base),
                        other.cmp(&base),
                        "{n} {place} {delta}"
                    );
                }
            }
        }
    }

    /// What a copy of `n` bytes from `from` to `to` inside `buffer` must leave.
    fn expected(buffer: &[u8], from: usize, to: usize, n: usize) -> Vec<u8> {
        let source = buffer[from..from + n].to_vec();
        let mut out = buffer.to_vec();
        for (i, byte) in source.into_iter().enumerate() {
            out[to + i] = byte;
        }
        out
    }

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    /// Checks a copy of `n` bytes from `from` to `to` by both paths.
    fn check(from: usize, to: usize, n: usize) {
        for (name, copy) in BOTH {
            let mut buffer = pattern(from.max(to) + n + 16);
            let want = expected(&buffer, from, to, n);
            let base = buffer.as_mut_ptr();
            // SAFETY: both ranges lie inside `buffer`.
            unsafe { copy(base.add(to), base.add(from), n) };
            assert_eq!(
                buffer, want,
                "{name}: copy of {n} bytes from {from} to {to}"
            );
        }
    }

    #[test]
    fn disjoint_copies_of_every_length_up_to_300_and_some_long_ones() {
        for n in (0..=300).chain([511, 512, 4095, 4096, 65_537]) {
            check(0, n + 3, n);
            check(n + 5, 1, n);
        }
    }

    #[test]
    fn overlapping_moves_in_both_directions_keep_the_source_bytes() {
        for n in (0..=200).chain([257, 1000, 4099]) {
            for shift in [1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100] {
                check(shift, 0, n); // dest below src
                check(0, shift, n); // dest inside the source
            }
        }
    }

    #[test]
    fn unaligned_ends_and_a_copy_onto_itself() {
        for n in [17, 33, 64, 65, 127, 129, 1023] {
            for offset in 0..9 {
                check(offset, offset + n + 1, n);
                check(offset, offset, n);
            }
        }
    }
}
