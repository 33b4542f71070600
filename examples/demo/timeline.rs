//! What happened during the run, in order. The agents record each attempt they serve; a
//! `tracing` layer reads the library's own events (retries and their delays, breaker
//! transitions and rejections, degraded answers, a handler's panic). Each entry is printed as
//! it arrives and kept for the picture.

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anstyle::{AnsiColor, Style};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::Context;

/// How an attempt ended, as the agent that served it saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Answered.
    Ok,
    /// An error a retry may fix (503, 429).
    Retryable,
    /// An error no retry fixes.
    Failed,
    /// The caller went away (its deadline, or a fan-out that stopped waiting).
    Cancelled,
    /// The handler panicked.
    Panicked,
}

/// One thing that happened.
#[derive(Clone, Debug)]
pub enum Kind {
    /// A scenario step begins.
    Step { number: usize, title: String },
    /// An agent served one attempt, from `started` to the entry's time.
    Attempt {
        agent: String,
        started: Duration,
        outcome: Outcome,
        detail: String,
    },
    /// A client waits `delay` before calling `agent` again.
    Wait {
        agent: String,
        delay: Duration,
        retry_after: bool,
        reason: String,
        attempt: u64,
    },
    /// A circuit changed state.
    Breaker {
        agent: String,
        from: String,
        to: String,
    },
    /// An open circuit refused a call without sending it.
    FailFast {
        agent: String,
        retry_after: Duration,
    },
    /// A deadline: the call started at the entry's time must end by `at`.
    Deadline { agent: String, at: Duration },
    /// A fallback or fan-out answered without its primary.
    Degraded { what: String },
    /// A line of an agent's log (internal detail, never on the wire).
    ServerLog { text: String },
    /// What the client got, in the scenario's words.
    Result { ok: bool, text: String },
}

/// One entry: when, since the run began, and what.
#[derive(Clone, Debug)]
pub struct Entry {
    pub at: Duration,
    pub kind: Kind,
}

/// The shared record of the run, and the terminal it is printed on.
#[derive(Clone)]
pub struct Timeline {
    inner: Arc<Inner>,
}

struct Inner {
    start: Instant,
    entries: Mutex<Vec<Entry>>,
    bar: ProgressBar,
}

const DIM: Style = Style::new().dimmed();
const BOLD: Style = Style::new().bold();
const GREEN: Style = AnsiColor::Green.on_default();
const YELLOW: Style = AnsiColor::Yellow.on_default();
const RED: Style = AnsiColor::Red.on_default();
const CYAN: Style = AnsiColor::Cyan.on_default();
const MAGENTA: Style = AnsiColor::Magenta.on_default();

impl Timeline {
    /// A timeline of `steps` steps. The progress line is drawn only on a terminal.
    pub fn new(steps: u64) -> Self {
        let bar = ProgressBar::with_draw_target(Some(steps), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{spinner} step {pos}/{len} {elapsed:>3} {wide_msg}")
                .expect("a valid template"),
        );
        bar.enable_steady_tick(Duration::from_millis(100));
        Timeline {
            inner: Arc::new(Inner {
                start: Instant::now(),
                entries: Mutex::new(Vec::new()),
                bar,
            }),
        }
    }

    /// The time since the run began.
    pub fn now(&self) -> Duration {
        self.inner.start.elapsed()
    }

    /// Records and prints `kind`.
    pub fn push(&self, kind: Kind) {
        let entry = Entry {
            at: self.now(),
            kind,
        };
        let line = render(&entry);
        if let Kind::Step { number, title } = &entry.kind {
            self.inner.bar.set_position(*number as u64);
            self.inner.bar.set_message(title.clone());
        }
        self.inner
            .entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(entry);
        self.print(&line);
    }

    /// Prints a line above the progress line (or plainly when there is none).
    pub fn print(&self, line: &str) {
        self.inner.bar.suspend(|| anstream::println!("{line}"));
    }

    /// Removes the progress line.
    pub fn finish(&self) {
        self.inner.bar.finish_and_clear();
    }

