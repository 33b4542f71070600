//! A service's quota as it states it on its replies (model providers' rate-limit headers), and
//! the pacing read from it: a call the stated quota has no room for is not sent before the
//! quota resets.
//!
//! Read from every reply, successes and refusals, whole and streamed:
//! - OpenAI: `x-ratelimit-remaining-requests`, `x-ratelimit-remaining-tokens`,
//!   `x-ratelimit-reset-requests`, `x-ratelimit-reset-tokens` (durations: `1s`, `6m0s`,
//!   `12ms`, `1m30.5s`); Azure OpenAI's the same, a negative value meaning unknown;
//! - Anthropic: `anthropic-ratelimit-requests-{remaining,reset}` and
//!   `anthropic-ratelimit-tokens-{remaining,reset}` (else the tightest of
//!   `…-input-tokens-…` and `…-output-tokens-…`), resets as RFC 3339 instants;
//! - the IETF draft: `RateLimit: "default";r=50;t=30` (requests remaining, seconds to reset),
//!   with `RateLimit-Policy: "default";q=100;w=60` giving the reset (the policy's window)
//!   when `t` is left out.
//!
//! A statement holds until its reset (at most a day ahead); one without a reset holds for a
//! second. Gemini states nothing: its 429s are read as every 429 is. With a [`SharedQuota`]
//! (feature `redis`) the statements are the replicas' together.

mod budget;
#[cfg(feature = "redis")]
mod shared;

pub(crate) use budget::Charge;
pub use budget::{CallerBudget, for_caller};
#[cfg(feature = "redis")]
use shared::Fleet;
#[cfg(feature = "redis")]
pub use shared::SharedQuota;

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, HeaderName};
use tokio::time::Instant;

use super::error::{HttpError, HttpFailure};
use crate::dependency::failure::Failure;

/// The furthest ahead a stated reset is believed.
const MAX_RESET: Duration = Duration::from_secs(24 * 60 * 60);
/// How long a remaining count stated without a reset is believed.
const UNDATED: Duration = Duration::from_secs(1);

/// The headers read, as names made once (a name given as text is parsed at every lookup):
/// each limit's remaining count and its reset.
const OPENAI_REQUESTS: [HeaderName; 2] = [
    HeaderName::from_static("x-ratelimit-remaining-requests"),
    HeaderName::from_static("x-ratelimit-reset-requests"),
];
const OPENAI_TOKENS: [HeaderName; 2] = [
    HeaderName::from_static("x-ratelimit-remaining-tokens"),
    HeaderName::from_static("x-ratelimit-reset-tokens"),
];
const ANTHROPIC_REQUESTS: [HeaderName; 2] = [
    HeaderName::from_static("anthropic-ratelimit-requests-remaining"),
    HeaderName::from_static("anthropic-ratelimit-requests-reset"),
];
const ANTHROPIC_TOKENS: [HeaderName; 2] = [
    HeaderName::from_static("anthropic-ratelimit-tokens-remaining"),
    HeaderName::from_static("anthropic-ratelimit-tokens-reset"),
];
const ANTHROPIC_INPUT_TOKENS: [HeaderName; 2] = [
    HeaderName::from_static("anthropic-ratelimit-input-tokens-remaining"),
    HeaderName::from_static("anthropic-ratelimit-input-tokens-reset"),
];
const ANTHROPIC_OUTPUT_TOKENS: [HeaderName; 2] = [
    HeaderName::from_static("anthropic-ratelimit-output-tokens-remaining"),
    HeaderName::from_static("anthropic-ratelimit-output-tokens-reset"),
];
const IETF: HeaderName = HeaderName::from_static("ratelimit");
const IETF_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");

/// What one reply stated: for requests and for tokens, what remains and when it resets.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Stated {
    pub(crate) requests: Option<Window>,
    pub(crate) tokens: Option<Window>,
}

/// One limit as stated: what remains, and how long until it is whole again.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Window {
    pub(crate) remaining: u64,
    pub(crate) reset: Option<Duration>,
}

