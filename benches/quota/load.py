#!/usr/bin/env python3
"""The model-quota load test (issue 70): two replicas of `llm_agent` on one Redis, six callers
at once for 20 s, against a provider that allows a fixed number of tokens and requests per 3 s
window, enforces them and states them on every reply (OpenAI's `x-ratelimit-*`).

    benches/quota/load.py --agent PATH [--agent-flags "..."] [--seconds 20] [--json]

It starts `redis-server` on a free port, the provider (in this process), two agents given
`--model` the provider, `--redis` the Redis and AGENT_FLAGS (split on spaces; pass none for a
build without them), and six callers, each its own credential, three on each replica, each
sending SendMessage with `A2A-Deadline-Ms` (5 s) one after another; a caller told
RATE_LIMITED waits the `retryDelay` it was given. It prints:
- the provider's side: requests received, refused (429), and the tokens accepted in the
  windows wholly inside the run against what those windows allow;
- the callers' side: answers, RATE_LIMITED, every other reason, and the calls that took
  longer than their deadline (plus half a second for the reply to travel);
- the agents' token estimates against what the provider charged (the estimate is the request
  body's bytes / 4 plus the expected output, default 256; the provider charges the body's
  bytes / 4 plus an output of 20..80 tokens, 50 on average).

Targets: refused at most 3 % of what the provider received, at least 80 % of the windows'
tokens accepted, every caller answered or RATE_LIMITED within its deadline, no
MODEL_UNAVAILABLE.
"""

import argparse
import http.server
import json
import os
import random
import shlex
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

WINDOW = 3.0
TOKENS = 3000
REQUESTS = 100
DEADLINE_MS = 5000
CALLERS = 6


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Provider:
    """Fixed windows of WINDOW seconds (aligned on the clock), each allowing TOKENS tokens and
    REQUESTS requests; a request is charged its body's bytes / 4 plus its output when it is
    accepted, and refused (429) when the window has not that much left."""

    def __init__(self):
        self.lock = threading.Lock()
        self.window = None
        self.used_tokens = 0
        self.used_requests = 0
        self.received = 0
        self.refused = 0
        self.accepted_by_window = {}
        self.charged = []
        self.random = random.Random(70)

    def take(self, body_len):
        now = time.time()
        window = int(now // WINDOW)
        reset = (window + 1) * WINDOW - now
        with self.lock:
            if window != self.window:
                self.window, self.used_tokens, self.used_requests = window, 0, 0
            self.received += 1
            output = self.random.randint(20, 80)
            prompt = body_len // 4
            cost = prompt + output
            fits = (self.used_requests < REQUESTS
                    and self.used_tokens + cost <= TOKENS)
            if fits:
                self.used_requests += 1
                self.used_tokens += cost
                self.accepted_by_window[window] = self.accepted_by_window.get(window, 0) + cost
                self.charged.append(cost)
            else:
                self.refused += 1
            left = (REQUESTS - self.used_requests, TOKENS - self.used_tokens)
        return fits, prompt, output, left, reset


def provider_handler(provider):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            fits, prompt, output, (requests, tokens), reset = provider.take(len(body))
            reset_text = "%.3fs" % reset
            headers = {
                "x-ratelimit-limit-requests": str(REQUESTS),
                "x-ratelimit-limit-tokens": str(TOKENS),
                "x-ratelimit-remaining-requests": str(requests),
                "x-ratelimit-remaining-tokens": str(tokens),
                "x-ratelimit-reset-requests": reset_text,
                "x-ratelimit-reset-tokens": reset_text,
            }
            if fits:
                status = 200
                answer = {"choices": [{"message": {"role": "assistant", "content": "ok"}}],
                          "usage": {"prompt_tokens": prompt, "completion_tokens": output,
                                    "total_tokens": prompt + output}}
            else:
                status = 429
                headers["retry-after-ms"] = str(int(reset * 1000) + 1)
                answer = {"error": {"message": "Rate limit reached", "type": "tokens",
                                    "code": "rate_limit_exceeded"}}
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

    return Handler


def start_agent(path, model, redis_url, flags):
    args = [path, "--addr", "127.0.0.1:0", "--model", model]
    if redis_url:
        args += ["--redis", redis_url]
    args += flags
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               env=dict(os.environ, RUST_LOG="warn,llm_agent=info", NO_COLOR="1"),
                               text=True)
    for line in process.stderr:
        if "listening on " in line:
            url = line.split("listening on ", 1)[1].strip()
            threading.Thread(target=lambda: process.stderr.read(), daemon=True).start()
            return process, url
    raise SystemExit("the agent exited before listening: %s" % " ".join(args))


