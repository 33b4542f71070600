//! Which A2A versions a server speaks, and the one rule for reading a request's: the
//! `A2A-Version` header, or the assumed version when there is none. The JSON-RPC endpoint and
//! [`RequireVersionLayer`](super::rest::RequireVersionLayer) both go by it.

use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue};

use crate::wire::headers::VERSION_HEADER;

/// The versions served and the one assumed for a request without the header.
#[derive(Clone, Debug)]
pub(crate) struct Versions {
    served: Arc<[String]>,
    assumed: Arc<str>,
}

impl Default for Versions {
    fn default() -> Self {
        Versions {
            served: Arc::from(["1.0".to_owned()]),
            assumed: Arc::from("1.0"),
        }
    }
}

impl Versions {
    pub(crate) fn set_served<I: IntoIterator<Item = S>, S: Into<String>>(&mut self, versions: I) {
        self.served = versions.into_iter().map(Into::into).collect();
    }

    pub(crate) fn set_assumed(&mut self, version: &str) {
        self.assumed = Arc::from(version);
    }

    /// The version a request asks for: its header, trimmed (a value that is not text asks for
    /// no version anyone serves), or the assumed one.
    pub(crate) fn asked(&self, headers: &HeaderMap) -> Arc<str> {
        debug_assert!("a2a-version".eq_ignore_ascii_case(VERSION_HEADER));
        self.asked_by(crate::server::headers::Known::read(headers).version)
    }

    /// [`asked`](Self::asked), of the `A2A-Version` value a request sent, if any.
    pub(crate) fn asked_by(&self, value: Option<&HeaderValue>) -> Arc<str> {
        match value {
            Some(value) => match value.to_str().unwrap_or("").trim() {
                // The usual answer, without an allocation.
                asked if asked == &*self.assumed => Arc::clone(&self.assumed),
                asked => Arc::from(asked),
            },
            None => Arc::clone(&self.assumed),
        }
    }

    /// Whether `version` is served.
    pub(crate) fn serves(&self, version: &str) -> bool {
        self.served.iter().any(|served| served == version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn a_missing_header_means_the_assumed_version() {
        let mut versions = Versions::default();
        let none = HeaderMap::new();
        assert!(versions.serves(&versions.asked(&none)));
        let mut old = HeaderMap::new();
        old.insert(VERSION_HEADER, HeaderValue::from_static(" 0.3 "));
        assert_eq!(&*versions.asked(&old), "0.3");
        assert!(!versions.serves(&versions.asked(&old)));
        versions.set_assumed("0.3");
        assert!(!versions.serves(&versions.asked(&none)));
        versions.set_served(["1.0", "0.3"]);
        assert!(versions.serves(&versions.asked(&none)));
    }
}
