//! What protobuf's canonical JSON mapping writes differently from a generic conversion: the
//! SDK bridge and the gRPC client both write protobuf messages as the A2A JSON the other
//! bindings return.

/// Writes every integral double within ±2^53 (exact as an integer) as an integer.
pub(crate) fn integral_doubles_as_integers(value: &mut serde_json::Value) {
    use serde_json::Value;
    const EXACT: f64 = 9_007_199_254_740_992.0;
    match value {
        Value::Number(number) if number.is_f64() => {
            if let Some(double) = number.as_f64()
                && double.fract() == 0.0
                && double.abs() <= EXACT
            {
                // Exact: the double is integral and within ±2^53.
                *value = Value::from(double as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_doubles_as_integers),
        Value::Object(members) => members.values_mut().for_each(integral_doubles_as_integers),
        _ => {}
    }
}
