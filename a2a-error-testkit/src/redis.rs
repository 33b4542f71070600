//! `RedisServer`: a real `redis-server` of a test's own on a free loopback port, for agents
//! whose replicas share a Redis (the dedup's `RedisStore`), stopped when dropped.

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `redis-server` process on 127.0.0.1 (Debian's `redis-server` package, or any on the
/// `PATH`), with nothing persisted; stopped (killed) when dropped. It can be frozen and thawed
/// to play a Redis that stops answering.
pub struct RedisServer {
    child: Child,
    port: u16,
    /// Where it keeps its append-only file, when it persists.
    dir: Option<std::path::PathBuf>,
    /// `redis://127.0.0.1:PORT/`.
    pub url: String,
}

impl RedisServer {
    /// Starts one with nothing persisted and waits until it listens (at most 10 s).
    pub fn spawn() -> std::io::Result<RedisServer> {
        Self::start(crate::port::free_port(), None)
    }

    /// Starts one that writes every change to an append-only file before it answers
    /// (`appendfsync always`, in a directory of its own), so that a [`restart`](Self::restart)
    /// after a crash keeps everything it acknowledged.
    pub fn spawn_persistent() -> std::io::Result<RedisServer> {
        let port = crate::port::free_port();
        let dir =
            std::env::temp_dir().join(format!("a2a-testkit-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        Self::start(port, Some(dir))
    }

    /// Crashes it (as [`stop`](Self::stop)) and starts it again on the same port, from what
    /// it persisted (nothing, unless made by [`spawn_persistent`](Self::spawn_persistent)).
    pub fn restart(&mut self) -> std::io::Result<()> {
        self.stop();
        let started = Self::start(self.port, self.dir.take())?;
        // The new process replaces the old; the old one's Drop must not stop it.
        let old = std::mem::replace(self, started);
        std::mem::forget(old);
        Ok(())
    }

    fn start(port: u16, dir: Option<std::path::PathBuf>) -> std::io::Result<RedisServer> {
        let mut command = Command::new("redis-server");
        command.args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
        ]);
        match &dir {
            Some(dir) => command
                .args(["--appendonly", "yes", "--appendfsync", "always", "--dir"])
                .arg(dir),
            None => command.args(["--appendonly", "no"]),
        };
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let mut server = RedisServer {
            child,
            port,
            dir,
            url: format!("redis://127.0.0.1:{port}/"),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                server.stop();
                return Err(std::io::Error::other(
                    "redis-server did not start listening",
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(server)
    }

    /// Runs one command (`["CLIENT", "KILL", "TYPE", "pubsub"]`) over a connection of its
    /// own and returns its reply as text: a bulk string's bytes, an array's items one a line,
    /// else the reply's line.
    pub fn command(&self, args: &[&str]) -> std::io::Result<String> {
        use std::io::{BufRead, BufReader, Write};
        let mut stream = TcpStream::connect(("127.0.0.1", self.port))?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        let mut request = format!("*{}\r\n", args.len());
        for arg in args {
            request.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
        }
        stream.write_all(request.as_bytes())?;
        let mut reader = BufReader::new(stream);
        let mut head = String::new();
        reader.read_line(&mut head)?;
        let head = head.trim_end().to_owned();
        // An array (`*N`): its N items, one a line.
        if let Some(items) = head.strip_prefix('*').and_then(|n| n.parse::<usize>().ok()) {
            let mut lines = Vec::with_capacity(items);
            for _ in 0..items {
                let mut item = String::new();
                reader.read_line(&mut item)?;
                lines.push(read_item(&mut reader, item.trim_end())?);
            }
            return Ok(lines.join("\n"));
        }
        return read_item(&mut reader, &head);

        /// A bulk string: `$LEN\r\n`, then LEN bytes and CRLF; anything else is its line.
        fn read_item(reader: &mut impl BufRead, head: &str) -> std::io::Result<String> {
            match head
                .strip_prefix('$')
                .and_then(|len| len.parse::<usize>().ok())
            {
                Some(len) => {
                    let mut body = vec![0; len + 2];
                    reader.read_exact(&mut body)?;
                    body.truncate(len);
                    Ok(String::from_utf8_lossy(&body).into_owned())
                }
                None => Ok(head.to_owned()),
            }
        }
    }

    /// The number after `field:` in `INFO section`.
    pub fn info(&self, section: &str, field: &str) -> std::io::Result<u64> {
        self.command(&["INFO", section])?
            .lines()
            .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|value| value.trim().parse().ok())
            .ok_or_else(|| std::io::Error::other(format!("no {field} in INFO {section}")))
    }

    /// Its `used_memory` (`INFO memory`): the bytes its allocator holds, to check that what a
    /// store writes stays within the store's bound in Redis too.
    pub fn used_memory(&self) -> std::io::Result<u64> {
        self.info("memory", "used_memory")
    }

    /// Freezes it (SIGSTOP): connections stay open, commands queue unanswered.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Thaws it (SIGCONT): it runs what queued meanwhile.
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill {signal} failed");
    }

    /// Stops it (as a crash would: no shutdown handshake).
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl std::fmt::Debug for RedisServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisServer")
            .field("url", &self.url)
            .finish()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}