    /// Everything recorded so far.
    pub fn entries(&self) -> Vec<Entry> {
        self.inner
            .entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Records an attempt served by `agent` when the returned guard is dropped: with the
    /// outcome set on it, or as cancelled (the handler was dropped) or panicked (unwinding).
    pub fn attempt(&self, agent: &str) -> AttemptGuard {
        AttemptGuard {
            timeline: self.clone(),
            agent: agent.to_owned(),
            started: self.now(),
            outcome: None,
        }
    }
}

/// An attempt being served; see [`Timeline::attempt`].
pub struct AttemptGuard {
    timeline: Timeline,
    agent: String,
    started: Duration,
    outcome: Option<(Outcome, String)>,
}

impl AttemptGuard {
    /// How the attempt ended.
    pub fn set(&mut self, outcome: Outcome, detail: impl Into<String>) {
        self.outcome = Some((outcome, detail.into()));
    }
}

impl Drop for AttemptGuard {
    fn drop(&mut self) {
        let (outcome, detail) = self.outcome.take().unwrap_or_else(|| {
            if std::thread::panicking() {
                (Outcome::Panicked, "handler panicked".to_owned())
            } else {
                (
                    Outcome::Cancelled,
                    "caller went away: work stopped".to_owned(),
                )
            }
        });
        self.timeline.push(Kind::Attempt {
            agent: std::mem::take(&mut self.agent),
            started: self.started,
            outcome,
            detail,
        });
    }
}

fn ms(duration: Duration) -> String {
    if duration >= Duration::from_secs(1) {
        format!("{:.2} s", duration.as_secs_f64())
    } else {
        format!("{} ms", duration.as_millis())
    }
}

fn render(entry: &Entry) -> String {
    let mut line = format!("{DIM}{:>7.3}s{DIM:#}  ", entry.at.as_secs_f64());
    let _ = match &entry.kind {
        Kind::Step { number, title } => {
            line.clear();
            write!(line, "\n{BOLD}{number}. {title}{BOLD:#}")
        }
        Kind::Attempt {
            agent,
            started,
            outcome,
            detail,
        } => {
            let style = match outcome {
                Outcome::Ok => GREEN,
                Outcome::Retryable => YELLOW,
                Outcome::Failed | Outcome::Panicked => RED,
                Outcome::Cancelled => MAGENTA,
            };
            write!(
                line,
                "{CYAN}{agent:<8}{CYAN:#} served an attempt in {:>7}: {style}{detail}{style:#}",
                ms(entry.at.saturating_sub(*started))
            )
        }
        Kind::Wait {
            agent,
            delay,
            retry_after,
            reason,
            attempt,
        } => {
            let why = if *retry_after {
                format!("{YELLOW}Retry-After honoured{YELLOW:#}")
            } else {
                "exponential backoff with jitter".to_owned()
            };
            write!(
                line,
                "{CYAN}{agent:<8}{CYAN:#} attempt {attempt} failed ({reason}): retry in {} ({why})",
                ms(*delay)
            )
        }
        Kind::Breaker { agent, from, to } => {
            let style = match to.as_str() {
                "open" | "isolated" => RED,
                "half-open" => YELLOW,
                _ => GREEN,
            };
            write!(
                line,
                "{CYAN}{agent:<8}{CYAN:#} circuit {from} → {style}{to}{style:#}"
            )
        }
        Kind::FailFast { agent, retry_after } => write!(
            line,
            "{CYAN}{agent:<8}{CYAN:#} {RED}fail-fast{RED:#}: circuit open, nothing sent (half-open in {})",
            ms(*retry_after)
        ),
        Kind::Deadline { agent, at } => write!(
            line,
            "{CYAN}{agent:<8}{CYAN:#} call sent with a deadline at {:.3}s (A2A-Deadline-Ms)",
            at.as_secs_f64()
        ),
        Kind::Degraded { what } => write!(line, "{MAGENTA}degraded{MAGENTA:#}: {what}"),
        Kind::ServerLog { text } => {
            write!(line, "{DIM}server log (never on the wire): {text}{DIM:#}")
        }
        Kind::Result { ok, text } => {
            let (style, mark) = if *ok { (GREEN, "✔") } else { (RED, "✘") };
            write!(line, "{style}{mark}{style:#} {text}")
        }
    };
    line
}

/// A `tracing` layer that turns the library's events into timeline entries.
pub struct Capture(pub Timeline);

#[derive(Default)]
struct Fields {
    message: String,
    values: HashMap<&'static str, String>,
}

impl Fields {
    fn get(&self, name: &str) -> String {
        self.values.get(name).cloned().unwrap_or_default()
    }

    fn millis(&self, name: &str) -> Duration {
        Duration::from_millis(self.get(name).parse().unwrap_or(0))
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.values.insert(field.name(), value.to_owned());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.values.insert(field.name(), value.to_string());
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.values.insert(field.name(), value.to_string());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            self.message = format!("{value:?}");
        } else {
            self.values.insert(field.name(), format!("{value:?}"));
        }
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Capture {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        // A call to an agent names it `agent`, a call to a model or tool `dependency`.
        let who = match fields.get("agent") {
            agent if agent.is_empty() => fields.get("dependency"),
            agent => agent,
        };
        let kind = match fields.message.as_str() {
            "retrying" => Kind::Wait {
                agent: who,
                delay: fields.millis("delay_ms"),
                retry_after: fields.get("delay.source") == "retry-after",
                reason: fields.get("error.type"),
                attempt: fields.get("http.request.resend_count").parse().unwrap_or(0),
            },
            "circuit breaker transition" => Kind::Breaker {
                agent: fields.get("agent"),
                from: fields.get("from"),
                to: fields.get("to"),
            },
            "call rejected: circuit open" => Kind::FailFast {
                agent: fields.get("agent"),
                retry_after: fields.millis("retry_after_ms"),
            },
            "degraded answer" => Kind::Degraded {
                what: format!(
                    "fallback answered from step {:?} (#{})",
                    fields.get("step"),
                    fields.get("index")
                ),
            },
            message if message.starts_with("handler panicked") => Kind::ServerLog {
                text: message.to_owned(),
            },
            _ => return,
        };
        self.0.push(kind);
    }
}
