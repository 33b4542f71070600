//! The MCP service over stdio: the server is a child process (its session lives as long as it
//! does), each message a line of JSON on its stdin and stdout. One attempt is one request;
//! a process that is not running is started (and initialized) by the next attempt, one that
//! ends fails the requests it held as a lost connection.

use std::collections::HashMap;
use std::ffi::OsString;
use std::future::Future;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use rmcp::model::{ClientCapabilities, Implementation, InitializeRequestParams};
use serde_json::value::RawValue;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tower::Service;

use super::call::McpCall;
use super::error::{McpError, McpFailure};
use super::read::Answer;
use super::transport::{
    Clock, Incoming, answer, call_body, incoming, notification_body, request_body,
};
use crate::dependency::failure::Failure;
use crate::dependency::http::HttpFailure;
use crate::resilience::Timeout;

/// How many lines may wait to be written to the process.
const QUEUE: usize = 64;

/// The program an MCP server over stdio is started with.
#[derive(Clone, Debug)]
pub(super) struct Program {
    pub(super) program: OsString,
    pub(super) args: Vec<OsString>,
}

/// Sends an [`McpCall`] once to the server process, starting it first if it is not running.
#[derive(Clone)]
pub(super) struct StdioService {
    pub(super) program: Program,
    pub(super) session: Arc<super::transport::Session>,
    pub(super) process: Arc<tokio::sync::Mutex<Option<Arc<Process>>>>,
    pub(super) ids: Arc<AtomicI64>,
    pub(super) attempt: Option<Duration>,
    pub(super) progress_up_to: Option<Duration>,
    pub(super) max_line: usize,
}

/// A running server process: a queue to its stdin, and the requests waiting for an answer.
pub(super) struct Process {
    lines: mpsc::Sender<Bytes>,
    waiting: Arc<Mutex<Waiting>>,
    /// The child, killed when dropped (`kill_on_drop`): by the reader when the process's
    /// output ends or breaks a bound, or with the process when the dependency goes.
    child: Arc<Mutex<Option<tokio::process::Child>>>,
}

impl Drop for Process {
    fn drop(&mut self) {
        self.child.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

#[derive(Default)]
struct Waiting {
    /// Ended: every later request fails as a lost connection.
    ended: Option<McpFailure>,
    answers: HashMap<i64, Waiter>,
}

struct Waiter {
    answer: oneshot::Sender<Result<Box<RawValue>, McpError>>,
    progress: Arc<tokio::sync::Notify>,
}

impl Service<McpCall> for StdioService {
    type Response = Answer;
    type Error = McpError;
    type Future = Pin<Box<dyn Future<Output = Result<Answer, McpError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, call: McpCall) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            let mut clock = Clock::new(
                this.attempt,
                this.progress_up_to,
                call.limit.deadline_from(Instant::now()),
            );
            let process = clock.within(this.running()).await?;
            let id = this.ids.fetch_add(1, Ordering::Relaxed);
            let body = call_body(id, &call, this.progress_up_to.map(|_| id), true, false)?;
            let result = process.ask(id, body, &mut clock).await;
            answer(&call, result?)
        })
    }
}

impl StdioService {
    /// The running process, started and initialized first if there is none (or it ended).
    async fn running(&self) -> Result<Arc<Process>, McpError> {
        let mut process = self.process.lock().await;
        if let Some(running) = &*process {
            let ended = running
                .waiting
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .ended
                .is_some();
            if !ended {
                return Ok(running.clone());
            }
        }
        let started = Arc::new(self.start()?);
        let mut clock = Clock::new(self.attempt, None, None);
        let id = self.ids.fetch_add(1, Ordering::Relaxed);
        let params = InitializeRequestParams::new(
            ClientCapabilities::default(),
            Implementation::new("a2a-error", env!("CARGO_PKG_VERSION")),
        );
        let result = started
            .ask(
                id,
                request_body(id, "initialize", Some(&params))?,
                &mut clock,
            )
            .await?;
        serde_json::from_str::<super::read::Initialized>(result.get()).map_err(|_| {
            Failure::Failed(McpFailure::Protocol {
                detail: "an initialize result that is not one".into(),
            })
        })?;
        started.send(notification_body("notifications/initialized", None))?;
        // A new process is a new session: its tools are listed again.
        self.session.started();
        *process = Some(started.clone());
        Ok(started)
    }