impl Stated {
    /// Reads `headers` (every format above), `now` the wall clock for Anthropic's instants.
    pub(crate) fn read(headers: &HeaderMap, now: SystemTime) -> Stated {
        // One pass over the names first: most services state nothing, and a reply's few
        // headers cost less to look over than a dozen lookups.
        let states = headers.keys().any(|name| {
            let name = name.as_str();
            name.starts_with("x-ratelimit-")
                || name.starts_with("anthropic-ratelimit-")
                || name == "ratelimit"
        });
        if !states {
            return Stated::default();
        }
        let text = |name: &HeaderName| headers.get(name).and_then(|value| value.to_str().ok());
        let window = |remaining: &HeaderName, reset: Option<Duration>| {
            let remaining = text(remaining)?.trim().parse::<i64>().ok()?;
            // Azure's negative values mean "unknown".
            let remaining = u64::try_from(remaining).ok()?;
            Some(Window { remaining, reset })
        };
        let openai = |[remaining, reset]: &[HeaderName; 2]| {
            window(remaining, text(reset).and_then(go_duration))
        };
        let anthropic = |[remaining, reset]: &[HeaderName; 2]| {
            window(
                remaining,
                text(reset).and_then(|instant| until(instant, now)),
            )
        };
        Stated {
            requests: openai(&OPENAI_REQUESTS)
                .or_else(|| anthropic(&ANTHROPIC_REQUESTS))
                .or_else(|| text(&IETF).and_then(|field| ietf(field, text(&IETF_POLICY)))),
            tokens: openai(&OPENAI_TOKENS)
                .or_else(|| anthropic(&ANTHROPIC_TOKENS))
                .or_else(|| {
                    tightest(
                        anthropic(&ANTHROPIC_INPUT_TOKENS),
                        anthropic(&ANTHROPIC_OUTPUT_TOKENS),
                    )
                }),
        }
    }

    /// Whether the reply stated anything.
    pub(crate) fn is_empty(&self) -> bool {
        self.requests.is_none() && self.tokens.is_none()
    }
}

/// The lower of two stated limits.
fn tightest(a: Option<Window>, b: Option<Window>) -> Option<Window> {
    match (a, b) {
        (Some(a), Some(b)) if b.remaining < a.remaining => Some(b),
        (Some(a), _) => Some(a),
        (None, b) => b,
    }
}

/// A Go-style duration (`1s`, `6m0s`, `12ms`, `1m30.5s`, `2h`): `None` when it is not one,
/// bounded by a day.
fn go_duration(text: &str) -> Option<Duration> {
    let mut rest = text.trim();
    if rest.is_empty() || rest.len() > 64 {
        return None;
    }
    let mut seconds = 0.0_f64;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .filter(|end| *end > 0)?;
        let value: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        seconds += value * scale;
        rest = &rest[unit_end..];
    }
    seconds
        .is_finite()
        .then(|| Duration::from_secs_f64(seconds.min(MAX_RESET.as_secs_f64())))
}

/// The time from `now` until an RFC 3339 instant (zero once passed), bounded by a day.
fn until(instant: &str, now: SystemTime) -> Option<Duration> {
    let at = chrono::DateTime::parse_from_rfc3339(instant.trim()).ok()?;
    let at = SystemTime::from(at.with_timezone(&chrono::Utc));
    Some(at.duration_since(now).unwrap_or_default().min(MAX_RESET))
}

/// The IETF draft's `RateLimit` field: the first policy's `r` (remaining) and `t` (seconds to
/// reset), as requests; without `t`, the window (`w`) of the policy of that name in
/// `RateLimit-Policy` (`policies`), when it names one.
fn ietf(field: &str, policies: Option<&str>) -> Option<Window> {
    let first = field.split(',').next()?;
    let name = first.split(';').next()?.trim();
    let mut remaining = None;
    let mut reset = parameter(first, "t");
    for parameter in first.split(';').skip(1) {
        let (key, value) = parameter.trim().split_once('=')?;
        if key.trim() == "r" {
            remaining = value.trim().parse::<u64>().ok();
        }
    }
    if reset.is_none() {
        reset = policies.and_then(|policies| {
            policies
                .split(',')
                .find(|policy| policy.split(';').next().map(str::trim) == Some(name))
                .and_then(|policy| parameter(policy, "w"))
        });
    }
    Some(Window {
        remaining: remaining?,
        reset: reset.map(|secs| Duration::from_secs(secs).min(MAX_RESET)),
    })
}

/// The whole-number parameter `key` of one structured-field item (`"name";key=30`).
fn parameter(item: &str, key: &str) -> Option<u64> {
    item.split(';').skip(1).find_map(|parameter| {
        let (name, value) = parameter.trim().split_once('=')?;
        (name.trim() == key).then(|| value.trim().parse().ok())?
    })
}

/// A service's quota as last stated, less what the calls in flight were admitted with.
#[derive(Debug, Default)]
pub(crate) struct Quota {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    requests: Limit,
    tokens: Limit,
    /// When the statement kept was made (wall clock: replicas compare theirs by it).
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    stated_at: Option<SystemTime>,
}

