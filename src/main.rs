fn main() -> std::process::ExitCode {
    odek::cli::main()
}

/// The static build's `memcpy` and `memmove` (see `odek::mem`): musl's start every copy
/// with `rep movsq`, which makes the many small copies of serialisation five times slower.
#[cfg(all(target_env = "musl", target_arch = "x86_64"))]
#[allow(unsafe_code)]
mod musl_copies {
    /// # Safety
    /// The C contract of `memcpy`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn memcpy(dest: *mut u8, src: *const u8, n: usize) -> *mut u8 {
        // SAFETY: the caller's contract is `copy_bytes`'s.
        unsafe { odek::mem::copy_bytes(dest, src, n) };
        dest
    }

    /// # Safety
    /// The C contract of `memmove`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn memmove(dest: *mut u8, src: *const u8, n: usize) -> *mut u8 {
        // SAFETY: the caller's contract is `copy_bytes`'s, which allows overlap.
        unsafe { odek::mem::copy_bytes(dest, src, n) };
        dest
    }
}
