//! Bytes as lowercase hex digits, without the formatting machinery: trace ids, scope keys
//! and dedup fingerprints are written on every request.

/// `bytes` as lowercase hex digits into `out` (twice as long).
pub(crate) fn write(bytes: &[u8], out: &mut [u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for (byte, pair) in bytes.iter().zip(out.chunks_exact_mut(2)) {
        pair[0] = DIGITS[usize::from(byte >> 4)];
        pair[1] = DIGITS[usize::from(byte & 0x0f)];
    }
}
