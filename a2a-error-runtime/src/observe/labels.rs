//! The closed sets every label value a peer could choose goes through.

use std::sync::{Arc, LazyLock, Mutex};

use metrics::SharedString;

/// How many values outside the code table a label may take in one process.
const MAX_OTHERS: usize = 64;
/// The longest value admitted to a set.
pub(super) const MAX_LEN: usize = 48;

/// The values of one label seen so far beyond the fixed ones: the first [`MAX_OTHERS`]
/// are kept, later ones are told apart no more.
struct Others(Mutex<Vec<Arc<str>>>);

static REASONS: Others = Others(Mutex::new(Vec::new()));
static CODES: Others = Others(Mutex::new(Vec::new()));
#[cfg(feature = "client")]
static METHODS: Others = Others(Mutex::new(Vec::new()));

impl Others {
    fn admit(&self, value: &str) -> Option<SharedString> {
        let plain = value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'/' | b'.'));
        if value.is_empty() || value.len() > MAX_LEN || !plain {
            return None;
        }
        let mut seen = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(known) = seen.iter().find(|known| &***known == value) {
            return Some(SharedString::from(Arc::clone(known)));
        }
        if seen.len() >= MAX_OTHERS {
            return None;
        }
        let value: Arc<str> = value.into();
        seen.push(Arc::clone(&value));
        Some(SharedString::from(value))
    }
}

/// `reason` as an `error.type` label value.
pub(crate) fn reason_label(reason: &str) -> SharedString {
    if let Some(row) = a2a_error_codes::by_reason(reason) {
        return SharedString::const_str(row.reason);
    }
    REASONS
        .admit(reason)
        .unwrap_or(SharedString::const_str("OTHER"))
}

/// `code` as an `rpc.status_code` label value.
pub(crate) fn code_label(code: i32) -> SharedString {
    // The table's codes as text, made once: a label for every error sent.
    static TABLE_CODES: LazyLock<Vec<(i32, SharedString)>> = LazyLock::new(|| {
        a2a_error_codes::TABLE
            .iter()
            .map(|row| {
                (
                    row.code,
                    SharedString::from_shared(Arc::from(row.code.to_string())),
                )
            })
            .collect()
    });
    if let Some((_, label)) = TABLE_CODES.iter().find(|(known, _)| *known == code) {
        return label.clone();
    }
    let text = code.to_string();
    CODES
        .admit(&text)
        .unwrap_or(SharedString::const_str("other"))
}

/// A client's `method` as an `rpc.method` label value.
#[cfg(feature = "client")]
pub(crate) fn method_label(method: &str) -> SharedString {
    if let Some(known) = crate::wire::method::lookup(method) {
        return SharedString::const_str(known.spelled(method));
    }
    METHODS
        .admit(method)
        .unwrap_or(SharedString::const_str("other"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_come_from_closed_sets() {
        assert_eq!(&*reason_label("RATE_LIMITED"), "RATE_LIMITED");
        assert_eq!(&*code_label(-32052), "-32052");
        #[cfg(feature = "client")]
        assert_eq!(&*method_label("tasks/get"), "tasks/get");
        assert_eq!(&*reason_label("bad\nreason"), "OTHER");
        assert_eq!(&*reason_label(&"R".repeat(49)), "OTHER");
        let mut distinct = std::collections::HashSet::new();
        for i in 0..10_000 {
            distinct.insert(reason_label(&format!("RANDOM_{i}")).to_string());
            distinct.insert(code_label(-40_000 - i).to_string());
            #[cfg(feature = "client")]
            distinct.insert(method_label(&format!("m{i}")).to_string());
        }
        // 64 of each kind at most, and the three fallbacks.
        assert!(distinct.len() <= 3 * MAX_OTHERS + 3, "{}", distinct.len());
        assert!(distinct.contains("OTHER") && distinct.contains("other"));
    }
}
