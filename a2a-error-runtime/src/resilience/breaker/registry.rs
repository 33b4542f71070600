//! `BreakerRegistry`: one circuit per agent, shared by every client that names it.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use super::{BreakerConfig, BreakerSnapshot, CircuitBreaker};

/// One [`CircuitBreaker`] per agent name, all made from one [`BreakerConfig`]. Clients built
/// with the same registry and agent name share a circuit; clones of the registry share the
/// map. The lock is taken when a breaker is looked up (when a client is built), never per
/// call.
#[derive(Clone, Default)]
pub struct BreakerRegistry {
    config: Arc<BreakerConfig>,
    breakers: Arc<Mutex<BTreeMap<Arc<str>, CircuitBreaker>>>,
}

impl fmt::Debug for BreakerRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BreakerRegistry")
            .field("config", &self.config)
            .field("agents", &self.agents())
            .finish()
    }
}

impl BreakerRegistry {
    /// A registry whose breakers follow `config`.
    pub fn new(config: BreakerConfig) -> Self {
        BreakerRegistry {
            config: Arc::new(config),
            breakers: Arc::default(),
        }
    }

    /// The breaker of `agent`, made on first use.
    pub fn get(&self, agent: &str) -> CircuitBreaker {
        let mut breakers = self.breakers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(breaker) = breakers.get(agent) {
            return breaker.clone();
        }
        let name: Arc<str> = agent.into();
        let breaker = CircuitBreaker::with_shared_config(name.clone(), self.config.clone());
        breakers.insert(name, breaker.clone());
        breaker
    }

    /// The agents that have a breaker, in name order.
    pub fn agents(&self) -> Vec<String> {
        let breakers = self.breakers.lock().unwrap_or_else(|e| e.into_inner());
        breakers.keys().map(|name| name.to_string()).collect()
    }

    /// Every circuit's state and counts, in agent-name order.
    pub fn snapshot(&self) -> Vec<(String, BreakerSnapshot)> {
        let breakers: Vec<CircuitBreaker> = {
            let map = self.breakers.lock().unwrap_or_else(|e| e.into_inner());
            map.values().cloned().collect()
        };
        breakers
            .iter()
            .map(|breaker| (breaker.agent().to_owned(), breaker.snapshot()))
            .collect()
    }
}
