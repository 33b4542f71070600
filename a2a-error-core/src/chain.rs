//! Chains of agents: how a DOWNSTREAM_FAILED error names the agents below it, and how a
//! received one is read back as the [`Hop`]s from the outermost to the root cause.
//!
//! On the wire (A2A 1.0 profile), ErrorInfo `metadata` (all strings) carries:
//!
//! | key | value |
//! |---|---|
//! | `downstreamAgent` | the agent this one called, when it is named |
//! | `downstreamCode`, `downstreamReason`, `downstreamDomain` | what that agent failed with (a local failure has a reason such as `UNREACHABLE` and no domain) |
//! | `downstreamChain` | JSON text: `[{"agent","code","reason","domain"}, …]`, that agent first, the root cause last |
//! | `chainTruncated` | how many hops were left out (from the middle) to keep the limits |
//! | `retriesExhausted` | `"true"`: the layer below already retried; do not retry again |
//!
//! The legacy profile nests instead: `{"downstreamAgent": …, "downstreamError": {code,
//! message, data: {reason, domain, downstreamAgent, downstreamError: …}}}`.
//!
//! Nothing of a downstream's message or metadata is copied: only the fields above, each
//! string cut to [`MAX_FIELD_BYTES`], at most [`MAX_HOPS`] hops, and the whole error object
//! within [`MAX_ERROR_BYTES`] (hops are dropped from the middle until it fits, keeping the
//! agent called and the root cause).

use serde_json::{Map, Value, json};

use crate::object::ErrorObject;

/// The metadata keys of a chain, written once (the table above says what each holds).
pub mod key {
    /// The agent this one called.
    pub const AGENT: &str = "downstreamAgent";
    /// The legacy profile's nested error of that agent.
    pub const ERROR: &str = "downstreamError";
    /// The code that agent failed with.
    pub const CODE: &str = "downstreamCode";
    /// The reason that agent failed with.
    pub const REASON: &str = "downstreamReason";
    /// The domain that agent failed with.
    pub const DOMAIN: &str = "downstreamDomain";
    /// The hops, as JSON text.
    pub const CHAIN: &str = "downstreamChain";
    /// How many hops were left out.
    pub const TRUNCATED: &str = "chainTruncated";
    /// The layer below already retried.
    pub const RETRIES_EXHAUSTED: &str = "retriesExhausted";
}

/// The most hops a chain keeps (the agent called, the root cause, and those between).
pub const MAX_HOPS: usize = 8;
/// The longest agent name, reason or domain kept in a hop, in bytes.
pub const MAX_FIELD_BYTES: usize = 48;
/// The largest DOWNSTREAM_FAILED error object this crate writes, in bytes of JSON.
pub const MAX_ERROR_BYTES: usize = 2048;

/// One agent in a chain of failures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hop {
    /// The agent's name, when the agent that called it named it.
    pub agent: Option<String>,
    /// The code it failed with.
    pub code: i32,
    /// Its ErrorInfo reason, or a local failure's (`UNREACHABLE`, `TIMEOUT`, …).
    pub reason: String,
    /// Its ErrorInfo domain; `None` for a local failure.
    pub domain: Option<String>,
}

impl Hop {
    /// A hop with every string cut to [`MAX_FIELD_BYTES`].
    pub fn new(agent: Option<&str>, code: i32, reason: &str, domain: Option<&str>) -> Hop {
        Hop {
            agent: agent.map(cut),
            code,
            reason: cut(reason),
            domain: domain.filter(|d| !d.is_empty()).map(cut),
        }
    }

    /// The hop as one element of `downstreamChain`.
    pub fn to_json(&self) -> Value {
        let mut hop = Map::new();
        if let Some(agent) = &self.agent {
            hop.insert("agent".into(), agent.clone().into());
        }
        hop.insert("code".into(), self.code.into());
        hop.insert("reason".into(), self.reason.clone().into());
        if let Some(domain) = &self.domain {
            hop.insert("domain".into(), domain.clone().into());
        }
        Value::Object(hop)
    }

    fn from_json(value: &Value) -> Option<Hop> {
        let code = value
            .get("code")?
            .as_i64()
            .and_then(|c| i32::try_from(c).ok())?;
        Some(Hop::new(
            value.get("agent").and_then(Value::as_str),
            code,
            value.get("reason").and_then(Value::as_str).unwrap_or(""),
            value.get("domain").and_then(Value::as_str),
        ))
    }
}

/// `s` cut to [`MAX_FIELD_BYTES`] at a character boundary.
fn cut(s: &str) -> String {
    super::text::cut(s, MAX_FIELD_BYTES).to_owned()
}

