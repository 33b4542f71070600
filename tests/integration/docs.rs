//! The docs say what the code does: the code table in the errors guide is the table the code
//! reads (it was copied by hand once, so a test keeps it from drifting).

use a2a_error::code::{self, DefaultRetry};

#[test]
fn the_guides_code_table_is_the_code_table() {
    let guide = include_str!("../../docs/guides/errors.md");
    let rows: Vec<Vec<&str>> = guide
        .lines()
        .skip_while(|line| !line.starts_with("| const |"))
        .skip(2)
        .take_while(|line| line.starts_with('|'))
        .map(|line| line.trim_matches('|').split('|').map(str::trim).collect())
        .collect();
    assert_eq!(rows.len(), code::TABLE.len(), "one guide row per table row");
    for (cells, row) in rows.iter().zip(code::TABLE) {
        let [name, code, reason, message, http, grpc, category, retry] = cells[..] else {
            panic!("a row of eight cells: {cells:?}");
        };
        assert_eq!(name, row.name);
        assert_eq!(code.parse::<i32>().unwrap(), row.code, "{name}");
        assert_eq!(reason, row.reason, "{name}");
        assert_eq!(message, row.message, "{name}");
        assert_eq!(http.parse::<u16>().unwrap(), row.http_status, "{name}");
        assert_eq!(grpc, row.grpc_status, "{name}");
        assert_eq!(category, row.category.as_str(), "{name}");
        assert_eq!(retry == "never", row.retry == DefaultRetry::Never, "{name}");
    }
}
