//! The shipped alerting and recording rules (`deploy/prometheus/`), checked by `promtool`
//! and loaded by a real Prometheus that scrapes the example agent and coordinator while a
//! specialist is down: the series arrive, the recording rules compute, and the circuit-open
//! alert fires.
//!
//! `prometheus` and `promtool` come from Debian's `prometheus` package (the README's test
//! command installs it). Without them these tests fail and say how to install them;
//! `A2A_PROMETHEUS_SKIP=1` skips them on purpose, and each then prints `SKIPPED` on stderr.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::requests::{rpc, send};
use crate::common::{ExampleProcess, start_example};
use serde_json::Value;

fn rules_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/prometheus")
}

/// Whether these tests run: `false` (after saying so) when skipped on purpose.
fn wanted() -> bool {
    if std::env::var_os("A2A_PROMETHEUS_SKIP").is_some_and(|v| v == "1") {
        eprintln!("SKIPPED: Prometheus tests (A2A_PROMETHEUS_SKIP=1)");
        return false;
    }
    true
}

/// What to do when promtool or prometheus will not run.
const INSTALL: &str = "install Debian's prometheus package (`apt-get install -y prometheus`), \
                       or skip these tests on purpose with A2A_PROMETHEUS_SKIP=1";

fn promtool(args: &[&str]) -> (bool, String) {
    let output = Command::new("promtool")
        .args(args)
        .current_dir(rules_dir())
        .output()
        .unwrap_or_else(|error| panic!("cannot run promtool ({error}): {INSTALL}"));
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    (output.status.success(), text)
}

#[test]
fn the_rules_pass_promtool() {
    if !wanted() {
        return;
    }
    let (ok, text) = promtool(&["check", "rules", "rules.yml"]);
    assert!(ok, "{text}");
    // Each alert fires on the series that should page, and not before its `for`.
    let (ok, text) = promtool(&["test", "rules", "rules.test.yml"]);
    assert!(ok && text.contains("SUCCESS"), "{text}");
}

/// A Prometheus of the test's own on a free port, scraping `targets` every second and
/// evaluating the shipped rules every second; stopped when dropped.
struct Prometheus {
    _process: ExampleProcess,
    url: String,
    _dir: TempDir,
}

/// A directory removed when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Prometheus {
    fn start(targets: &[(&str, &str)]) -> Prometheus {
        let port = a2a_error_testkit::free_port();
        let dir = std::env::temp_dir().join(format!("a2a-prometheus-{port}"));
        std::fs::create_dir_all(&dir).unwrap();
        let dir = TempDir(dir);
        let jobs: String = targets
            .iter()
            .map(|(job, url)| {
                let host = url.trim_start_matches("http://");
                format!("  - job_name: {job}\n    static_configs:\n      - targets: ['{host}']\n")
            })
            .collect();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             rule_files:\n  - {}\nscrape_configs:\n{jobs}",
            rules_dir().join("rules.yml").display()
        );
        let config_file = dir.0.join("prometheus.yml");
        std::fs::write(&config_file, config).unwrap();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config_file.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.0.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start prometheus ({error}): {INSTALL}"));
        let process = ExampleProcess::from(child);
        crate::common::wait_until_listening(port, Duration::from_secs(30), "prometheus");
        Prometheus {
            _process: process,
            url: format!("http://127.0.0.1:{port}"),
            _dir: dir,
        }
    }

    async fn api(&self, path: &str, query: &[(&str, &str)]) -> Value {
        let reply: Value = reqwest::Client::new()
            .get(format!("{}/api/v1/{path}", self.url))
            .query(query)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(reply["status"], "success", "{reply}");
        reply["data"].clone()
    }

    /// The result of `query` once `ready` accepts it (scrapes and evaluations come every
    /// second), or a panic with the last one after 60 s.
    async fn until(&self, query: &str, ready: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let data = self.api("query", &[("query", query)]).await;
            let result = data["result"].as_array().cloned().unwrap_or_default();
            if ready(&result) {
                return result;
            }
            assert!(Instant::now() < deadline, "{query}: {result:?}");
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_real_prometheus_sees_the_series_and_fires_the_circuit_open_alert() {
    if !wanted() {
        return;
    }
    let (_down, down) = start_example("agent", &["--fail"]);
    let (_coordinator, coordinator) = start_example(
        "coordinator",
        &["--agent", &format!("down={down}/"), "--min-results", "1"],
    );
    let prometheus = Prometheus::start(&[("agent", &down), ("coordinator", &coordinator)]);
    // The specialist is down: its first call's four attempts fail, the next call's first
    // attempt is the fifth failure in a row and opens the circuit.
    for n in 0..3 {
        rpc(&format!("{coordinator}/"), send(n, &format!("m-{n}"), "hi")).await;
    }

    // The server duration of both jobs, by binding and method.
    let served = prometheus
        .until(
            r#"sum by (job, rpc_system_name, rpc_method) (rpc_server_call_duration_count)"#,
            |result| result.len() >= 2,
        )
        .await;
    for job in ["agent", "coordinator"] {
        assert!(
            served.iter().any(|series| series["metric"]["job"] == job
                && series["metric"]["rpc_system_name"] == "jsonrpc"
                && series["metric"]["rpc_method"] == "SendMessage"),
            "{job}: {served:?}"
        );
    }
    // The errors by reason, as the coordinator's caller and its specialist saw them.
    let errors = prometheus
        .until("a2a_server_errors", |result| result.len() >= 2)
        .await;
    assert!(
        errors
            .iter()
            .any(|series| series["metric"]["job"] == "agent"
                && series["metric"]["error_type"] == "AGENT_UNAVAILABLE"),
        "{errors:?}"
    );
    // The alert, firing, names the agent whose circuit is open.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let alerts = prometheus.api("alerts", &[]).await;
        let firing = alerts["alerts"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|alert| {
                alert["labels"]["alertname"] == "A2aCircuitOpen"
                    && alert["labels"]["agent"] == "down"
                    && alert["labels"]["job"] == "coordinator"
                    && alert["state"] == "firing"
            });
        if firing {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no A2aCircuitOpen firing: {alerts}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    // A recording rule over the scraped series: the coordinator's error ratio.
    let ratio = prometheus
        .until(
            r#"a2a:server_error_ratio:rate5m{job="coordinator"}"#,
            |result| !result.is_empty(),
        )
        .await;
    assert_eq!(ratio[0]["metric"]["rpc_method"], "SendMessage", "{ratio:?}");
}
