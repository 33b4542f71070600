//! The run as a picture (`--svg FILE`): a lane per agent with the attempts it served, the
//! callers' waits before each retry, its circuit's states, fail-fast rejections, and the
//! deadline. Drawn with the `svg` crate.

use std::collections::BTreeMap;
use std::time::Duration;

use svg::Document;
use svg::node::element::{Group, Line, Rectangle, Text, Title};

use crate::timeline::{Entry, Kind, Outcome};

const LANES: [&str; 11] = [
    "planner", "search", "pricing", "hotels", "weather", "visa", "model-a", "model-b", "tool",
    "model-q", "model-c",
];
const LEFT: f64 = 90.0;
const WIDTH: f64 = 1100.0;
const TOP: f64 = 60.0;
const LANE: f64 = 56.0;

fn colour(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Ok => "#2e9e44",
        Outcome::Retryable => "#e8a317",
        Outcome::Failed => "#d0362c",
        Outcome::Panicked => "#7d1d17",
        Outcome::Cancelled => "#9b59b6",
    }
}

fn text(x: f64, y: f64, size: u32, content: impl Into<String>) -> Text {
    Text::new(content)
        .set("x", x)
        .set("y", y)
        .set("font-size", size)
        .set("font-family", "sans-serif")
}

fn rect(x: f64, y: f64, width: f64, height: f64, fill: &str, tip: String) -> Rectangle {
    Rectangle::new()
        .set("x", x)
        .set("y", y)
        .set("width", width.max(1.5))
        .set("height", height)
        .set("fill", fill)
        .add(Title::new(tip))
}

/// A vertical line at `x` from `top` down through the last lane.
fn vline(x: f64, top: f64, stroke: &str) -> Line {
    Line::new()
        .set("x1", x)
        .set("x2", x)
        .set("y1", top)
        .set("y2", TOP + LANE * LANES.len() as f64)
        .set("stroke", stroke)
}

