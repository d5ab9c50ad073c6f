fn main() -> std::process::ExitCode {
    #[cfg(target_env = "musl")]
    allocator::configure();
    odek::cli::main()
}

/// The static build's `memcpy` and `memmove` (see `odek::byte_copy`): musl's start every copy
/// with `rep movsq`, which makes the many small copies of serialisation five times slower.
#[cfg(all(target_env = "musl", target_arch = "x86_64"))]
#[allow(unsafe_code)]
mod musl_copies {
    /// # Safety
    /// The C contract of `memcpy`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn memcpy(dest: *mut u8, src: *const u8, n: usize) -> *mut u8 {
        // SAFETY: the caller's contract is `copy_bytes`'s.
        unsafe { odek::byte_copy::copy_bytes(dest, src, n) };
        dest
    }

    /// # Safety
    /// The C contract of `memmove`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn memmove(dest: *mut u8, src: *const u8, n: usize) -> *mut u8 {
        // SAFETY: the caller's contract is `copy_bytes`'s, which allows overlap.
        unsafe { odek::byte_copy::copy_bytes(dest, src, n) };
        dest
    }
}

/// The static build's allocator: mimalloc (see Cargo.toml; musl's serialises every thread).
#[cfg(target_env = "musl")]
#[allow(unsafe_code)]
mod allocator {
    #[global_allocator]
    static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

    /// `mi_option_purge_delay` in `mimalloc.h` (v3, the version Cargo.lock pins), and its
    /// default (`options.c`; the header says 10 ms): an update that moved the option is caught
    /// by the default.
    const PURGE_DELAY: std::ffi::c_int = 15;
    const PURGE_DELAY_DEFAULT_MS: std::ffi::c_long = 1000;

    unsafe extern "C" {
        fn mi_option_get(option: std::ffi::c_int) -> std::ffi::c_long;
        fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    }

    /// Freed memory goes back to the kernel at once, not a second later: under `odek serve`'s
    /// load the delay doubled the peak RSS (126 → 70 MiB) for a 15 % higher request rate.
    /// When the option at that index does not hold the purge delay's default (another
    /// mimalloc, or `MIMALLOC_PURGE_DELAY` set by the user), nothing is changed.
    pub fn configure() {
        // SAFETY: reads and sets one of the allocator's process-wide options, which it
        // accesses atomically; both functions take any option index.
        unsafe {
            if mi_option_get(PURGE_DELAY) == PURGE_DELAY_DEFAULT_MS {
                mi_option_set(PURGE_DELAY, 0);
            }
        }
    }
}
