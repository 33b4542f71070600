//! The tools a server listed: the first 64 valid names, each with its breaker and whether it
//! says it is idempotent. Any other name is `other`, so that no server can grow the breakers
//! or the series.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use serde::Deserialize;

use crate::resilience::BreakerSource;
use crate::resilience::breaker::CircuitBreaker;

/// How many tool names a server may make known.
pub const MAX_TOOLS: usize = 64;
/// The label (and the breaker) of every tool the server did not list.
const OTHER: &str = "other";

/// One known tool.
#[derive(Clone, Debug)]
pub(super) struct Tool {
    /// Its name, as labels carry it.
    pub(super) label: Arc<str>,
    pub(super) breaker: Option<CircuitBreaker>,
    /// Whether the server said calling it twice does no more than once (`idempotentHint`).
    pub(super) idempotent_hint: bool,
}

pub(super) struct Tools {
    server: Arc<str>,
    breakers: BreakerSource,
    known: RwLock<HashMap<Arc<str>, Tool>>,
    other: Tool,
}

impl std::fmt::Debug for Tools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tools")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl Tools {
    pub(super) fn new(server: Arc<str>, breakers: BreakerSource) -> Self {
        let other = Tool {
            label: Arc::from(OTHER),
            breaker: breakers.clone().breaker(&breaker_name(&server, OTHER)),
            idempotent_hint: false,
        };
        Tools {
            server,
            breakers,
            known: RwLock::default(),
            other,
        }
    }

    /// The tool called `name`: a listed one, else `other`.
    pub(super) fn get(&self, name: &str) -> Tool {
        let known = self.known.read().unwrap_or_else(|e| e.into_inner());
        known.get(name).unwrap_or(&self.other).clone()
    }

    /// The names known, in no order.
    pub(super) fn names(&self) -> Vec<String> {
        let known = self.known.read().unwrap_or_else(|e| e.into_inner());
        known.keys().map(|name| name.to_string()).collect()
    }

    /// Reads a page of a `tools/list` result: its valid names join the known ones, up to
    /// [`MAX_TOOLS`] in all (a breaker's state outlives a session); and where the listing goes
    /// on, and for how long it may be kept.
    pub(super) fn listed(&self, result: &str) -> Result<Page, serde_json::Error> {
        #[derive(Deserialize)]
        struct Listed {
            tools: FirstValid,
            #[serde(default, rename = "nextCursor")]
            next: Option<String>,
            #[serde(default, rename = "ttlMs")]
            ttl: Millis,
        }
        // Only the names and hints are read: a server's schemas are not kept.
        let listed: Listed = serde_json::from_str(result)?;
        let mut known = self.known.write().unwrap_or_else(|e| e.into_inner());
        let mut names = Vec::new();
        for tool in listed.tools.0 {
            let hint = tool.annotations.and_then(|a| a.idempotent_hint) == Some(true);
            if let Some(entry) = known.get_mut(&*tool.name) {
                entry.idempotent_hint = hint;
            } else if known.len() < MAX_TOOLS {
                let label: Arc<str> = Arc::from(tool.name.as_str());
                let breaker = self
                    .breakers
                    .clone()
                    .breaker(&breaker_name(&self.server, &label));
                known.insert(
                    label.clone(),
                    Tool {
                        label,
                        breaker,
                        idempotent_hint: hint,
                    },
                );
            } else {
                continue;
            }
            names.push(tool.name);
        }
        Ok(Page {
            names,
            next: listed.next.filter(|next| next.len() <= MAX_CURSOR_BYTES),
            ttl: listed.ttl.0,
        })
    }
}

/// The most pages one listing reads (`tools/list` with `nextCursor`): with the reply bound,
/// a listing costs at most 16 replies, and the names kept stay [`MAX_TOOLS`].
pub const MAX_PAGES: usize = 16;
/// The longest cursor sent back: a longer one ends the listing.
const MAX_CURSOR_BYTES: usize = 4096;

/// One page of a listing, as this client reads it.
pub(super) struct Page {
    /// The names it made known.
    pub(super) names: Vec<String>,
    /// The cursor of the next page, when there is one (and it is at most 4 KiB).
    pub(super) next: Option<String>,
    /// `ttlMs`, when the server gave a number (its milliseconds, not yet bounded).
    pub(super) ttl: Option<f64>,
}

/// A number of milliseconds, read leniently: anything but a JSON number is none (skipped
/// unread), so that a server's odd `ttlMs` does not lose its tools' names.
#[derive(Default)]
struct Millis(Option<f64>);

