//! The public `message` template: literal text and `{field}` placeholders.

/// One piece of a message template.
pub enum Piece {
    Text(String),
    /// `{name}` or `{name:spec}`; `name` is a field name or a tuple index.
    Arg {
        name: String,
        spec: String,
    },
}

/// Splits `message` into pieces, following `format!` syntax (`{{` and `}}` escape braces).
pub fn parse(message: &str) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut chars = message.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                text.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                text.push('}');
            }
            '}' => return Err("unmatched `}` in message; write `}}` for a literal brace".into()),
            '{' => {
                let mut inner = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(c) => inner.push(c),
                        None => {
                            return Err(
                                "unclosed `{` in message; write `{{` for a literal brace".into()
                            );
                        }
                    }
                }
                let (name, spec) = match inner.split_once(':') {
                    Some((name, spec)) => (name.trim().to_owned(), format!(":{spec}")),
                    None => (inner.trim().to_owned(), String::new()),
                };
                if name.is_empty() {
                    return Err(
                        "`{}` in message must name a #[a2a(data)] field, e.g. `{task_id}`".into(),
                    );
                }
                if !text.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut text)));
                }
                pieces.push(Piece::Arg { name, spec });
            }
            c => text.push(c),
        }
    }
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    Ok(pieces)
}