/// One limit as this client keeps it.
#[derive(Debug, Default)]
struct Limit {
    /// What remains and until when that holds (none: not stated, or its reset passed).
    stated: Option<(u64, Instant)>,
    /// What the calls in flight (admitted, their reply not yet read) were admitted with: not
    /// yet in what the provider states, so counted against it here.
    taken: u64,
    /// What the other replicas' calls in flight were admitted with, as last read (shared
    /// quotas only).
    others: u64,
}

impl Limit {
    fn update(&mut self, window: Option<Window>, now: Instant) {
        let Some(window) = window else { return };
        let until = now + window.reset.unwrap_or(UNDATED);
        self.stated = Some((window.remaining, until));
    }

    /// When a call needing `need` may be sent: now (`None`), or at the reset.
    fn room(&mut self, need: u64, now: Instant) -> Option<Instant> {
        let (remaining, until) = self.stated?;
        if until <= now {
            self.stated = None;
            return None;
        }
        let in_flight = self.taken.saturating_add(self.others);
        (remaining.saturating_sub(in_flight) < need.max(1)).then_some(until)
    }
}

/// Whether a call may be sent.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Room {
    /// Now (what it needs is counted as taken).
    Now,
    /// Not before this instant.
    At(Instant),
}

impl Quota {
    /// A call admitted with `tokens` has its reply: it no longer counts against the quota
    /// (what it used is in the provider's next statement).
    pub(crate) fn done(&self, tokens: u64) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.requests.taken = state.requests.taken.saturating_sub(1);
        state.tokens.taken = state.tokens.taken.saturating_sub(tokens);
    }

    /// A reply stated `stated`, now.
    pub(crate) fn observe(&self, stated: Stated) {
        if stated.is_empty() {
            return;
        }
        let now = Instant::now();
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.requests.update(stated.requests, now);
        state.tokens.update(stated.tokens, now);
        state.stated_at = Some(SystemTime::now());
    }

    /// Another replica's statement, made at `at`: kept when it is newer than this one's, its
    /// resets measured from `at`.
    #[cfg(feature = "redis")]
    pub(crate) fn adopt(&self, stated: Stated, at: SystemTime) {
        let wall = SystemTime::now();
        let now = Instant::now();
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.stated_at.is_some_and(|ours| ours >= at) {
            return;
        }
        let from_now = |window: Option<Window>| {
            window.map(|window| Window {
                remaining: window.remaining,
                reset: Some(
                    (at + window.reset.unwrap_or(UNDATED))
                        .duration_since(wall)
                        .unwrap_or_default(),
                ),
            })
        };
        state.requests.update(from_now(stated.requests), now);
        state.tokens.update(from_now(stated.tokens), now);
        state.stated_at = Some(at);
    }

    /// The other replicas' calls in flight (`flight`: each one's admission, as Unix ms, and
    /// tokens): those admitted after the statement this replica holds was made are not in
    /// it (the provider counted the earlier ones when it made it).
    #[cfg(feature = "redis")]
    pub(crate) fn others_in_flight(&self, flight: &[(u64, u64)]) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let since = state.stated_at.map_or(0, shared::unix_ms);
        let (mut requests, mut tokens) = (0u64, 0u64);
        for (admitted, estimate) in flight {
            if *admitted > since {
                requests += 1;
                tokens = tokens.saturating_add(*estimate);
            }
        }
        state.requests.others = requests;
        state.tokens.others = tokens;
    }

    /// Whether a call estimated at `tokens` may be sent now (then it is counted), or when.
    pub(crate) fn room(&self, tokens: u64) -> Room {
        let now = Instant::now();
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let requests = state.requests.room(1, now);
        let tokens_at = state.tokens.room(tokens, now);
        match requests.max(tokens_at) {
            Some(at) => Room::At(at),
            None => {
                state.requests.taken += 1;
                state.tokens.taken = state.tokens.taken.saturating_add(tokens);
                Room::Now
            }
        }
    }

    /// What was last stated and still holds: requests and tokens remaining (for metrics).
    pub(crate) fn remaining(&self) -> (Option<u64>, Option<u64>) {
        let now = Instant::now();
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let left = |limit: &Limit| {
            limit
                .stated
                .filter(|(_, until)| *until > now)
                .map(|(remaining, _)| {
                    remaining.saturating_sub(limit.taken.saturating_add(limit.others))
                })
        };
        (left(&state.requests), left(&state.tokens))
    }
}

/// The longest a call without a deadline waits for its quota's reset (less when its total
/// timeout is shorter).
pub(crate) const NO_DEADLINE_WAIT: Duration = Duration::from_secs(30);

