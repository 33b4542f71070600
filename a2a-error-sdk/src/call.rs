//! What only the bridge knows of a request, told to the SDK's handler and to the executor in
//! one service param (`a2a-error-call`): the caller's scope (for [`Scoped`](super::scoped)),
//! the request's deadline (for [`Guarded`](crate::executor::Guarded), which runs in a task of the
//! handler's own where the task-local deadline does not reach), the request's link to its
//! execution (`link`) and its caller as the callers' budgets of `dependency` count it (the
//! scope's key, or the address's for a request without a credential). The bridge sets it on every request; a caller's header of the same
//! name is dropped first, so no caller can claim another's scope or link.
//!
//! One param, not one each: the SDK's handler copies every param (its name, its list and its
//! value: three allocations) into each execution's context, and three params were a tenth of
//! a SendMessage's allocations.

use std::sync::OnceLock;
use std::time::Duration;

use a2a_server::ServiceParams;
use tokio::time::Instant;

use super::scope_key::{ScopeKey, read as read_scope};

/// The instant the deadlines told here count from (this process's own clock: the executor
/// runs in the process that served the request).
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// The service param's name.
pub(crate) const CALL_PARAM: &str = "a2a-error-call";

/// A request as the bridge tells it: `<scope> <deadline> <link> <caller>`, the scope as its
/// key's 32 hex digits, the deadline as microseconds after [`epoch`], the link as its id and
/// the caller as its key's 32 hex digits, each of the last three `-` when there is none.
pub(crate) fn write(
    scope: ScopeKey,
    deadline: Option<Instant>,
    link: Option<u64>,
    caller: Option<u128>,
) -> String {
    // Made at its whole size at once: the keys' digits, two numbers and the spaces.
    let mut value = String::with_capacity(32 + 1 + 20 + 1 + 20 + 1 + 32);
    push_hex(&mut value, scope);
    value.push(' ');
    match deadline {
        Some(deadline) => {
            let micros = deadline.saturating_duration_since(epoch()).as_micros();
            let micros = u64::try_from(micros).unwrap_or(u64::MAX);
            value.push_str(itoa::Buffer::new().format(micros));
        }
        None => value.push('-'),
    }
    value.push(' ');
    match link {
        Some(link) => value.push_str(itoa::Buffer::new().format(link)),
        None => value.push('-'),
    }
    value.push(' ');
    match caller {
        Some(caller) => push_hex(&mut value, caller),
        None => value.push('-'),
    }
    value
}

/// Appends `key` as 32 lowercase hex digits.
fn push_hex(value: &mut String, key: u128) {
    let mut digits = [0u8; 32];
    a2a_error_runtime::wire::hex::write(&key.to_be_bytes(), &mut digits);
    // Hex digits are ASCII.
    value.push_str(std::str::from_utf8(&digits).unwrap_or_default());
}

/// What the bridge told of a request in `params`.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Call {
    /// The caller's scope (the anonymous caller's, `0`, when none was told).
    pub(crate) scope: ScopeKey,
    /// The request's deadline.
    pub(crate) deadline: Option<Instant>,
    /// The id of the request's link to its execution.
    pub(crate) link: Option<u64>,
    /// The request's caller as the callers' budgets count it, when the bridge told it apart
    /// from its scope (an anonymous caller of an execution: its address's key).
    pub(crate) caller: Option<u128>,
}

/// What the bridge told of the request `params` came with; nothing (the anonymous scope, no
/// deadline, no link) when it told nothing, as for an executor run by something else.
pub(crate) fn read(params: &ServiceParams) -> Call {
    params
        .get(CALL_PARAM)
        .and_then(|values| values.first())
        .and_then(|value| parse(value))
        .unwrap_or_default()
}

fn parse(value: &str) -> Option<Call> {
    let mut parts = value.split(' ');
    let scope = read_scope(parts.next()?)?;
    let deadline = match parts.next()? {
        "-" => None,
        micros => epoch().checked_add(Duration::from_micros(micros.parse().ok()?)),
    };
    let link = match parts.next()? {
        "-" => None,
        id => Some(id.parse().ok()?),
    };
    let caller = match parts.next()? {
        "-" => None,
        key => Some(read_scope(key)?),
    };
    Some(Call {
        scope,
        deadline,
        link,
        caller,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(value: &str) -> ServiceParams {
        ServiceParams::from([(CALL_PARAM.to_owned(), vec![value.to_owned()])])
    }

    #[test]
    fn what_is_written_is_read_back() {
        let scope = super::super::scope_key::key_of(Some("t:alice"));
        let deadline = epoch() + Duration::from_micros(1_234_567);
        for (deadline, link, caller) in [
            (None, None, None),
            (Some(deadline), None, Some(scope)),
            (None, Some(7), Some(u128::MAX)),
            (Some(deadline), Some(u64::MAX), None),
        ] {
            let call = read(&params(&write(scope, deadline, link, caller)));
            assert_eq!(
                call,
                Call {
                    scope,
                    deadline,
                    link,
                    caller,
                }
            );
        }
    }

    #[test]
    fn anything_else_is_the_anonymous_caller_with_no_deadline_and_no_link() {
        assert_eq!(read(&ServiceParams::new()), Call::default());
        for value in [
            "",
            "zz - -",
            "0 - - -",
            &format!("{} - -", "0".repeat(32)),
            &format!("{} x - -", "0".repeat(32)),
            &format!("{} - - 12", "0".repeat(32)),
            &format!("{} - 1 2", "0".repeat(31)),
        ] {
            assert_eq!(read(&params(value)), Call::default(), "{value:?}");
        }
    }
}