impl<'de> Deserialize<'de> for Millis {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Millis;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("milliseconds")
            }
            fn visit_u64<E>(self, v: u64) -> Result<Millis, E> {
                Ok(Millis(Some(v as f64)))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Millis, E> {
                Ok(Millis(Some(v as f64)))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Millis, E> {
                Ok(Millis(Some(v)))
            }
            fn visit_str<E>(self, _: &str) -> Result<Millis, E> {
                Ok(Millis(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Millis, E> {
                Ok(Millis(None))
            }
            fn visit_unit<E>(self) -> Result<Millis, E> {
                Ok(Millis(None))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Millis, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(Millis(None))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Millis, A::Error> {
                while map
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(Millis(None))
            }
        }
        deserializer.deserialize_any(Visit)
    }
}

#[derive(Deserialize)]
struct Listing {
    name: String,
    #[serde(default)]
    annotations: Option<Annotations>,
}

#[derive(Deserialize)]
struct Annotations {
    #[serde(default, rename = "idempotentHint")]
    idempotent_hint: Option<bool>,
}

/// The first [`MAX_TOOLS`] tools with a valid name, the rest skipped as they are parsed: a
/// listing of a million tools costs its bytes, not a million names.
struct FirstValid(Vec<Listing>);

impl<'de> Deserialize<'de> for FirstValid {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = FirstValid;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an array of tools")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<FirstValid, A::Error> {
                let mut kept = Vec::new();
                while kept.len() < MAX_TOOLS {
                    match seq.next_element::<Listing>()? {
                        Some(tool) if is_tool_name(&tool.name) => kept.push(tool),
                        Some(_) => {}
                        None => return Ok(FirstValid(kept)),
                    }
                }
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(FirstValid(kept))
            }
        }
        deserializer.deserialize_seq(Visit)
    }
}

/// A tool's breaker is named `{server}/{tool}` (in `a2a.breaker.*` and health replies).
fn breaker_name(server: &str, tool: &str) -> Arc<str> {
    Arc::from(format!("{server}/{tool}"))
}

/// A name MCP admits for a tool: 1 to 128 of ASCII letters, digits, `_`, `-` and `.`.
fn is_tool_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_64_valid_names_are_known_and_the_rest_are_other() {
        let tools = Tools::new(Arc::from("s"), BreakerSource::Own);
        let mut listed: Vec<_> = (0..100)
            .map(|i| serde_json::json!({"name": format!("t{i}")}))
            .collect();
        listed.insert(0, serde_json::json!({"name": "bad name\n"}));
        listed.insert(0, serde_json::json!({"name": "x".repeat(200)}));
        let result = serde_json::json!({ "tools": listed }).to_string();
        let names = tools.listed(&result).unwrap().names;
        assert_eq!(names.len(), MAX_TOOLS);
        assert_eq!(tools.names().len(), MAX_TOOLS);
        assert_eq!(&*tools.get("t0").label, "t0");
        assert_eq!(&*tools.get("t99").label, "other");
        assert_eq!(&*tools.get("bad name\n").label, "other");
        assert_eq!(tools.get("t0").breaker.unwrap().agent(), "s/t0");
    }

    #[test]
    fn the_idempotent_hint_is_read() {
        let tools = Tools::new(Arc::from("s"), BreakerSource::Off);
        let result = r#"{"tools":[{"name":"a","annotations":{"idempotentHint":true},"inputSchema":{}},{"name":"b"}]}"#;
        tools.listed(result).unwrap();
        assert!(tools.get("a").idempotent_hint);
        assert!(!tools.get("b").idempotent_hint);
        assert!(tools.get("a").breaker.is_none());
    }

    #[test]
    fn a_page_says_where_the_listing_goes_on_and_odd_members_lose_nothing() {
        let tools = Tools::new(Arc::from("s"), BreakerSource::Off);
        let page = tools
            .listed(r#"{"tools":[{"name":"a"}],"nextCursor":"p2","ttlMs":1500}"#)
            .unwrap();
        assert_eq!(
            (page.names, page.next.as_deref(), page.ttl),
            (vec!["a".to_owned()], Some("p2"), Some(1500.0))
        );
        for odd in [r#""soon""#, "-5", "[1,[2]]", r#"{"x":{}}"#, "null", "1e300"] {
            let result = format!(r#"{{"tools":[{{"name":"b"}}],"ttlMs":{odd}}}"#);
            let page = tools.listed(&result).unwrap();
            assert_eq!(page.names, ["b"], "{odd}");
            assert!(page.next.is_none());
        }
        let long = format!(r#"{{"tools":[],"nextCursor":"{}"}}"#, "c".repeat(5000));
        assert!(
            tools.listed(&long).unwrap().next.is_none(),
            "a cursor over 4 KiB ends it"
        );
    }
}
