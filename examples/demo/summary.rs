//! The summary table, read from the metrics recorder: the numbers are the library's own
//! metrics (`a2a_error::observe`), not counters kept by the demo.

use std::collections::BTreeMap;

use metrics_util::CompositeKey;
use metrics_util::debugging::{DebugValue, Snapshotter};

/// One agent's row.
#[derive(Default, Debug, Clone, PartialEq)]
pub struct Row {
    /// Calls made to it (`rpc.client.call.duration` samples).
    pub calls: u64,
    /// Attempts in all (`a2a.client.attempts`, summed).
    pub attempts: u64,
    /// Retries (`a2a.client.retries`).
    pub retries: u64,
    /// Calls an open circuit refused (`a2a.breaker.rejections`).
    pub fail_fast: u64,
    /// Circuit state changes (`a2a.breaker.transitions`).
    pub transitions: u64,
    /// Calls that ended in an error (`a2a.client.errors`).
    pub errors: u64,
}

/// The table: a row per agent, and degraded answers by source (`a2a.degraded`).
#[derive(Default, Debug)]
pub struct Summary {
    pub rows: BTreeMap<String, Row>,
    pub degraded: BTreeMap<String, u64>,
}

fn label<'a>(key: &'a CompositeKey, name: &str) -> &'a str {
    key.key()
        .labels()
        .find(|label| label.key() == name)
        .map(|label| label.value())
        .unwrap_or("")
}

impl Summary {
    /// Reads the recorder.
    pub fn read(snapshotter: &Snapshotter) -> Self {
        let mut summary = Summary::default();
        for (key, _, _, value) in snapshotter.snapshot().into_vec() {
            let name = key.key().name();
            if name == "a2a.degraded" {
                if let DebugValue::Counter(n) = value {
                    *summary
                        .degraded
                        .entry(label(&key, "source").to_owned())
                        .or_default() += n;
                }
                continue;
            }
            let agent = label(&key, "agent");
            if agent.is_empty() {
                continue;
            }
            let row = summary.rows.entry(agent.to_owned()).or_default();
            match (name, value) {
                ("rpc.client.call.duration", DebugValue::Histogram(samples)) => {
                    row.calls += samples.len() as u64;
                }
                ("a2a.client.attempts", DebugValue::Histogram(samples)) => {
                    row.attempts += samples.iter().map(|v| v.into_inner() as u64).sum::<u64>();
                }
                ("a2a.client.retries", DebugValue::Counter(n)) => row.retries += n,
                ("a2a.breaker.rejections", DebugValue::Counter(n)) => row.fail_fast += n,
                ("a2a.breaker.transitions", DebugValue::Counter(n)) => row.transitions += n,
                ("a2a.client.errors", DebugValue::Counter(n)) => row.errors += n,
                _ => {}
            }
        }
        summary.rows.retain(|_, row| row.calls > 0);
        summary
    }

    /// The sum of every row.
    pub fn total(&self) -> Row {
        self.rows.values().fold(Row::default(), |mut sum, row| {
            sum.calls += row.calls;
            sum.attempts += row.attempts;
            sum.retries += row.retries;
            sum.fail_fast += row.fail_fast;
            sum.transitions += row.transitions;
            sum.errors += row.errors;
            sum
        })
    }

    /// The table as text.
    pub fn render(&self) -> String {
        let header = [
            "agent",
            "calls",
            "attempts",
            "retries",
            "fail-fast",
            "transitions",
            "errors",
        ];
        let mut out = format!(
            "{:<10}{:>7}{:>10}{:>9}{:>11}{:>13}{:>8}\n",
            header[0], header[1], header[2], header[3], header[4], header[5], header[6]
        );
        let total = self.total();
        let rows = self
            .rows
            .iter()
            .map(|(name, row)| (name.as_str(), row))
            .chain([("total", &total)]);
        for (name, row) in rows {
            out.push_str(&format!(
                "{:<10}{:>7}{:>10}{:>9}{:>11}{:>13}{:>8}\n",
                name,
                row.calls,
                row.attempts,
                row.retries,
                row.fail_fast,
                row.transitions,
                row.errors
            ));
        }
        let degraded: u64 = self.degraded.values().sum();
        let sources: Vec<String> = self
            .degraded
            .iter()
            .map(|(source, n)| format!("{source} {n}"))
            .collect();
        out.push_str(&format!(
            "degraded answers: {degraded} ({})\n",
            if sources.is_empty() {
                "none".to_owned()
            } else {
                sources.join(", ")
            }
        ));
        out
    }
}
