//! A peer's text on its way into our logs and terminals: escaped and cut.

use std::fmt;

/// `text` cut to at most `max` bytes at a character boundary, nothing added.
pub fn cut(text: &str, max: usize) -> &str {
    &text[..text.floor_char_boundary(max)]
}

/// How much of a peer's text a log line shows by default.
pub const LOG_BYTES: usize = 256;

/// A peer's text as it may be shown in a log line or a terminal: control characters (a
/// newline that would forge a second log line, an escape sequence that would drive the
/// terminal) and bidirectional overrides are escaped, and the text is cut after `max` bytes,
/// saying how much was left out. [`RemoteError`](crate::remote::RemoteError)'s `Display` shows its
/// peer's reason and message this way; use it for any other peer text you print.
///
/// ```
/// use a2a_error::Shown;
///
/// assert_eq!(Shown::new("ok\nFAKE LINE", 100).to_string(), "ok\\nFAKE LINE");
/// assert_eq!(Shown::new("abcdef", 3).to_string(), "abc…(+3 bytes)");
/// ```
#[derive(Copy, Clone)]
pub struct Shown<'a> {
    text: &'a str,
    max: usize,
}

impl<'a> Shown<'a> {
    /// `text`, shown up to `max` bytes.
    pub fn new(text: &'a str, max: usize) -> Self {
        Shown { text, max }
    }
}

fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut used = 0;
        for (at, c) in self.text.char_indices() {
            if at >= self.max {
                return write!(f, "…(+{} bytes)", self.text.len() - at);
            }
            if needs_escape(c) {
                write!(f, "{}", c.escape_debug())?;
            } else {
                fmt::Write::write_char(f, c)?;
            }
            used = at + c.len_utf8();
        }
        debug_assert_eq!(used, self.text.len());
        Ok(())
    }
}

impl fmt::Debug for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_cuts() {
        let forged = "boom\n2026-01-01 ERROR admin logged in\r\x1b[2J\u{202E}";
        let shown = Shown::new(forged, 1000).to_string();
        assert!(!shown.chars().any(needs_escape), "{shown}");
        assert!(
            shown.contains("\\n2026") && shown.contains("\\u{1b}"),
            "{shown}"
        );
        assert_eq!(Shown::new("héllo", 100).to_string(), "héllo");
        let long = "x".repeat(10_000);
        assert_eq!(Shown::new(&long, 8).to_string(), "xxxxxxxx…(+9992 bytes)");
        // Cut on a character boundary.
        assert_eq!(Shown::new("ééé", 3).to_string(), "éé…(+2 bytes)");
    }
}
