//! Bytes as lowercase hex digits and back, without the formatting machinery: trace ids, scope
//! keys and dedup fingerprints are written on every request, and the bridge reads the trace
//! context and the scope back from the SDK's service params.

/// `bytes` as lowercase hex digits into `out` (twice as long).
pub fn write(bytes: &[u8], out: &mut [u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for (byte, pair) in bytes.iter().zip(out.chunks_exact_mut(2)) {
        pair[0] = DIGITS[usize::from(byte >> 4)];
        pair[1] = DIGITS[usize::from(byte & 0x0f)];
    }
}

/// `bytes` as a string of lowercase hex digits.
pub fn string(bytes: &[u8]) -> String {
    let mut out = vec![0u8; bytes.len() * 2];
    write(bytes, &mut out);
    // Hex digits only.
    String::from_utf8(out).unwrap_or_default()
}

/// Exactly `2 * N` lower-case hex digits as `N` bytes.
///
/// By a table, checked once at the end: the bridge reads a trace context back on every
/// request, and a branch per digit of a random id is mispredicted about every other digit.
pub fn read<const N: usize>(digits: &[u8]) -> Option<[u8; N]> {
    /// Each byte's value as a lower-case hex digit, or 0x10 (a bit no digit has) if it is
    /// none.
    const VALUE: [u8; 256] = {
        let mut table = [0x10u8; 256];
        let mut d = 0;
        while d < 16 {
            table[b"0123456789abcdef"[d] as usize] = d as u8;
            d += 1;
        }
        table
    };
    if digits.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    let mut invalid = 0u8;
    for (byte, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
        let (high, low) = (VALUE[usize::from(pair[0])], VALUE[usize::from(pair[1])]);
        invalid |= high | low;
        *byte = high << 4 | (low & 0x0f);
    }
    (invalid & 0x10 == 0).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_reads_lower_case_digits_only() {
        let value = |d: u8| match d {
            b'0'..=b'9' => Some(d - b'0'),
            b'a'..=b'f' => Some(d - b'a' + 10),
            _ => None,
        };
        for high in 0..=255u8 {
            for low in 0..=255u8 {
                let expected = value(high).zip(value(low)).map(|(h, l)| [h << 4 | l]);
                assert_eq!(read::<1>(&[high, low]), expected, "{high:#x} {low:#x}");
            }
        }
        assert_eq!(read::<2>(b"00ff"), Some([0x00, 0xff]));
        assert_eq!(read::<2>(b"0fF0"), None);
        assert_eq!(read::<2>(b"0ff"), None);
    }
}