/// The picture of `entries`, over `length` of run.
pub fn draw(entries: &[Entry], length: Duration) -> Document {
    let span = length.as_secs_f64().max(0.001);
    let x = |t: Duration| LEFT + (WIDTH - LEFT - 70.0) * t.as_secs_f64() / span;
    let lane = |agent: &str| LANES.iter().position(|l| *l == agent);
    // Below the lanes: the legend, then the steps' titles two to a row.
    let steps = entries
        .iter()
        .filter(|entry| matches!(entry.kind, Kind::Step { .. }))
        .count();
    let height = TOP + LANE * LANES.len() as f64 + 90.0 + 16.0 * steps.div_ceil(2) as f64;
    let mut document = Document::new()
        .set("viewBox", (0, 0, WIDTH, height))
        .set("width", WIDTH)
        .set("height", height)
        .add(
            Rectangle::new()
                .set("width", "100%")
                .set("height", "100%")
                .set("fill", "white"),
        )
        .add(text(
            10.0,
            20.0,
            14,
            "a2a-error demo: attempts served per agent, retry waits, circuit states, deadline",
        ));

    // Seconds along the top, and a lane per agent.
    let mut axis = Group::new();
    for second in 0..=span.floor() as u64 {
        let at = x(Duration::from_secs(second));
        axis = axis.add(vline(at, TOP - 8.0, "#eeeeee")).add(text(
            at - 6.0,
            TOP - 12.0,
            10,
            format!("{second} s"),
        ));
    }
    for (i, name) in LANES.iter().enumerate() {
        let y = TOP + LANE * i as f64;
        axis = axis.add(text(10.0, y + 24.0, 13, *name)).add(
            Line::new()
                .set("x1", LEFT)
                .set("x2", WIDTH - 20.0)
                .set("y1", y + LANE)
                .set("y2", y + LANE)
                .set("stroke", "#dddddd"),
        );
    }
    document = document.add(axis);

    // Step numbers where each begins.
    let mut steps = Group::new();
    for entry in entries {
        if let Kind::Step { number, title } = &entry.kind {
            let at = x(entry.at);
            steps = steps
                .add(vline(at, TOP - 30.0, "#8888cc").set("stroke-dasharray", "2,3"))
                .add(
                    text(at + 3.0, TOP - 26.0, 11, format!("{number}"))
                        .add(Title::new(title.clone())),
                );
        }
    }
    document = document.add(steps);

    // Circuit states: a band under each lane, from each transition to the next.
    let mut states: BTreeMap<&str, Vec<(Duration, &str)>> = BTreeMap::new();
    for entry in entries {
        if let Kind::Breaker { agent, to, .. } = &entry.kind {
            states.entry(agent).or_default().push((entry.at, to));
        }
    }
    let mut bands = Group::new();
    for (agent, changes) in &states {
        let Some(i) = lane(agent) else { continue };
        let y = TOP + LANE * i as f64 + 42.0;
        for (n, (from, state)) in changes.iter().enumerate() {
            let until = changes.get(n + 1).map_or(length, |(t, _)| *t);
            let fill = match *state {
                "open" | "isolated" => "#d0362c",
                "half-open" => "#e8a317",
                _ => continue,
            };
            bands = bands.add(rect(
                x(*from),
                y,
                x(until) - x(*from),
                6.0,
                fill,
                format!("{agent} circuit {state} from {:.3} s", from.as_secs_f64()),
            ));
            // A label only where it fits.
            if x(until) - x(*from) > 80.0 {
                bands = bands.add(
                    text(x(*from) + 2.0, y + 15.0, 9, format!("circuit {state}")).set("fill", fill),
                );
            }
        }
    }
    document = document.add(bands);

    // Attempts, waits, rejections and the deadline.
    let mut marks = Group::new();
    for entry in entries {
        match &entry.kind {
            Kind::Attempt {
                agent,
                started,
                outcome,
                detail,
            } => {
                let Some(i) = lane(agent) else { continue };
                let y = TOP + LANE * i as f64 + 8.0;
                marks = marks.add(rect(
                    x(*started),
                    y,
                    x(entry.at) - x(*started),
                    22.0,
                    colour(*outcome),
                    format!(
                        "{agent}: {detail} ({:.3}–{:.3} s)",
                        started.as_secs_f64(),
                        entry.at.as_secs_f64()
                    ),
                ));
            }
            Kind::Wait {
                agent,
                delay,
                retry_after,
                reason,
                ..
            } => {
                let Some(i) = lane(agent) else { continue };
                let y = TOP + LANE * i as f64 + 33.0;
                let (fill, why) = if *retry_after {
                    ("#f4c542", "Retry-After")
                } else {
                    ("#9aa5b1", "backoff")
                };
                marks = marks.add(rect(
                    x(entry.at),
                    y,
                    x(entry.at + *delay) - x(entry.at),
                    5.0,
                    fill,
                    format!(
                        "{agent}: {why} wait of {} ms after {reason}",
                        delay.as_millis()
                    ),
                ));
            }
            Kind::FailFast { agent, .. } => {
                let Some(i) = lane(agent) else { continue };
                let y = TOP + LANE * i as f64 + 26.0;
                marks = marks.add(
                    text(x(entry.at) - 4.0, y, 16, "×")
                        .set("fill", "#d0362c")
                        .add(Title::new(format!("{agent}: fail-fast, circuit open"))),
                );
            }
            // A deadline past the end of the run (the call answered in time) is drawn at the end.
            Kind::Deadline { agent, at } => {
                let start = x(entry.at);
                let end = x((*at).min(length));
                let y = TOP + LANE * lane(agent).unwrap_or(0) as f64 + 4.0;
                marks = marks
                    .add(
                        Line::new()
                            .set("x1", start)
                            .set("x2", end)
                            .set("y1", y)
                            .set("y2", y)
                            .set("stroke", "#d0362c"),
                    )
                    .add(vline(end, TOP, "#d0362c").set("stroke-dasharray", "6,3"))
                    .add(text(end + 3.0, TOP + 10.0, 11, "deadline").set("fill", "#d0362c"));
            }
            _ => {}
        }
    }
    document = document.add(marks);

    // The legend.
    let y = TOP + LANE * LANES.len() as f64 + 25.0;
    let items = [
        ("#2e9e44", "answered"),
        ("#e8a317", "retryable error / half-open"),
        ("#d0362c", "final error / circuit open / deadline"),
        ("#7d1d17", "panic"),
        ("#9b59b6", "cancelled by the caller"),
        ("#9aa5b1", "backoff wait"),
        ("#f4c542", "Retry-After wait"),
    ];
    let mut legend = Group::new();
    let mut at = 10.0;
    for (fill, label) in items {
        legend = legend
            .add(
                Rectangle::new()
                    .set("x", at)
                    .set("y", y)
                    .set("width", 12)
                    .set("height", 12)
                    .set("fill", fill),
            )
            .add(text(at + 16.0, y + 10.0, 11, label));
        at += 22.0 + 6.2 * label.len() as f64;
    }
    legend = legend.add(text(
        10.0,
        y + 32.0,
        11,
        "× = a call refused by an open circuit, nothing sent; bands under a lane = its callers' circuit",
    ));
    let titles: Vec<String> = entries
        .iter()
        .filter_map(|entry| match &entry.kind {
            Kind::Step { number, title } => Some(format!("{number}. {title}")),
            _ => None,
        })
        .collect();
    for (n, title) in titles.iter().enumerate() {
        let column = (n % 2) as f64;
        let row = (n / 2) as f64;
        legend = legend.add(text(
            10.0 + column * 540.0,
            y + 52.0 + row * 16.0,
            11,
            title.clone(),
        ));
    }
    document.add(legend)
}