/// A dependency's calls paced by its stated quota: the quota, whether a call waits for a reset at all, and the longest a call without a deadline waits.
pub(crate) struct Pacing {
    pub(crate) quota: Quota,
    pub(crate) waits: bool,
    pub(crate) longest_wait: Duration,
    pub(crate) name: Arc<str>,
    /// The remaining requests' and tokens' gauges, each registered on the first statement of
    /// its limit (a gauge's key is built and looked up once, not on every reply; a limit
    /// never stated has no series, rather than one reading 0).
    pub(crate) gauges: [std::sync::OnceLock<metrics::Gauge>; 2],
    /// Where the replicas share their statements, when they do.
    #[cfg(feature = "redis")]
    pub(crate) shared: Option<SharedQuota>,
    /// This replica's calls counted in the replicas' calls in flight whose reply came, not
    /// yet counted out there: the next call's read counts them out in its own pipeline (so
    /// that it never reads this replica's finished calls as another's in flight), or a flush
    /// shortly after when no call comes.
    #[cfg(feature = "redis")]
    pub(crate) owed: Owed,
}

/// This replica's calls in the replicas' calls in flight: its own mark (telling its calls
/// from the others'), the next call's number, the finished calls to count out, and whether a
/// flush of them is on its way.
#[cfg(feature = "redis")]
#[derive(Debug)]
pub(crate) struct Owed {
    replica: u64,
    next: std::sync::atomic::AtomicU64,
    calls: Mutex<Vec<String>>,
    flushing: std::sync::atomic::AtomicBool,
}