    /// Starts the program, with a task writing its stdin and one reading its stdout.
    fn start(&self) -> Result<Process, McpError> {
        let mut child = tokio::process::Command::new(&self.program.program)
            .args(&self.program.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| {
                Failure::Failed(McpFailure::Http(HttpFailure::Connect {
                    detail: format!("the server process did not start: {error}"),
                }))
            })?;
        let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(lost("the server process has no stdin or stdout"));
        };
        let (lines, mut queue) = mpsc::channel::<Bytes>(QUEUE);
        let waiting = Arc::new(Mutex::new(Waiting::default()));
        tokio::spawn(async move {
            while let Some(line) = queue.recv().await {
                if stdin.write_all(&line).await.is_err() || stdin.write_all(b"\n").await.is_err() {
                    break;
                }
                let _ = stdin.flush().await;
            }
        });
        let child = Arc::new(Mutex::new(Some(child)));
        let read = Arc::clone(&waiting);
        let kill = Arc::clone(&child);
        let max_line = self.max_line;
        tokio::spawn(async move {
            let ended = read_lines(stdout, max_line, &read).await;
            kill.lock().unwrap_or_else(|e| e.into_inner()).take();
            let mut waiting = read.lock().unwrap_or_else(|e| e.into_inner());
            for (_, waiter) in waiting.answers.drain() {
                let _ = waiter.answer.send(Err(Failure::Failed(ended.clone())));
            }
            waiting.ended = Some(ended);
        });
        Ok(Process {
            lines,
            waiting,
            child,
        })
    }
}

/// Reads the process's answers, a line each, until it ends or sends a line over `max_line`:
/// why it ended.
async fn read_lines(
    stdout: tokio::process::ChildStdout,
    max_line: usize,
    waiting: &Mutex<Waiting>,
) -> McpFailure {
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        // At most one byte past the limit is read into the line.
        let mut bounded = (&mut reader).take(max_line as u64 + 1);
        match bounded.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => {
                return HttpFailure::Transport {
                    detail: "the server process ended".into(),
                }
                .into();
            }
            Ok(_) if line.len() > max_line => {
                return HttpFailure::TooLarge { limit: max_line }.into();
            }
            Ok(_) => {}
        }
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        let mut waiting = waiting.lock().unwrap_or_else(|e| e.into_inner());
        match incoming(text) {
            Ok(Incoming::Progress(id)) => {
                if let Some(waiter) = waiting.answers.get(&id) {
                    waiter.progress.notify_one();
                }
            }
            Ok(Incoming::Answer(id, answer)) => {
                if let Some(waiter) = waiting.answers.remove(&id) {
                    let _ = waiter.answer.send(answer);
                }
            }
            // A line that is not JSON-RPC, or a message for nobody: skipped.
            Ok(Incoming::Other) | Err(_) => {}
        }
    }
}

impl Process {
    /// Queues `line` for the process's stdin; fails at once, as not sent (nothing ran), if the
    /// process has ended or has not taken the lines before it.
    fn send(&self, line: Bytes) -> Result<(), McpError> {
        self.lines.try_send(line).map_err(|_| {
            Failure::Failed(McpFailure::Http(HttpFailure::Connect {
                detail: "the server process is not taking input".into(),
            }))
        })
    }

    /// Sends request `id` and waits for its answer within `clock`; a request left running
    /// (timed out, or dropped) is cancelled.
    async fn ask(
        &self,
        id: i64,
        body: Bytes,
        clock: &mut Clock,
    ) -> Result<Box<RawValue>, McpError> {
        let (answer, mut answered) = oneshot::channel();
        let progress = Arc::new(tokio::sync::Notify::new());
        {
            let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(ended) = &waiting.ended {
                // Not sent: nothing ran.
                return Err(Failure::Failed(match ended {
                    McpFailure::Http(HttpFailure::Transport { detail }) => HttpFailure::Connect {
                        detail: detail.clone(),
                    }
                    .into(),
                    other => other.clone(),
                }));
            }
            let waiter = Waiter {
                answer,
                progress: progress.clone(),
            };
            waiting.answers.insert(id, waiter);
        }
        if let Err(error) = self.send(body) {
            let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
            waiting.answers.remove(&id);
            return Err(error);
        }
        let mut pending = Pending {
            process: Some(self),
            id,
        };
        loop {
            let firing = clock.firing();
            let wait = async {
                match firing {
                    Some((at, _)) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                result = &mut answered => {
                    pending.process = None;
                    return result.unwrap_or_else(|_| Err(lost("the server process ended")));
                }
                () = progress.notified() => clock.progressed(),
                () = wait => {
                    let fired = firing.map_or(Timeout::Total, |(_, fired)| fired);
                    return Err(Failure::Timeout(fired));
                }
            }
        }
    }
}

/// A request sent and not answered: on drop, forgotten and cancelled.
struct Pending<'a> {
    process: Option<&'a Process>,
    id: i64,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        let Some(process) = self.process.take() else {
            return;
        };
        let waiting = &mut process.waiting.lock().unwrap_or_else(|e| e.into_inner());
        waiting.answers.remove(&self.id);
        if waiting.ended.is_none() {
            let params =
                serde_json::json!({"requestId": self.id, "reason": "the caller stopped waiting"});
            let _ = process
                .lines
                .try_send(notification_body("notifications/cancelled", Some(&params)));
        }
    }
}

fn lost(detail: &str) -> McpError {
    Failure::Failed(McpFailure::Http(HttpFailure::Transport {
        detail: detail.to_owned(),
    }))
}
