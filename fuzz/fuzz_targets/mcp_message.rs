//! Any bytes into odek's `mcp_message` entry (`odek::fuzz`): no panic, no stall (run with
//! `-timeout=1`); a new slowest input is reported on stderr.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| odek::fuzz::run("mcp_message", data));