#[cfg(feature = "redis")]
impl Default for Owed {
    fn default() -> Self {
        Owed {
            replica: fastrand::u64(..),
            next: std::sync::atomic::AtomicU64::new(0),
            calls: Mutex::default(),
            flushing: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

#[cfg(feature = "redis")]
impl Owed {
    /// A new call's member in the replicas' calls in flight: `{replica}:{number}:{tokens}`.
    pub(crate) fn member(&self, tokens: u64) -> String {
        let number = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("{:x}:{number}:{tokens}", self.replica)
    }

    /// Whether `member` is one of this replica's calls.
    pub(crate) fn is_own(&self, member: &str) -> bool {
        member
            .split(':')
            .next()
            .and_then(|mark| u64::from_str_radix(mark, 16).ok())
            == Some(self.replica)
    }
}

/// How long finished calls wait to be counted out with the next call's read before they are
/// flushed on their own.
#[cfg(feature = "redis")]
const FLUSH_AFTER: Duration = Duration::from_millis(50);

#[cfg(feature = "redis")]
impl Pacing {
    /// A call counted in the replicas' calls in flight as `member` is done.
    fn owe(self: &Arc<Self>, member: String) {
        use std::sync::atomic::Ordering;
        self.owed
            .calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(member);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self.owed.flushing.swap(true, Ordering::AcqRel) {
            return;
        }
        let this = Arc::clone(self);
        runtime.spawn(async move {
            tokio::time::sleep(FLUSH_AFTER).await;
            this.owed.flushing.store(false, Ordering::Release);
            let owed = this.take_owed();
            if !owed.is_empty()
                && let Some(shared) = &this.shared
            {
                shared.flight_out(&this.name, owed);
            }
        });
    }

    /// What is owed, now counted out by the caller of this.
    fn take_owed(&self) -> Vec<String> {
        std::mem::take(&mut *self.owed.calls.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// What a read that failed took: owed again.
    fn owe_again(&self, owed: Vec<String>) {
        self.owed
            .calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(owed);
    }
}

impl std::fmt::Debug for Pacing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pacing")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Pacing {
    /// The pacing of service `name`'s calls: whether a call waits for a reset (`waits`) and
    /// the longest a call without a deadline waits, its statements shared through `shared`.
    pub(crate) fn new(
        name: Arc<str>,
        waits: bool,
        longest_wait: Duration,
        #[cfg(feature = "redis")] shared: Option<SharedQuota>,
    ) -> Self {
        Pacing {
            quota: Quota::default(),
            waits,
            longest_wait,
            name,
            gauges: Default::default(),
            #[cfg(feature = "redis")]
            shared,
            #[cfg(feature = "redis")]
            owed: Default::default(),
        }
    }

    /// Keeps what a reply's head stated.
    pub(crate) fn observe(&self, headers: &HeaderMap) {
        let at = SystemTime::now();
        let stated = Stated::read(headers, at);
        if stated.is_empty() {
            return;
        }
        self.quota.observe(stated);
        #[cfg(feature = "redis")]
        if let Some(shared) = &self.shared {
            shared.publish(&self.name, stated, at);
        }
        let (requests, tokens) = self.quota.remaining();
        let limits = [("requests", requests), ("tokens", tokens)];
        for (gauge, (limit, remaining)) in self.gauges.iter().zip(limits) {
            if let Some(remaining) = remaining {
                gauge
                    .get_or_init(|| crate::observe::quota_gauge(&self.name, limit))
                    .set(remaining as f64);
            }
        }
    }

    /// Waits until the stated quota has room for `call`, or refuses it unsent when the
    /// reset comes after the call's deadline. The call counts against the quota while the
    /// ticket lives (until its reply is read).
    /// `fleet`: what the replicas share, as read by [`Admission`] (this call counted in their
    /// calls in flight when it was read).
    pub(crate) async fn admit(
        self: &Arc<Self>,
        tokens: u64,
        #[cfg(feature = "redis")] fleet: Fleet,
    ) -> Result<Ticket, HttpError> {
        #[cfg(feature = "redis")]
        let in_fleet = fleet.flight.is_some();
        #[cfg(feature = "redis")]
        {
            if let Some((stated, at)) = fleet.stated {
                self.quota.adopt(stated, at);
            }
            if let Some(flight) = &fleet.flight {
                self.quota.others_in_flight(flight);
            }
        }
        // Counted out of the replicas' calls in flight however this ends.
        let ticket = Ticket {
            pacing: Arc::clone(self),
            tokens,
            #[cfg(feature = "redis")]
            member: fleet.member.filter(|_| in_fleet),
            admitted: false,
        };
        let mut waited = false;
        loop {
            let at = match self.quota.room(tokens) {
                Room::Now => {
                    if waited {
                        crate::observe::quota_held(&self.name, "waited");
                    }
                    let mut ticket = ticket;
                    ticket.admitted = true;
                    return Ok(ticket);
                }
                Room::At(at) => at,
            };
            let now = Instant::now();
            let deadline = match crate::deadline::for_downstream() {
                Ok(Some(deadline)) => deadline,
                Ok(None) => now + self.longest_wait,
                Err(()) => now,
            };
            if !self.waits || at > deadline {
                // Not waiting for the reset is for a dependency with somewhere else to go.
                let outcome = if self.waits {
                    "refused"
                } else {
                    "sent_elsewhere"
                };
                crate::observe::quota_held(&self.name, outcome);
                // Whole seconds, rounded up: a caller told to wait never comes back early.
                let whole = crate::wire::headers::whole_seconds_up(at - now);
                return Err(Failure::Failed(HttpFailure::Paced {
                    reset_in: Duration::from_secs(whole),
                }));
            }
            waited = true;
            tokio::time::sleep_until(at).await;
        }
    }
}

/// How a service's calls are admitted: each caller's budget (when one is given) and the
/// service's stated quota (when its calls are paced by it), a call's tokens estimated once
/// for both, and what is shared on Redis read in one round trip for both.
pub(crate) struct Admission {
    pub(crate) pacing: Option<Arc<Pacing>>,
    pub(crate) budget: Option<CallerBudget>,
    /// The output tokens a call is estimated at when its body names no maximum.
    pub(crate) expected_output: u64,
    pub(crate) name: Arc<str>,
}

impl Admission {
    /// Admits a call of `body` made for `caller` (the request being served's, if any):
    /// within the caller's budget (refused unsent past it), then once the stated quota has
    /// room for it. The call counts against both while what is returned lives.
    pub(crate) async fn admit(
        &self,
        body: Option<&[u8]>,
        caller: Option<u128>,
    ) -> Result<Admitted, HttpError> {
        let tokens = estimate(body, self.expected_output);
        let budget = self.budget.as_ref().zip(caller);
        let pending = match budget {
            Some((budget, caller)) => Some(
                budget
                    .begin(caller, tokens)
                    .map_err(|frees_in| self.over_budget(budget, frees_in))?,
            ),
            None => None,
        };
        #[cfg(feature = "redis")]
        let (fleet, counts) = self.read_shared(tokens, pending.as_ref()).await;
        #[cfg(not(feature = "redis"))]
        let counts = None;
        let charge = match (budget, pending) {
            (Some((budget, _)), Some(pending)) => match budget.finish(pending, counts) {
                Ok(charge) => Some(charge),
                Err(frees_in) => {
                    // Not sent: counted out of the replicas' calls in flight again.
                    #[cfg(feature = "redis")]
                    if fleet.flight.is_some()
                        && let (Some(pacing), Some(member)) = (&self.pacing, fleet.member)
                    {
                        pacing.owe(member);
                    }
                    return Err(self.over_budget(budget, frees_in));
                }
            },
            _ => None,
        };
        let ticket = match &self.pacing {
            Some(pacing) => {
                #[cfg(feature = "redis")]
                let admitted = pacing.admit(tokens, fleet).await;
                #[cfg(not(feature = "redis"))]
                let admitted = pacing.admit(tokens).await;
                match admitted {
                    Ok(ticket) => Some(ticket),
                    Err(refused) => {
                        // Not sent: nothing used.
                        if let Some(charge) = charge {
                            charge.settle(0);
                        }
                        return Err(refused);
                    }
                }
            }
            None => None,
        };
        Ok(Admitted {
            charge,
            _ticket: ticket,
        })
    }

    fn over_budget(&self, budget: &CallerBudget, frees_in: Duration) -> HttpError {
        crate::observe::budget_refused(&self.name);
        Failure::Failed(budget.refusal(frees_in))
    }

    /// What the replicas share of the stated quota and of the caller's budget: one round
    /// trip when both are kept in one Redis (two when in two).
    #[cfg(feature = "redis")]
    async fn read_shared(
        &self,
        tokens: u64,
        pending: Option<&budget::Pending>,
    ) -> (Fleet, Option<[u64; budget::SLOTS]>) {
        let quota = self
            .pacing
            .as_ref()
            .and_then(|pacing| pacing.shared.as_ref());
        let budget = self
            .budget
            .as_ref()
            .zip(pending)
            .and_then(|(b, p)| b.shared_read(p));
        // This call counted in, and this replica's finished calls counted out, in the same
        // pipeline.
        let (owed, member) = match (&self.pacing, quota) {
            (Some(pacing), Some(_)) => (pacing.take_owed(), Some(pacing.owed.member(tokens))),
            _ => (Vec::new(), None),
        };
        let own = self.pacing.as_ref().map(|pacing| &pacing.owed);
        let name = member
            .as_deref()
            .zip(own)
            .map(|(member, own)| shared::FlightRead {
                name: &self.name,
                member,
                owed: &owed,
                own,
            });
        let (fleet, counts) = match (quota, budget) {
            (None, None) => (Fleet::default(), None),
            (Some(quota), Some((store, read))) if quota.same_store(store) => {
                quota.read(name, Some(&read)).await
            }
            (quota, budget) => {
                let fleet = match quota {
                    Some(quota) => quota.read(name, None).await.0,
                    None => Fleet::default(),
                };
                let counts = match budget {
                    Some((store, read)) => store.read(None, Some(&read)).await.1,
                    None => None,
                };
                (fleet, counts)
            }
        };
        let mut fleet = fleet;
        if fleet.flight.is_none() {
            if !owed.is_empty()
                && let Some(pacing) = &self.pacing
            {
                // Not known to be counted out: again with the next read or flush.
                pacing.owe_again(owed);
            }
        } else {
            fleet.member = member;
        }
        (fleet, counts)
    }
}

/// What a call was admitted with: its charge to its caller's budget and its ticket of the
/// stated quota, each when there is one.
#[derive(Default)]
pub(crate) struct Admitted {
    charge: Option<Charge>,
    _ticket: Option<Ticket>,
}

impl Admitted {
    /// The call ended as `ended` says: its caller is charged what it used (the usage the
    /// reply reported, else its estimate; nothing when it cannot have run).
    pub(crate) fn settle(&mut self, ended: Result<(Option<u64>, Option<u64>), &HttpError>) {
        let Some(charge) = self.charge.take() else {
            return;
        };
        use crate::resilience::Classify;
        let used = match ended {
            Ok(usage) => total(usage).unwrap_or(charge.estimate()),
            Err(error) if !error.may_have_run() => 0,
            Err(_) => charge.estimate(),
        };
        charge.settle(used);
    }

    /// The charge, for a stream to settle when it ends.
    pub(crate) fn take_charge(&mut self) -> Option<Charge> {
        self.charge.take()
    }

    /// Whether the call is charged to a caller's budget.
    pub(crate) fn is_charged(&self) -> bool {
        self.charge.is_some()
    }
}

/// The tokens a reply reported, input and output together.
pub(crate) fn total((input, output): (Option<u64>, Option<u64>)) -> Option<u64> {
    match (input, output) {
        (None, None) => None,
        (input, output) => Some(input.unwrap_or(0).saturating_add(output.unwrap_or(0))),
    }
}

/// A call admitted by its quota, counted against it until dropped (its reply read).
pub(crate) struct Ticket {
    pacing: Arc<Pacing>,
    tokens: u64,
    /// The call's member in the replicas' calls in flight (Redis), when it is counted there.
    #[cfg(feature = "redis")]
    member: Option<String>,
    /// Whether the quota admitted it (else it was held back, and counted nowhere here).
    admitted: bool,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if self.admitted {
            self.pacing.quota.done(self.tokens);
        }
        #[cfg(feature = "redis")]
        if let Some(member) = self.member.take() {
            self.pacing.owe(member);
        }
    }
}

/// The tokens a call is estimated to use before it is sent: its input (the request body's
/// bytes / 4, the usual ratio of English text to tokens) and its output (the body's
/// `max_completion_tokens` or `max_tokens` when it names one, else `expected_output`).
pub(crate) fn estimate(body: Option<&[u8]>, expected_output: u64) -> u64 {
    #[derive(serde::Deserialize)]
    struct Asked {
        #[serde(default)]
        max_completion_tokens: Option<u64>,
        #[serde(default)]
        max_tokens: Option<u64>,
    }
    let Some(body) = body else {
        return expected_output;
    };
    // Parsed only when it may name a maximum: one short pattern over the body first.
    let asked = if body.windows(5).any(|window| window == b"\"max_") {
        serde_json::from_slice::<Asked>(body)
            .ok()
            .and_then(|asked| asked.max_completion_tokens.or(asked.max_tokens))
    } else {
        None
    };
    (body.len() as u64 / 4).saturating_add(asked.unwrap_or(expected_output))
}

/// A model call's quota and budget work without the network, for the benchmarks
/// (`benches/quota.rs`): not public API, it may change in any release.
#[doc(hidden)]
pub struct QuotaProbe {
    admission: Admission,
    body: Vec<u8>,
    headers: HeaderMap,
}

impl QuotaProbe {
    /// A probe of a model whose replies state room to spare: its calls paced by the stated
    /// quota (`paced`), counted against a caller's budget of room to spare (`budgeted`),
    /// both kept in this process or shared through `shared` (feature `redis`).
    pub fn new(
        paced: bool,
        budgeted: bool,
        #[cfg(feature = "redis")] shared: Option<SharedQuota>,
    ) -> Self {
        let mut headers = HeaderMap::new();
        for (name, value) in [
            ("content-type", "application/json"),
            ("x-ratelimit-limit-requests", "10000"),
            ("x-ratelimit-remaining-requests", "9999"),
            ("x-ratelimit-reset-requests", "1s"),
            ("x-ratelimit-limit-tokens", "1000000"),
            ("x-ratelimit-remaining-tokens", "999000"),
            ("x-ratelimit-reset-tokens", "1m0s"),
        ] {
            headers.insert(name, reqwest::header::HeaderValue::from_static(value));
        }
        let budget = CallerBudget::per_minute(u64::MAX / 4);
        #[cfg(feature = "redis")]
        let budget = match &shared {
            Some(store) => budget.shared(store),
            None => budget,
        };
        let name: Arc<str> = Arc::from("probe");
        QuotaProbe {
            admission: Admission {
                pacing: paced.then(|| {
                    Arc::new(Pacing::new(
                        Arc::clone(&name),
                        true,
                        NO_DEADLINE_WAIT,
                        #[cfg(feature = "redis")]
                        shared.clone(),
                    ))
                }),
                budget: budgeted.then_some(budget),
                expected_output: 256,
                name,
            },
            body: br#"{"model":"primary","messages":[{"role":"user","content":"What is Rust?"}]}"#
                .to_vec(),
            headers,
        }
    }

    /// One call of `caller`: its estimate, its admission, its reply's headers read, its
    /// charge settled with the reply's usage and its ticket given back.
    pub async fn call(&self, caller: u128) {
        let mut admitted = self
            .admission
            .admit(Some(&self.body), Some(caller))
            .await
            .expect("room to spare");
        if let Some(pacing) = &self.admission.pacing {
            pacing.observe(&self.headers);
        }
        admitted.settle(Ok((Some(9), Some(2))));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().unwrap());
        }
        map
    }

    #[test]
    fn go_durations_are_read_and_odd_ones_are_not() {
        let secs = |text| go_duration(text).map(|d| d.as_secs_f64());
        assert_eq!(secs("1s"), Some(1.0));
        assert_eq!(secs("6m0s"), Some(360.0));
        assert_eq!(secs("12ms"), Some(0.012));
        assert_eq!(secs("1m30.5s"), Some(90.5));
        assert_eq!(secs("2h"), Some(7200.0));
        assert_eq!(secs("99999h"), Some(86400.0), "bounded by a day");
        for odd in ["", "s", "1", "1x", "-1s", "1..2s", "NaNs", &"1s".repeat(40)] {
            assert_eq!(go_duration(odd), None, "{odd}");
        }
    }

    #[test]
    fn every_providers_headers_are_read() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let openai = Stated::read(
            &headers(&[
                ("x-ratelimit-remaining-requests", "0"),
                ("x-ratelimit-reset-requests", "1m30.5s"),
                ("x-ratelimit-remaining-tokens", "1200"),
                ("x-ratelimit-reset-tokens", "12ms"),
            ]),
            now,
        );
        assert_eq!(
            openai.requests,
            Some(Window {
                remaining: 0,
                reset: Some(Duration::from_secs_f64(90.5))
            })
        );
        assert_eq!(openai.tokens.unwrap().remaining, 1200);
        let azure = Stated::read(&headers(&[("x-ratelimit-remaining-tokens", "-1")]), now);
        assert!(azure.is_empty(), "a negative count is unknown");
        let anthropic = Stated::read(
            &headers(&[
                ("anthropic-ratelimit-requests-remaining", "3"),
                ("anthropic-ratelimit-requests-reset", "2023-11-14T22:13:50Z"),
                ("anthropic-ratelimit-input-tokens-remaining", "900"),
                ("anthropic-ratelimit-output-tokens-remaining", "80"),
                (
                    "anthropic-ratelimit-output-tokens-reset",
                    "2023-11-14T22:14:20+00:00",
                ),
            ]),
            now,
        );
        assert_eq!(
            anthropic.requests.unwrap().reset,
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            anthropic.tokens,
            Some(Window {
                remaining: 80,
                reset: Some(Duration::from_secs(60))
            }),
            "the tightest of input and output"
        );
        let ietf = Stated::read(&headers(&[("ratelimit", "\"default\";r=50;t=30")]), now);
        assert_eq!(
            ietf.requests,
            Some(Window {
                remaining: 50,
                reset: Some(Duration::from_secs(30))
            })
        );
        // Without `t`, the window of the policy of that name.
        let policy = Stated::read(
            &headers(&[
                ("ratelimit", "\"burst\";r=0"),
                (
                    "ratelimit-policy",
                    "\"day\";q=1000;w=86400, \"burst\";q=10;w=20",
                ),
            ]),
            now,
        );
        assert_eq!(
            policy.requests,
            Some(Window {
                remaining: 0,
                reset: Some(Duration::from_secs(20))
            })
        );
        for odd in [
            "",
            "\"default\"",
            "\"d\";r=x;t=1",
            "garbage;;;",
            "\"d\";r=-1",
        ] {
            assert!(
                Stated::read(&headers(&[("ratelimit", odd)]), now).is_empty(),
                "{odd}"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_waits_for_the_reset_when_the_quota_has_no_room() {
        let quota = Quota::default();
        assert_eq!(quota.room(100), Room::Now, "nothing stated: sent");
        quota.done(100);
        quota.observe(Stated {
            requests: Some(Window {
                remaining: 2,
                reset: Some(Duration::from_secs(10)),
            }),
            tokens: Some(Window {
                remaining: 500,
                reset: Some(Duration::from_secs(5)),
            }),
        });
        assert_eq!(quota.room(300), Room::Now);
        assert_eq!(
            quota.remaining(),
            (Some(1), Some(200)),
            "the call in flight counts"
        );
        let Room::At(at) = quota.room(300) else {
            panic!("200 tokens left, 300 asked")
        };
        assert_eq!(at - Instant::now(), Duration::from_secs(5));
        assert_eq!(quota.room(100), Room::Now);
        let Room::At(at) = quota.room(1) else {
            panic!("no request left")
        };
        assert_eq!(at - Instant::now(), Duration::from_secs(10));
        // The replies read: what they used is the provider's to state.
        quota.done(300);
        quota.done(100);
        assert_eq!(quota.remaining(), (Some(2), Some(500)));
        tokio::time::advance(Duration::from_secs(10)).await;
        assert_eq!(quota.room(1_000_000), Room::Now, "both reset");
        assert_eq!(quota.remaining(), (None, None));
    }

    #[test]
    fn the_estimate_reads_the_asked_maximum_or_the_expected_output() {
        let body = br#"{"model":"m","messages":[{"role":"user","content":"hello there"}],"max_tokens":100}"#;
        assert_eq!(estimate(Some(body), 256), body.len() as u64 / 4 + 100);
        let body = br#"{"max_completion_tokens":7,"max_tokens":100}"#;
        assert_eq!(estimate(Some(body), 256), body.len() as u64 / 4 + 7);
        let body = br#"{"messages":[]}"#;
        assert_eq!(estimate(Some(body), 256), body.len() as u64 / 4 + 256);
        assert_eq!(estimate(Some(b"not json \"max_tokens\""), 10), 22 / 4 + 10);
        assert_eq!(estimate(None, 10), 10);
    }
}