def caller(index, url, until, results):
    number = 0
    while time.time() < until:
        number += 1
        body = json.dumps({"jsonrpc": "2.0", "id": number, "method": "SendMessage", "params": {
            "message": {"messageId": "c%d-%d" % (index, number), "role": "ROLE_USER",
                        "parts": [{"text": "question %d of caller %d" % (number, index)}]}}})
        request = urllib.request.Request(url, data=body.encode(), headers={
            "content-type": "application/json", "A2A-Version": "1.0",
            "A2A-Deadline-Ms": str(DEADLINE_MS), "Authorization": "Bearer caller-%d" % index})
        started = time.time()
        try:
            with urllib.request.urlopen(request, timeout=DEADLINE_MS / 1000 + 10) as response:
                reply = json.loads(response.read())
        except Exception as error:  # noqa: BLE001 - every failure is counted by its kind
            reply = {"error": {"data": [{"reason": "CLIENT_" + type(error).__name__}]}}
        took = time.time() - started
        error = reply.get("error")
        if error is None:
            outcome, delay = "answer", 0
        else:
            details = error.get("data") or [{}]
            outcome = details[0].get("reason", "code %s" % error.get("code"))
            delay = 0
            for detail in details:
                if "retryDelay" in detail:
                    delay = float(detail["retryDelay"].rstrip("s"))
        results.append((index, outcome, took))
        if outcome == "RATE_LIMITED":
            time.sleep(max(0.0, min(delay, until - time.time())))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--agent", required=True)
    parser.add_argument("--agent-flags", default="")
    parser.add_argument("--no-redis", action="store_true")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()

    provider = Provider()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), provider_handler(provider))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    model = "http://127.0.0.1:%d" % server.server_address[1]

    processes = []
    redis_url = None
    workdir = tempfile.mkdtemp(prefix="quota-load-")
    if not options.no_redis:
        port = free_port()
        redis = subprocess.Popen(["redis-server", "--port", str(port), "--save", "",
                                  "--appendonly", "no", "--dir", workdir],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        processes.append(redis)
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.02)
        redis_url = "redis://127.0.0.1:%d" % port
    try:
        flags = shlex.split(options.agent_flags)
        agents = [start_agent(options.agent, model, redis_url, flags) for _ in range(2)]
        processes += [process for process, _ in agents]
        urls = [url for _, url in agents]
        started = time.time()
        until = started + options.seconds
        results = []
        threads = [threading.Thread(target=caller, args=(i, urls[i % 2], until, results))
                   for i in range(CALLERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        ended = time.time()
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait()
        server.shutdown()

    first, last = int(started // WINDOW) + 1, int(ended // WINDOW) - 1
    whole = [w for w in range(first, last + 1)]
    accepted = sum(provider.accepted_by_window.get(w, 0) for w in whole)
    allowed = TOKENS * len(whole)
    outcomes = {}
    late = 0
    for _, outcome, took in results:
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        if took > DEADLINE_MS / 1000 + 0.5:
            late += 1
    report = {
        "provider_received": provider.received,
        "provider_refused": provider.refused,
        "refused_share": provider.refused / max(provider.received, 1),
        "whole_windows": len(whole),
        "tokens_accepted": accepted,
        "tokens_allowed": allowed,
        "accepted_share": accepted / max(allowed, 1),
        "mean_charged": sum(provider.charged) / max(len(provider.charged), 1),
        "caller_outcomes": outcomes,
        "late_calls": late,
        "calls": len(results),
    }
    if options.json:
        print(json.dumps(report))
        return
    print("provider: %d received, %d refused (%.1f %%); tokens accepted in %d whole windows: "
          "%d of %d (%.1f %%); a call charged %.0f tokens on average"
          % (report["provider_received"], report["provider_refused"],
             100 * report["refused_share"], report["whole_windows"], accepted, allowed,
             100 * report["accepted_share"], report["mean_charged"]))
    print("callers: %d calls: %s; %d took longer than their deadline"
          % (len(results), ", ".join("%s %d" % kv for kv in sorted(outcomes.items())), late))
    ok = (report["refused_share"] <= 0.03 and report["accepted_share"] >= 0.80 and late == 0
          and set(outcomes) <= {"answer", "RATE_LIMITED"})
    print("targets (refused <= 3 %, accepted >= 80 %, only answers or RATE_LIMITED in time):",
          "met" if ok else "NOT met")


if __name__ == "__main__":
    sys.exit(main())
