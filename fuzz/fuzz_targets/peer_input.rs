//! Every parser a peer's bytes reach, on one input (see `peer_input::peer_bytes`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    a2a_error_runtime::peer_input::peer_bytes(data);
});
