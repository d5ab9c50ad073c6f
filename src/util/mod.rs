//! Small helpers every layer shares, each in the file that says what it holds: private
//! folders and atomic writes (`files`), timestamps (`timestamp`), lower-case hex (`hex`).
//! Random ids and nonces are `crate::random`'s and `crate::untrusted`'s.
//!
//! A leaf: it imports nothing of the crate.

pub mod files;
pub mod hex;
pub mod timestamp;
