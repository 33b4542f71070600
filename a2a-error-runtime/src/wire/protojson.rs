//! What protobuf's canonical JSON mapping writes differently from a generic conversion: the
//! SDK bridge and the gRPC client both write protobuf messages as the A2A JSON the other
//! bindings return.

use serde::{Serialize, Serializer};
use serde_json::{Number, Value};

/// The largest magnitude a double holds exactly as an integer: 2^53.
const EXACT: f64 = 9_007_199_254_740_992.0;

/// A double that is integral and within ±2^53, as that integer.
fn integral(number: &Number) -> Option<i64> {
    let double = number.as_f64().filter(|_| number.is_f64())?;
    (double.fract() == 0.0 && double.abs() <= EXACT).then_some(double as i64)
}

/// Writes every integral double within ±2^53 (exact as an integer) as an integer: what
/// [`Canonical`] writes, as a walk of its own (the test's reference).
#[cfg(test)]
fn integral_doubles_as_integers(value: &mut Value) {
    match value {
        Value::Number(number) => {
            if let Some(integer) = integral(number) {
                *value = Value::from(integer);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_doubles_as_integers),
        Value::Object(members) => members.values_mut().for_each(integral_doubles_as_integers),
        _ => {}
    }
}

/// A value serialized with every integral double within ±2^53 written as an integer, mended
/// while it is written: a reply is walked once, not once to mend and again to write.
pub(crate) struct Canonical<'a>(pub(crate) &'a Value);

impl Serialize for Canonical<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Number(number) => match integral(number) {
                Some(integer) => serializer.serialize_i64(integer),
                None => number.serialize(serializer),
            },
            Value::Array(items) => serializer.collect_seq(items.iter().map(Canonical)),
            Value::Object(members) => {
                serializer.collect_map(members.iter().map(|(name, value)| (name, Canonical(value))))
            }
            other => other.serialize(serializer),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_as_mended() {
        let value = serde_json::json!({
            "code": -32603.0, "ratio": 0.5, "big": 1e300, "edge": 9007199254740992.0,
            "past": 9007199254740994.0, "int": 7, "list": [1.0, {"deep": -2.0}, "3.0", null],
        });
        let mut mended = value.clone();
        integral_doubles_as_integers(&mut mended);
        assert_eq!(
            serde_json::to_string(&Canonical(&value)).unwrap(),
            serde_json::to_string(&mended).unwrap()
        );
        assert!(
            serde_json::to_string(&mended)
                .unwrap()
                .contains(r#""code":-32603,"#)
        );
    }
}
