//! Nothing here: the cases are in `tests/`.