/// The hops a received error object names, from the agent its sender called down to the root
/// cause; empty when it names none. Reads both profiles; hostile input gives at most
/// [`MAX_HOPS`] hops of bounded strings.
pub fn hops_of(object: &ErrorObject) -> Vec<Hop> {
    if let Some(Value::String(text)) = object.metadata_value(key::CHAIN)
        && let Ok(Value::Array(items)) = serde_json::from_str::<Value>(text)
    {
        // A hostile chain may be long: keep the first hops and the root cause.
        let mut hops: Vec<Hop> = items
            .iter()
            .take(MAX_HOPS - 1)
            .filter_map(Hop::from_json)
            .collect();
        if items.len() > MAX_HOPS - 1
            && let Some(root) = items.last().and_then(Hop::from_json)
        {
            hops.push(root);
        }
        return hops;
    }
    if let Some(data) = object.legacy_data()
        && data.contains_key(key::ERROR)
    {
        let mut hops = Vec::new();
        let mut level = data;
        while hops.len() < MAX_HOPS {
            let Some(error) = level.get(key::ERROR).and_then(Value::as_object) else {
                break;
            };
            let agent = level.get(key::AGENT).and_then(Value::as_str);
            let Some(code) = error
                .get("code")
                .and_then(Value::as_i64)
                .and_then(|c| i32::try_from(c).ok())
            else {
                break;
            };
            let inner = error.get("data").and_then(Value::as_object);
            let field = |key| inner.and_then(|d| d.get(key)).and_then(Value::as_str);
            let reason = field("reason")
                .or_else(|| crate::code::default_reason(code))
                .unwrap_or("UNKNOWN");
            hops.push(Hop::new(agent, code, reason, field("domain")));
            match inner {
                Some(inner) => level = inner,
                None => break,
            }
        }
        return hops;
    }
    let code = object
        .metadata_value(key::CODE)
        .and_then(Value::as_str)
        .and_then(|c| c.parse().ok());
    match code {
        Some(code) => {
            let text = |key| object.metadata_value(key).and_then(Value::as_str);
            vec![Hop::new(
                text(key::AGENT),
                code,
                text(key::REASON).unwrap_or("UNKNOWN"),
                text(key::DOMAIN),
            )]
        }
        None => Vec::new(),
    }
}

/// A chain cut to the limits: at most [`MAX_HOPS`] hops, dropping from the middle (the agent
/// called and the root cause stay). Returns how many were dropped.
pub fn cut_depth(hops: &mut Vec<Hop>, max: usize) -> usize {
    let max = max.max(2);
    if hops.len() <= max {
        return 0;
    }
    let dropped = hops.len() - max;
    hops.drain(max - 1..hops.len() - 1);
    dropped
}

/// The A2A 1.0 metadata fields naming `hops` (see the module docs), typed: the chain as an
/// array. `exhausted` adds `retriesExhausted`.
pub fn a2a_fields(hops: &[Hop], truncated: usize, exhausted: bool) -> Vec<(&'static str, Value)> {
    let mut fields = Vec::new();
    if let Some(first) = hops.first() {
        if let Some(agent) = &first.agent {
            fields.push((key::AGENT, json!(agent)));
        }
        fields.push((key::CODE, json!(first.code.to_string())));
        fields.push((key::REASON, json!(first.reason)));
        if let Some(domain) = &first.domain {
            fields.push((key::DOMAIN, json!(domain)));
        }
        let chain: Vec<Value> = hops.iter().map(Hop::to_json).collect();
        fields.push((key::CHAIN, Value::Array(chain)));
    }
    if truncated > 0 {
        fields.push((key::TRUNCATED, json!(truncated.to_string())));
    }
    if exhausted {
        fields.push((key::RETRIES_EXHAUSTED, json!("true")));
    }
    fields
}

/// The legacy nested form of `hops`: `downstreamAgent` and `downstreamError`, each level's
/// message the code table's (never the downstream's own text).
pub fn legacy_fields(
    hops: &[Hop],
    truncated: usize,
    exhausted: bool,
) -> Vec<(&'static str, Value)> {
    let mut nested: Option<(Option<String>, Value)> = None;
    for hop in hops.iter().rev() {
        let mut data = Map::new();
        data.insert("reason".into(), hop.reason.clone().into());
        if let Some(domain) = &hop.domain {
            data.insert("domain".into(), domain.clone().into());
        }
        if let Some((agent, error)) = nested.take() {
            if let Some(agent) = agent {
                data.insert(key::AGENT.into(), agent.into());
            }
            data.insert(key::ERROR.into(), error);
        }
        let message = crate::code::lookup(hop.code).map_or("Unknown error", |row| row.message);
        nested = Some((
            hop.agent.clone(),
            json!({"code": hop.code, "message": message, "data": data}),
        ));
    }
    let mut fields = Vec::new();
    if let Some((agent, error)) = nested {
        if let Some(agent) = agent {
            fields.push((key::AGENT, json!(agent)));
        }
        fields.push((key::ERROR, error));
    }
    if truncated > 0 {
        fields.push((key::TRUNCATED, json!(truncated)));
    }
    if exhausted {
        fields.push((key::RETRIES_EXHAUSTED, json!(true)));
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hop(agent: &str, code: i32, reason: &str) -> Hop {
        Hop::new(Some(agent), code, reason, Some("x.example"))
    }

    #[test]
    fn depth_is_cut_from_the_middle() {
        let mut hops: Vec<Hop> = (0..12)
            .map(|i| hop(&format!("a{i}"), -32057, "R"))
            .collect();
        assert_eq!(cut_depth(&mut hops, 8), 4);
        let names: Vec<_> = hops.iter().map(|h| h.agent.clone().unwrap()).collect();
        assert_eq!(names, ["a0", "a1", "a2", "a3", "a4", "a5", "a6", "a11"]);
    }

    #[test]
    fn long_fields_are_cut_at_a_char_boundary() {
        let long = "é".repeat(100);
        let hop = Hop::new(Some(&long), 1, &long, Some(&long));
        assert!(hop.agent.as_ref().unwrap().len() <= MAX_FIELD_BYTES);
        assert!(hop.reason.len() <= MAX_FIELD_BYTES);
    }

    #[test]
    fn legacy_nesting_reads_back() {
        let hops = vec![
            hop("b", -32057, "DOWNSTREAM_FAILED"),
            hop("c", -32053, "AGENT_UNAVAILABLE"),
        ];
        let mut data = Map::new();
        for (key, value) in legacy_fields(&hops, 0, true) {
            data.insert(key.into(), value);
        }
        let object = ErrorObject {
            data: Some(Value::Object(data)),
            ..ErrorObject::new(-32057, "m")
        };
        assert_eq!(hops_of(&object), hops);
    }
}
