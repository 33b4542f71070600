//! The main job's contract: `cargo run --example demo [-- --svg FILE]` runs its scenario on
//! loopback, prints plain lines when piped, ends with the table read from the metrics
//! recorder, and draws the run.

use std::process::Command;

/// The row of `agent` in the summary table: calls, attempts, retries, fail-fast,
/// transitions, errors.
fn row(output: &str, agent: &str) -> Vec<u64> {
    let line = output
        .lines()
        .find(|line| line.split_whitespace().next() == Some(agent))
        .unwrap_or_else(|| panic!("no row for {agent} in:\n{output}"));
    line.split_whitespace()
        .skip(1)
        .map(|n| n.parse().unwrap())
        .collect()
}

#[test]
fn demo_runs_its_scenario_and_draws_it() {
    let dir = std::env::temp_dir().join(format!("a2a-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let picture = dir.join("run.svg");
    let output = Command::new(crate::common::example_exe("demo"))
        .arg("--svg")
        .arg(&picture)
        .env_remove("CLICOLOR_FORCE")
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    // Piped: no colours, no progress line.
    assert!(
        !stdout.contains('\x1b'),
        "escape codes when piped:\n{stdout}"
    );
    assert!(
        !stderr.contains('\x1b'),
        "a progress line when piped:\n{stderr}"
    );
    // The panic's text stays in the agent's log: nothing of it on stderr (the default hook).
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        !stdout.contains("/srv/tools"),
        "a server's text was shown: {stdout}"
    );

    for expected in [
        // Backoff, then Retry-After.
        "hotels   attempt 1 failed (AGENT_UNAVAILABLE): retry in",
        "(exponential backoff with jitter)",
        "pricing  attempt 1 failed (RATE_LIMITED): retry in 1.00 s (Retry-After honoured)",
        "✔ pricing: €412 all-in",
        // The breaker opens, fails fast, half-opens, and opens again on a failed probe.
        "weather  circuit closed → open",
        "weather  fail-fast: circuit open, nothing sent",
        "✘ weather call 3: CircuitOpen: nothing sent",
        "weather  circuit open → half-open",
        "weather  circuit half-open → open",
        // Fan-out: 3 of 4, the weather from its fallback, visa cut by the deadline.
        "degraded: fallback answered from step \"cached forecast\" (#1)",
        "visa     served an attempt in",
        "caller went away: work stopped",
        "✘ visa: TIMEOUT",
        "✔ weather: sunny (yesterday's forecast) [degraded]",
        "✔ planner answered with 3 of 4 (degraded: true)",
        // The chain, typed at the client.
        "✘ planner: -32057 DOWNSTREAM_FAILED (planner.demo)",
        "└ below it: pricing failed with -32090 CARD_DECLINED (specialists.demo)",
        // The panic: logged, sanitized on the wire.
        "server log (never on the wire): handler panicked: index out of range",
        "✘ search: -32603 \"Internal error\", retryable: false; the secret in the panic reached the wire: no",
        // Models and tools: the provider's Retry-After, the fallback model, the tool's circuit.
        "model-a  attempt 1 failed (RATE_LIMITED): retry in 1.00 s (Retry-After honoured)",
        "degraded: fallback answered from step \"model-b\" (#1)",
        "✔ model-b: Rome: the Pantheon, the Forum, Trastevere [degraded]",
        "tool     circuit closed → open",
        "✔ tool call 4: CIRCUIT_OPEN → the agent answers without it [degraded]",
        // Streams: replaced before the first token; cut halfway, what was sent stands.
        "model-a  served an attempt in",
        "✔ stream 1 token 4: \" Trastevere\"",
        "✔ stream 1: COMPLETED after 4 tokens, answered by model-b [degraded]",
        "✔ stream 2 token 2: \" the Pantheon,\"",
        "✘ stream 2: FAILED -32062 MODEL_STREAM_INTERRUPTED (retryable: true); the 2 tokens sent stand",
        // Tools over MCP: one tool's circuit opens, the other tool of its server answers, and
        // a restarted server costs a new session, not a failed call.
        "tools/lookup circuit closed → open",
        "✔ lookup call 6: circuit open, nothing sent → the model is told \"tool unavailable\" [degraded]",
        "✔ weather, same server: the model is told \"tool: weather: rome\"",
        "✔ after a restart: 404 for the old session, session 2 started, the model is told \"tool: weather: rome\"",
        // Quotas: the replicas' shared statement; a caller over its budget, another served.
        "model-q  served an attempt in    0 ms: ok, 0 left",
        "✔ alice call 2: Rome: the Forum (60 tokens)",
        "✔ alice call 3: over her budget of 100 tokens a minute, nothing sent → -32052 RATE_LIMITED, retry in",
        "✔ bob call 1: Rome: the Forum (60 tokens)",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in:\n{stdout}"
        );
    }

    // With a Redis (the README's test command installs one), replica B learns from replica A
    // that model-q's quota is spent and sends it nothing; without, it learns from the 429.
    let redis = std::process::Command::new("redis-server")
        .arg("--version")
        .output()
        .is_ok();
    let replica_b = if redis {
        "✔ replica B: model-q not sent (its quota is spent until the reset, as replica A learned); model-c: Rome: the Forum [degraded]"
    } else {
        "✔ replica B: model-q got 1 request and refused it (429); model-c: Rome: the Forum [degraded]"
    };
    assert!(
        stdout.contains(replica_b),
        "missing {replica_b:?} in:\n{stdout}"
    );

    // The table, from the metrics recorder: calls, attempts, retries, fail-fast,
    // transitions, errors.
    let hotels = row(&stdout, "hotels");
    assert_eq!(hotels[0], 2, "{stdout}");
    assert_eq!(hotels[2], 4, "two failures before each answer: {stdout}");
    assert_eq!(hotels[5], 0);
    let pricing = row(&stdout, "pricing");
    assert_eq!((pricing[0], pricing[2], pricing[5]), (2, 1, 1), "{stdout}");
    let weather = row(&stdout, "weather");
    assert_eq!(
        weather[0], 5,
        "4 calls from the traveller, 1 from the planner: {stdout}"
    );
    assert_eq!(
        weather[3], 3,
        "three calls refused by the open circuit: {stdout}"
    );
    assert_eq!(weather[4], 3, "closed → open → half-open → open: {stdout}");
    assert_eq!(weather[5], 5, "{stdout}");
    let visa = row(&stdout, "visa");
    assert_eq!((visa[0], visa[5]), (1, 1), "{stdout}");
    let total = row(&stdout, "total");
    let sum: u64 = ["hotels", "planner", "pricing", "search", "visa", "weather"]
        .iter()
        .map(|agent| row(&stdout, agent)[1])
        .sum();
    assert_eq!(total[1], sum, "{stdout}");
    assert!(
        stdout.contains("degraded answers: 6 (fallback 5, fan_out 1)"),
        "{stdout}"
    );

    // The picture: a lane per agent, attempts in each outcome's colour, the deadline.
    let svg = std::fs::read_to_string(&picture).unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(200)]);
    let words = svg.split_whitespace().collect::<Vec<_>>().join(" ");
    for lane in [
        "planner", "search", "pricing", "hotels", "weather", "visa", "model-a", "model-b", "tool",
        "model-q", "model-c",
    ] {
        assert!(
            words.contains(&format!("> {lane} </text>")),
            "no lane {lane}"
        );
    }
    for mark in [
        "#2e9e44",      // answered
        "#e8a317",      // retryable error
        "#9b59b6",      // cancelled (visa)
        "#f4c542",      // Retry-After wait
        "circuit open", // a band
        "deadline",     // the dashed line
        "fail-fast, circuit open",
    ] {
        assert!(svg.contains(mark), "no {mark} in the picture");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn demo_usage_errors_exit_2() {
    for args in [&["--svg"][..], &["--bogus"][..]] {
        let status = Command::new(crate::common::example_exe("demo"))
            .args(args)
            .output()
            .unwrap()
            .status;
        assert_eq!(status.code(), Some(2), "{args:?}");
    }
}
