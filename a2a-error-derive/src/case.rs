//! Name conversions and "did you mean" suggestions.

/// `TaskNotFound` → `TASK_NOT_FOUND`, `HTTPError` → `HTTP_ERROR`.
pub fn upper_snake(name: &str) -> String {
    let chars: Vec<char> = name.trim_start_matches("r#").chars().collect();
    let mut out = String::with_capacity(chars.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_uppercase() && i > 0 && chars[i - 1] != '_' {
            let prev = chars[i - 1];
            let next_is_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if prev.is_lowercase() || prev.is_ascii_digit() || prev.is_uppercase() && next_is_lower
            {
                out.push('_');
            }
        }
        out.extend(c.to_uppercase());
    }
    out
}

/// `task_id` → `taskId`.
pub fn lower_camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper_next = false;
    for c in name
        .trim_start_matches("r#")
        .trim_start_matches('_')
        .chars()
    {
        if c == '_' {
            upper_next = true;
        } else if upper_next {
            out.extend(c.to_uppercase());
            upper_next = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether `reason` is a valid ErrorInfo reason: `[A-Z][A-Z0-9_]+[A-Z0-9]`, at most 63 chars.
pub fn is_upper_snake(reason: &str) -> bool {
    let bytes = reason.as_bytes();
    bytes.len() >= 2
        && bytes.len() <= 63
        && bytes[0].is_ascii_uppercase()
        && bytes
            .iter()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_')
        && bytes[bytes.len() - 1] != b'_'
}

/// The candidate closest to `given`, if it is close enough to be a likely typo.
pub fn nearest<'a>(given: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let given_lower = given.to_ascii_lowercase();
    candidates
        .into_iter()
        .map(|c| (distance(&given_lower, &c.to_ascii_lowercase()), c))
        .filter(|(d, c)| *d <= (c.len().max(given.len()) / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions() {
        assert_eq!(upper_snake("TaskNotFound"), "TASK_NOT_FOUND");
        assert_eq!(upper_snake("HTTPError"), "HTTP_ERROR");
        assert_eq!(upper_snake("Llm"), "LLM");
        assert_eq!(upper_snake("Error2Big"), "ERROR2_BIG");
        assert_eq!(lower_camel("task_id"), "taskId");
        assert_eq!(lower_camel("r#type"), "type");
        assert_eq!(lower_camel("index"), "index");
        assert!(is_upper_snake("LLM_UNAVAILABLE"));
        assert!(!is_upper_snake("LlmUnavailable"));
        assert!(!is_upper_snake("TRAILING_"));
    }

    #[test]
    fn suggestions() {
        assert_eq!(nearest("kode", ["code", "message"]), Some("code"));
        assert_eq!(
            nearest("retry_afte", ["retryable", "retry_after"]),
            Some("retry_after")
        );
        assert_eq!(nearest("zzz", ["code", "message"]), None);
    }
}
