#!/usr/bin/env python3
"""A long streamed answer through examples/llm_agent against its floor, side by side.

Usage: answer.py PEERS TOKENS ROUNDS NAME=LLM_AGENT [NAME=LLM_AGENT ...]

PEERS is the `bench-callee-peers` binary (benches/callees/peers.rs). Each round starts, for
each agent given and for the plain relay (the floor), and for answers of TOKENS/4, 3*TOKENS/4
and TOKENS tokens, a fresh model provider that streams that many one-token chunks as fast as
it is read and a fresh server pinned to CPU 0 (the model and this reader on CPU 1), asks for
one streamed answer (SendStreamingMessage over JSON-RPC; the relay: POST /) and reads it to
its end. The server's CPU time (every thread's, from /proc/PID/task/*/schedstat, in ns) from
just before the request to its end is the answer's cost. A server writes ahead of its reader
into the socket's buffers, so the cost of a stretch of one answer cannot be read from it as
the reader goes: the last quarter's cost is the whole answer's less the cost of an answer of
three quarters, and the first quarter's is the cost of an answer of a quarter. The order of
the servers rotates from round to round. Prints one line per answer and then, per server, the
medians: each length's cost, the last quarter over the first, and the whole answer against
the relay's in the same round; and the server's peak resident memory (VmHWM) after the
whole answer.
"""

import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import time


def cpu_ns(pid):
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as stat:
                total += int(stat.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total


def peak_rss_mb(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_up(port):
    for _ in range(600):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on {port}")


def start(command, cpu):
    process = subprocess.Popen(["taskset", "-c", cpu, *command], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    return process


def one_answer(peers, tokens, agent):
    """One streamed answer of `tokens`: the server's CPU ns, and the tokens read."""
    model_port, port = free_port(), free_port()
    while port == model_port:
        port = free_port()
    model = start([peers, "model", f"127.0.0.1:{model_port}", str(tokens)], "1")
    wait_up(model_port)
    model_url = f"http://127.0.0.1:{model_port}"
    if agent is None:
        server = start([peers, "relay", f"127.0.0.1:{port}", model_url], "0")
        body = b"{}"
    else:
        server = start([agent, "--addr", f"127.0.0.1:{port}", "--model", model_url], "0")
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
                           "params": {"message": {"messageId": "answer", "role": "ROLE_USER",
                                                  "parts": [{"text": "a long answer"}]}}}).encode()
    def read(id_):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        connection.request("POST", "/", body=body.replace(b'"answer"', f'"{id_}"'.encode()),
                           headers={"content-type": "application/json",
                                    "accept": "text/event-stream"})
        response = connection.getresponse()
        assert response.status == 200, response.status
        seen = 0
        while True:
            line = response.readline()
            if not line:
                break
            if not line.startswith(b"data:"):
                continue
            if agent is not None and b'"artifactUpdate"' not in line:
                continue
            seen += 1
        connection.close()
        # What the server does at the stream's end (its records, the closed connection).
        time.sleep(0.2)
        return seen

    try:
        wait_up(port)
        # The first answer (the model's warm-up, 100 tokens) is not measured.
        read("warm-up")
        before = cpu_ns(server.pid)
        seen = read("answer")
        return cpu_ns(server.pid) - before, seen, peak_rss_mb(server.pid)
    finally:
        for process in (server, model):
            process.kill()
            process.wait()


def main():
    peers, tokens, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    subjects = [("relay", None)] + [tuple(arg.split("=", 1)) for arg in sys.argv[4:]]
    lengths = [tokens // 4, tokens * 3 // 4, tokens]
    # name -> length -> [ns per round]
    results = {name: {length: [] for length in lengths} for name, _ in subjects}
    peaks = {name: [] for name, _ in subjects}
    for round_ in range(rounds):
        order = subjects[round_ % len(subjects):] + subjects[:round_ % len(subjects)]
        for name, agent in order:
            for length in lengths:
                cpu, seen, peak = one_answer(peers, length, agent)
                results[name][length].append(cpu)
                if length == tokens:
                    peaks[name].append(peak)
                print(f"round {round_ + 1} {name:>13}: {seen:5} tokens, CPU {cpu / 1e6:9.1f} ms, "
                      f"peak RSS {peak:.1f} MB", flush=True)
                if seen != length:
                    raise SystemExit(f"{name} sent {seen} tokens of {length}")
    print()
    short, most, whole = lengths
    print(f"{'server':>13} " + " ".join(f"{f'{n} tok ms':>12}" for n in lengths)
          + f" {'last/first':>10} {'x relay':>8} {'peak MB':>8}   (medians of {rounds} rounds; spread)")
    for name, _ in subjects:
        runs = results[name]
        growth = sorted((runs[whole][i] - runs[most][i]) / runs[short][i] for i in range(rounds))
        ratios = sorted(w / r for w, r in zip(runs[whole], results["relay"][whole]))
        print(f"{name:>13} "
              + " ".join(f"{statistics.median(runs[n]) / 1e6:12.1f}" for n in lengths)
              + f" {statistics.median(growth):10.2f} {statistics.median(ratios):8.2f}"
              f" {statistics.median(peaks[name]):8.1f}"
              f"   ({growth[0]:.2f}-{growth[-1]:.2f}; {ratios[0]:.2f}-{ratios[-1]:.2f})")


if __name__ == "__main__":
    main()
