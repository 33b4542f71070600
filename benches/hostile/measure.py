"""Hostile peers (issues 33 and 48), measured from outside: each scenario starts an
example binary on loopback, attacks it as the issue's report did, and reads what it cost from
/proc (resident memory, descriptors, CPU seconds) and from its answers.

usage: python3 benches/hostile/measure.py EXAMPLES_DIR [SCENARIO ...]

EXAMPLES_DIR holds the built examples (target/release/examples). Run it against a build of
main before a change and after it to compare (benches/README.md has the last table). The
gRPC scenarios need grpcio and a2a-sdk (the README's test command installs them into .venv);
`dedup_redis` needs redis-server and redis-cli. Every request goes to 127.0.0.1 only, bounded
in count and time.
"""

import asyncio
import json
import os
import resource
import socket
import subprocess
import sys
import threading
import time
import http.server
import urllib.request

EXAMPLES = sys.argv[1] if len(sys.argv) > 1 else "target/release/examples"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Process:
    """An example binary, its descriptor limit set to 1,024 (a usual default)."""

    def __init__(self, name, args):
        self.port = free_port()
        cmd = [os.path.join(EXAMPLES, name), "--addr", f"127.0.0.1:{self.port}", *args]
        self.proc = subprocess.Popen(
            ["prlimit", "--nofile=1024:1024", "--", *cmd],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_port(self.port)
        self.url = f"http://127.0.0.1:{self.port}"

    def alive(self):
        return self.proc.poll() is None

    def rss_mb(self):
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) / 1024
        except FileNotFoundError:
            return float("nan")
        return float("nan")

    def fds(self):
        try:
            return len(os.listdir(f"/proc/{self.proc.pid}/fd"))
        except FileNotFoundError:
            return -1

    def cpu_s(self):
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except FileNotFoundError:
            return float("nan")

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def grpc_agent():
    """`sdk_agent` serving gRPC too, on a port of its own: the agent and that port."""
    grpc_port = free_port()
    agent = Process("sdk_agent", ["--grpc", f"127.0.0.1:{grpc_port}"])
    wait_port(grpc_port)
    return agent, grpc_port


def wait_port(port, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on {port}")


def rpc(url, method, params, timeout=10, headers=None):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    request = urllib.request.Request(
        url + "/", body, {"content-type": "application/json", **(headers or {})}
    )
    with urllib.request.urlopen(request, timeout=timeout) as reply:
        return json.loads(reply.read())


def message(message_id, text):
    return {"message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]}}


def raw_post(port, body, give_up_after):
    """POSTs `body` to / and hangs up after `give_up_after` seconds (an abandoned call)."""
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(
            b"POST / HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            + f"content-length: {len(body)}\r\n\r\n".encode()
            + body
        )
        s.settimeout(give_up_after)
        try:
            s.recv(1)
        except OSError:
            pass
        s.close()
    except OSError:
        pass


def report(name, rows):
    print(f"## {name}")
    for key, value in rows:
        print(f"- {key}: {value}")
    print(flush=True)


def stream_huge():
    agent = Process("sdk_agent", [])
    try:
        rss = agent.rss_mb()
        try:
            reply = rpc(agent.url, "SendMessage", message("huge", "stream:4294967295"), timeout=5)
            answer = reply.get("error", {}).get("message") or "a result"
        except Exception as error:
            answer = f"no answer ({type(error).__name__})"
        time.sleep(1)
        report(
            "stream:4294967295 (sdk_agent)",
            [
                ("answer", answer),
                ("process alive after", agent.alive()),
                ("RSS before / after (MB)", f"{rss:.0f} / {agent.rss_mb():.0f}"),
            ],
        )
    finally:
        agent.stop()


def grpc_streams(calls=8000):
    import grpc
    from a2a.types import a2a_pb2, a2a_pb2_grpc

    agent, grpc_port = grpc_agent()
    try:
        base = agent.rss_mb()

        async def run():
            async with grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
                stub = a2a_pb2_grpc.A2AServiceStub(channel)

                async def one(n):
                    request = a2a_pb2.SendMessageRequest(
                        message=a2a_pb2.Message(
                            message_id=f"g-{n}",
                            role=a2a_pb2.ROLE_USER,
                            parts=[a2a_pb2.Part(text="sleep:8000")],
                        )
                    )
                    try:
                        await stub.SendMessage(request, timeout=20)
                        return "ok"
                    except grpc.aio.AioRpcError as error:
                        return error.code().name

                tasks = [asyncio.create_task(one(n)) for n in range(calls)]
                await asyncio.sleep(4)
                peak = agent.rss_mb()
                # Calls past the server's stream limit wait in the client (HTTP/2's own
                # back-pressure): those still waiting after 20 s are counted as such.
                done, waiting = await asyncio.wait(tasks, timeout=20)
                for task in waiting:
                    task.cancel()
                codes = [task.result() for task in done] + ["waiting in the client"] * len(waiting)
                return peak, codes

        peak, codes = asyncio.run(run())
        counts = {code: codes.count(code) for code in set(codes)}
        report(
            f"{calls} concurrent gRPC calls on one connection (sdk_agent --grpc)",
            [
                ("RSS before / 4 s in (MB)", f"{base:.0f} / {peak:.0f} (+{peak - base:.0f})"),
                ("outcomes", counts),
            ],
        )
    finally:
        agent.stop()


def grpc_resets(calls=5000):
    import grpc
    from a2a.types import a2a_pb2, a2a_pb2_grpc

    agent, grpc_port = grpc_agent()
    try:
        base = agent.rss_mb()

        async def run():
            async with grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
                stub = a2a_pb2_grpc.A2AServiceStub(channel)

                async def one(n):
                    request = a2a_pb2.SendMessageRequest(
                        message=a2a_pb2.Message(
                            message_id=f"r-{n}",
                            role=a2a_pb2.ROLE_USER,
                            parts=[a2a_pb2.Part(text="sleep:60000")],
                        )
                    )
                    try:
                        # Given up after 20 ms: the client resets the stream.
                        await stub.SendMessage(request, timeout=0.02)
                    except grpc.aio.AioRpcError:
                        pass

                for start in range(0, calls, 500):
                    await asyncio.gather(*(one(n) for n in range(start, start + 500)))

        asyncio.run(run())
        time.sleep(2)
        cpu = agent.cpu_s()
        time.sleep(3)
        report(
            f"{calls} gRPC SendMessage sleep:60000 reset after 20 ms (sdk_agent --grpc)",
            [
                ("RSS before / 2 s after (MB)", f"{base:.0f} / {agent.rss_mb():.0f}"),
                ("CPU in the 3 s after (cores)", f"{(agent.cpu_s() - cpu) / 3:.2f}"),
                ("process alive", agent.alive()),
            ],
        )
    finally:
        agent.stop()


def idle_grpc(connections=1100):
    resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
    agent, grpc_port = grpc_agent()
    sockets = []
    try:
        for _ in range(connections):
            try:
                sockets.append(socket.create_connection(("127.0.0.1", grpc_port), timeout=2))
            except OSError:
                break
        time.sleep(2)
        cpu = agent.cpu_s()
        time.sleep(3)
        spin = (agent.cpu_s() - cpu) / 3
        started = time.time()
        try:
            rpc(agent.url, "GetTask", {"id": "nope"}, timeout=5)
            answered = f"yes, in {time.time() - started:.2f} s"
        except Exception as error:
            answered = f"no ({type(error).__name__})"
        report(
            f"{connections} idle gRPC connections (sdk_agent --grpc, 1,024 descriptors)",
            [
                ("descriptors held", agent.fds()),
                ("CPU while idle (cores)", f"{spin:.2f}"),
                ("JSON-RPC port answers", answered),
            ],
        )
    finally:
        for s in sockets:
            s.close()
        agent.stop()


def abandoned_sleeps(calls=2000, wait=36):
    agent = Process("sdk_agent", [])
    try:
        threads = []
        for n in range(calls):
            body = json.dumps(
                {"jsonrpc": "2.0", "id": n, "method": "SendMessage",
                 "params": message(f"s-{n}", "sleep:86400000")}
            ).encode()
            t = threading.Thread(target=raw_post, args=(agent.port, body, 0.5))
            t.start()
            threads.append(t)
            if len(threads) >= 200:
                for t in threads:
                    t.join()
                threads = []
        for t in threads:
            t.join()
        time.sleep(wait)
        states = {}
        token = ""
        while True:
            listed = rpc(agent.url, "ListTasks", {"pageSize": 100, "pageToken": token})
            for task in listed.get("result", {}).get("tasks", []):
                state = task["status"]["state"]
                states[state] = states.get(state, 0) + 1
            token = listed.get("result", {}).get("nextPageToken", "")
            if not token:
                break
        report(
            f"{calls} SendMessage sleep:86400000 whose callers left, {wait} s later (sdk_agent)",
            [("task states", states), ("RSS (MB)", f"{agent.rss_mb():.0f}")],
        )
    finally:
        agent.stop()


def stream_cpu(n=5000, after=10):
    agent = Process("sdk_agent", [])
    try:
        s = socket.create_connection(("127.0.0.1", agent.port))
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
                           "params": message("cpu", f"stream:{n}")}).encode()
        s.sendall(
            b"POST / HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            + f"content-length: {len(body)}\r\n\r\n".encode() + body
        )
        s.recv(4096)
        s.close()
        cpu = agent.cpu_s()
        time.sleep(after)
        report(
            f"stream:{n}, its reader gone after the first event (sdk_agent)",
            [(f"CPU seconds in the {after} s after", f"{agent.cpu_s() - cpu:.2f}")],
        )
    finally:
        agent.stop()


def agent_parts(requests=6, parts=510_000):
    agent = Process("agent", [])
    try:
        base = agent.rss_mb()
        part = '{"a":1}'
        answers = []
        for n in range(requests):
            body = json.dumps({"jsonrpc": "2.0", "id": n, "method": "SendMessage"})[:-1]
            body += (
                ',"params":{"message":{"messageId":"p-%d","role":"ROLE_USER","parts":[' % n
                + ",".join([part] * parts) + "]}}}"
            )
            request = urllib.request.Request(
                agent.url + "/", body.encode(), {"content-type": "application/json"}
            )
            try:
                with urllib.request.urlopen(request, timeout=60) as reply:
                    answer = json.loads(reply.read())
            except urllib.error.HTTPError as error:
                answer = json.loads(error.read())
            answers.append(answer.get("error", {}).get("code", "result"))
        time.sleep(1)
        report(
            f"{requests} SendMessage of {parts} small parts, ~{len(body) >> 20} MiB each (agent)",
            [
                ("answers", answers),
                ("RSS before / after (MB)", f"{base:.0f} / {agent.rss_mb():.0f}"),
            ],
        )
    finally:
        agent.stop()


def agent_store(requests=40, parts=1000, text=3900):
    """Messages of ~4 MiB the store keeps, until it is full: its bound, in RSS."""
    agent = Process("agent", [])
    try:
        base = agent.rss_mb()
        chunk = json.dumps({"text": "b" * text})
        answers = {}
        for n in range(requests):
            body = (
                '{"jsonrpc":"2.0","id":%d,"method":"SendMessage","params":{"message":'
                '{"messageId":"big-%d","role":"ROLE_USER","parts":[' % (n, n)
                + ",".join([chunk] * parts) + "]}}}"
            )
            request = urllib.request.Request(
                agent.url + "/", body.encode(), {"content-type": "application/json"}
            )
            with urllib.request.urlopen(request, timeout=60) as reply:
                answer = json.loads(reply.read())
            key = answer.get("error", {}).get("code", "result")
            answers[key] = answers.get(key, 0) + 1
        time.sleep(1)
        report(
            f"{requests} SendMessage of {parts} parts of {text} bytes (~{len(body) >> 20} MiB), "
            "kept by the store (agent; 64 MiB of tasks, 64 MiB of replies)",
            [
                ("answers", answers),
                ("RSS before / after (MB)", f"{base:.0f} / {agent.rss_mb():.0f}"),
            ],
        )
    finally:
        agent.stop()


def send_json(handler, body):
    """Answers 200 with `body` as JSON, its length declared."""
    handler.send_response(200)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


class BigReply(http.server.BaseHTTPRequestHandler):
    """A specialist that answers every SendMessage with ~31 MiB of small objects."""

    body = None

    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        if BigReply.body is None:
            parts = ",".join(['{"k":1}'] * (31 * 1024 * 1024 // 8))
            BigReply.body = (
                '{"jsonrpc":"2.0","id":1,"result":{"message":{"messageId":"r","role":"ROLE_AGENT","parts":['
                + parts + ',{"text":"done"}]}}}'
            ).encode()
        send_json(self, BigReply.body)

    def log_message(self, *args):
        pass


def coordinator_fanout():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), BigReply)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    specialist = f"http://127.0.0.1:{server.server_address[1]}/"
    coordinator = Process("coordinator", ["--agent", f"big={specialist}"])
    try:
        base = coordinator.rss_mb()
        peak = [base]
        done = threading.Event()

        def sample():
            while not done.is_set():
                peak[0] = max(peak[0], coordinator.rss_mb())
                time.sleep(0.02)

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            reply = rpc(coordinator.url, "SendMessage", message("f-1", "hello"), timeout=60)
            answer = "answered" if "result" in reply else reply.get("error", {}).get("code")
        except Exception as error:
            answer = type(error).__name__
        done.set()
        sampler.join()
        time.sleep(1)
        report(
            "one fan-out whose specialist answers 31 MiB of small objects (coordinator)",
            [
                ("answer", answer),
                ("RSS before / peak / 1 s after (MB)",
                 f"{base:.0f} / {peak[0]:.0f} / {coordinator.rss_mb():.0f}"),
            ],
        )
    finally:
        coordinator.stop()
        server.shutdown()


def answered_dedup():
    """The same calls as `abandoned_dedup`, their callers waiting for the answer: what the
    state they leave (replies and tasks remembered) costs on its own."""
    abandoned_dedup(give_up_after=5.0, what="whose callers waited for the answer")


def abandoned_dedup(calls=24_000, concurrency=400, give_up_after=0.05,
                    what="whose callers hung up after 50 ms"):
    agent = Process("agent", [])
    try:
        base = agent.rss_mb()
        threads = []
        for n in range(calls):
            body = json.dumps({"jsonrpc": "2.0", "id": n, "method": "SendMessage",
                               "params": message(f"a-{n}", "sleep:2000")}).encode()
            t = threading.Thread(target=raw_post, args=(agent.port, body, give_up_after))
            t.start()
            threads.append(t)
            if len(threads) >= concurrency:
                for t in threads:
                    t.join()
                threads = []
        for t in threads:
            t.join()
        time.sleep(5)
        report(
            f"{calls} SendMessage sleep:2000 {what} (agent)",
            [("RSS before / 5 s after the last (MB)",
              f"{base:.0f} / {agent.rss_mb():.0f} (+{agent.rss_mb() - base:.0f})")],
        )
    finally:
        agent.stop()


# Fourth round (issue 48).


class PaddedModel(http.server.BaseHTTPRequestHandler):
    """A model provider whose every answer is valid, under the 32 MiB reply limit, and mostly a
    long array of zeros: the shape that costs the most as a `serde_json::Value`."""

    body = None

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.answer()

    def do_GET(self):
        self.answer()

    def answer(self):
        if PaddedModel.body is None:
            PaddedModel.body = (
                '{"choices":[{"message":{"role":"assistant","content":"answered"}}],'
                '"result":"found","padding":[' + ",".join(["0"] * (15 * 1024 * 1024)) + "]}"
            ).encode()
        send_json(self, PaddedModel.body)

    def log_message(self, *args):
        pass


def peak_mb(process):
    with open(f"/proc/{process.proc.pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def llm_reply():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), PaddedModel)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    model = f"http://127.0.0.1:{server.server_address[1]}"
    agent = Process("llm_agent", ["--model", model, "--tool", model])
    try:
        before = peak_mb(agent)
        reply = rpc(agent.url, "SendMessage", message("big-1", "search:q"), timeout=60)
        answer = "answered" if "result" in reply else reply.get("error", {}).get("code")
        report(
            "a model and a tool answering 30 MiB of JSON, mostly zeros (llm_agent, search:)",
            [("answer", answer),
             ("peak RSS before / after (MB)",
              f"{before:.0f} / {peak_mb(agent):.0f} (+{peak_mb(agent) - before:.0f})")],
        )
    finally:
        agent.stop()
        server.shutdown()


def redis_cli(port, *args):
    return subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True,
                          text=True, timeout=30).stdout


def redis_used(port):
    for line in redis_cli(port, "INFO", "memory").splitlines():
        if line.startswith("used_memory:"):
            return int(line.split(":")[1])
    return 0


def dedup_redis(calls=14, size=1_500_000):
    redis_port = free_port()
    redis = subprocess.Popen(["redis-server", "--port", str(redis_port), "--save", "",
                              "--appendonly", "no"], stdout=subprocess.DEVNULL)
    wait_port(redis_port)
    agent = Process("sdk_agent", ["--redis", f"redis://127.0.0.1:{redis_port}"])
    try:
        before = redis_used(redis_port)
        for n in range(calls):
            rpc(agent.url, "SendMessage", message(f"flood-{n}", "hello " + "x" * size),
                timeout=30, headers={"authorization": "Bearer flood"})
        grown = redis_used(redis_port) - before
        dedup = 0
        for key in redis_cli(redis_port, "--scan", "--pattern", "a2a-dedup:*").split():
            usage = redis_cli(redis_port, "MEMORY", "USAGE", key).strip()
            dedup += int(usage) if usage.isdigit() else 0
        report(
            f"{calls} SendMessage of {size / 1e6:.1f} MB from one caller (sdk_agent --redis)",
            [("Redis grew (MiB)", f"{grown / 2**20:.1f}"),
             ("under a2a-dedup: (MiB)", f"{dedup / 2**20:.1f}")],
        )
    finally:
        agent.stop()
        redis.kill()
        redis.wait()


def spellings():
    agent = Process("sdk_agent", ["--rate-limit", "1"])
    try:
        token = "spell-1"
        rpc(agent.url, "GetTask", {"id": "none"}, headers={"authorization": f"Bearer {token}"})
        served = 0
        for scheme in ["bearer ", "BEARER ", "bEaReR ", "Bearer  "]:
            reply = rpc(agent.url, "GetTask", {"id": "none"},
                        headers={"authorization": f"{scheme}{token}"})
            served += reply.get("error", {}).get("code") == -32001
        report("one credential's burst spent, then four spellings of it (sdk_agent "
               "--rate-limit 1)", [("served", f"{served} of 4")])
    finally:
        agent.stop()


def h2_frame(kind, flags, stream, payload=b""):
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload


def hpack_literal(name, value):
    """A header as HPACK's literal without indexing, new name, no Huffman (short strings)."""
    name, value = name.encode(), value.encode()
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value


def zero_window_grpc(calls=200, size=1_600_000):
    agent, grpc_port = grpc_agent()
    try:
        sent = rpc(agent.url, "SendMessage", {"message": {
            "messageId": "big", "role": "ROLE_USER",
            "parts": [{"text": "hello"}, {"text": "x" * size}]}}, timeout=30)
        task = sent["result"]["task"]["id"]
        base = agent.rss_mb()
        sockets = []
        for c in range(0, calls, 100):
            s = socket.create_connection(("127.0.0.1", grpc_port))
            # SETTINGS: INITIAL_WINDOW_SIZE (4) = 0.
            s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
                      + h2_frame(4, 0, 0, (4).to_bytes(2, "big") + (0).to_bytes(4, "big")))
            body = task.encode()
            request = bytes([0x12, len(body)]) + body  # GetTaskRequest.id (field 2)
            grpc_body = b"\x00" + len(request).to_bytes(4, "big") + request
            for n in range(min(100, calls - c)):
                stream = 2 * n + 1
                headers = (hpack_literal(":method", "POST") + hpack_literal(":scheme", "http")
                           + hpack_literal(":path", "/lf.a2a.v1.A2AService/GetTask")
                           + hpack_literal(":authority", "x")
                           + hpack_literal("content-type", "application/grpc")
                           + hpack_literal("te", "trailers"))
                s.sendall(h2_frame(1, 4, stream, headers) + h2_frame(0, 1, stream, grpc_body))
            sockets.append(s)
        time.sleep(5)
        held = agent.rss_mb()
        opened = time.time()
        closed = 0
        for s in sockets:
            s.settimeout(max(0.1, 40 - (time.time() - opened)))
            try:
                # Drain what the server sends (SETTINGS, headers, the first 64 KiB of a reply
                # at most) until it closes.
                while s.recv(65536):
                    pass
                closed += 1
            except OSError:
                pass
        closed_in = time.time() - opened
        time.sleep(3)
        report(
            f"{calls} GetTask of a {size / 1e6:.1f} MB task from readers with a zero window "
            "(sdk_agent --grpc)",
            [("RSS before / 5 s in / 3 s after the close (MB)",
              f"{base:.0f} / {held:.0f} / {agent.rss_mb():.0f}"),
             ("connections closed by the server within 40 s",
              f"{closed} of {len(sockets)} (in {closed_in:.0f} s)")],
        )
        for s in sockets:
            s.close()
    finally:
        agent.stop()


def silent_grpc(connections=50, wait=15):
    agent, grpc_port = grpc_agent()
    try:
        sockets = [socket.create_connection(("127.0.0.1", grpc_port)) for _ in range(connections)]
        time.sleep(wait)
        still = 0
        for s in sockets:
            s.setblocking(False)
            try:
                while True:
                    if not s.recv(65536):
                        break
            except BlockingIOError:
                still += 1
            except OSError:
                pass
            s.close()
        report(f"{connections} gRPC connections that send nothing (sdk_agent --grpc)",
               [(f"still open after {wait} s", still)])
    finally:
        agent.stop()


def sse_hog(streams=800):
    resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
    agent, _ = grpc_agent()
    sockets = []
    try:
        for n in range(streams):
            body = json.dumps({"jsonrpc": "2.0", "id": n, "method": "SendStreamingMessage",
                               "params": message(f"hog-{n}", "sleep:60000")}).encode()
            try:
                s = socket.create_connection(("127.0.0.1", agent.port), timeout=2)
                s.sendall(b"POST / HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                          b"authorization: Bearer hog\r\n"
                          + f"content-length: {len(body)}\r\n\r\n".encode() + body)
                sockets.append(s)
            except OSError:
                break
        time.sleep(2)
        started = time.time()
        try:
            rpc(agent.url, "GetTask", {"id": "none"}, timeout=5)
            answered = f"yes, in {time.time() - started:.2f} s"
        except Exception as error:
            answered = f"no ({type(error).__name__})"
        report(f"{streams} SSE streams from one caller, never read (sdk_agent --grpc)",
               [("connections the agent holds", agent.fds()),
                ("a new JSON-RPC caller served", answered)])
    finally:
        for s in sockets:
            s.close()
        agent.stop()


def reset_storm(calls=2000, after=1.0):
    import grpc
    from a2a.types import a2a_pb2, a2a_pb2_grpc

    agent, grpc_port = grpc_agent()
    try:
        async def storm():
            async with grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
                stub = a2a_pb2_grpc.A2AServiceStub(channel)

                async def one(n):
                    request = a2a_pb2.SendMessageRequest(message=a2a_pb2.Message(
                        message_id=f"storm-{n}", role=a2a_pb2.ROLE_USER,
                        parts=[a2a_pb2.Part(text="sleep:60000")]))
                    try:
                        # Cancelled after a second, with no deadline sent: a reset.
                        await asyncio.wait_for(stub.SendMessage(request), after)
                    except (grpc.aio.AioRpcError, asyncio.TimeoutError):
                        pass

                for start in range(0, calls, 500):
                    await asyncio.gather(*(one(n) for n in range(start, start + 500)))

        async def probe():
            async with grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
                stub = a2a_pb2_grpc.A2AServiceStub(channel)
                try:
                    await stub.SendMessage(a2a_pb2.SendMessageRequest(message=a2a_pb2.Message(
                        message_id="new", role=a2a_pb2.ROLE_USER,
                        parts=[a2a_pb2.Part(text="hello")])), timeout=3)
                    return "served"
                except grpc.aio.AioRpcError as error:
                    return f"status {error.code().value[0]} {error.details()}"

        async def both():
            await storm()
            return await probe()

        grpc_answer = asyncio.run(both())
        try:
            reply = rpc(agent.url, "SendMessage", message("new-rpc", "hello"), timeout=3)
            rpc_answer = "served" if "result" in reply else reply["error"]["data"][0]["reason"]
        except Exception as error:
            rpc_answer = f"no answer ({type(error).__name__})"
        report(
            f"{calls} gRPC SendMessage sleep:60000 reset after {after:.0f} s, then new callers "
            "(sdk_agent --grpc)",
            [("a new gRPC caller", grpc_answer), ("a new JSON-RPC caller", rpc_answer)],
        )
    finally:
        agent.stop()


# Fifth round (issue 68).


class McpShapes(http.server.BaseHTTPRequestHandler):
    """A streamable HTTP MCP server (JSON replies) whose one tool `t` answers in the shape
    `McpShapes.shape` names, each about 30 MiB (under the 32 MiB reply bound): a JSON-RPC
    error with a huge `data`, an initialize result with a huge `capabilities.experimental`,
    a result with a huge `structuredContent`, or 1,150,000 tiny text parts."""

    shape = "parts"
    bodies = {}

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        method, rid = request.get("method"), request.get("id")
        if rid is None:
            self.send_response(202)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        zeros = lambda: "[" + ",".join(["0"] * (15 * 1024 * 1024)) + "]"
        if method == "initialize":
            experimental = zeros() if McpShapes.shape == "experimental" else "{}"
            if McpShapes.shape == "experimental":
                experimental = '{"x":' + experimental + "}"
            body = ('{"jsonrpc":"2.0","id":%d,"result":{"protocolVersion":"2025-06-18",'
                    '"capabilities":{"tools":{},"experimental":%s},'
                    '"serverInfo":{"name":"shapes","version":"1"}}}' % (rid, experimental))
            self.answer(body.encode(), session=True)
        elif method == "tools/list":
            self.answer(json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"tools": [
                {"name": "t", "inputSchema": {"type": "object"}}]}}).encode())
        elif method == "tools/call":
            shape = McpShapes.shape
            if shape not in McpShapes.bodies:
                if shape == "error_data":
                    tail = '"error":{"code":-32603,"message":"no","data":%s}' % zeros()
                elif shape == "structured":
                    tail = ('"result":{"content":[{"type":"text","text":"found"}],'
                            '"structuredContent":{"x":%s}}' % zeros())
                elif shape == "parts":
                    tail = ('"result":{"content":[' +
                            ",".join(['{"type":"text","text":"a"}'] * 1_150_000) + "]}")
                else:
                    tail = '"result":{"content":[{"type":"text","text":"found"}]}'
                McpShapes.bodies[shape] = '{"jsonrpc":"2.0","id":%%d,%s}' % tail
            self.answer((McpShapes.bodies[shape] % rid).encode())
        else:
            self.answer(json.dumps({"jsonrpc": "2.0", "id": rid, "result": {}}).encode())

    def answer(self, body, session=False):
        self.send_response(200)
        self.send_header("content-type", "application/json")
        if session:
            self.send_header("mcp-session-id", "s-1")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class SmallModel(http.server.BaseHTTPRequestHandler):
    """A model provider that answers every chat completion with one short message."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        send_json(self, b'{"choices":[{"message":{"role":"assistant","content":"answered"}}]}')

    def log_message(self, *args):
        pass


def mcp_replies():
    """Each 30 MiB MCP reply shape through `llm_agent --mcp` (T = `mcp:t:q`): the agent's
    peak RSS before the call and after it, a fresh agent per shape."""
    servers = []
    for handler in (McpShapes, SmallModel):
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    mcp = f"http://127.0.0.1:{servers[0].server_address[1]}/mcp"
    model = f"http://127.0.0.1:{servers[1].server_address[1]}"
    rows = []
    try:
        for shape, what in [("error_data", "a JSON-RPC error's data"),
                            ("experimental", "initialize's capabilities.experimental"),
                            ("structured", "a result's structuredContent"),
                            ("parts", "1,150,000 parts of one character (31 MB)")]:
            McpShapes.shape = shape
            agent = Process("llm_agent", ["--model", model, "--mcp", mcp])
            try:
                before = peak_mb(agent)
                reply = rpc(agent.url, "SendMessage", message(f"mcp-{shape}", "mcp:t:q"),
                            timeout=120)
                answer = "answered" if "result" in reply else reply.get("error", {}).get("code")
                after = peak_mb(agent)
                rows.append((what, f"{answer}; peak RSS {before:.0f} / {after:.0f} MB "
                                   f"(+{after - before:.0f})"))
            finally:
                agent.stop()
        report("30 MiB MCP replies of each shape (llm_agent --mcp, mcp:t:q)", rows)
    finally:
        for server in servers:
            server.shutdown()


SCENARIOS = {
    "stream_huge": stream_huge,
    "grpc_streams": grpc_streams,
    "grpc_resets": grpc_resets,
    "idle_grpc": idle_grpc,
    "abandoned_sleeps": abandoned_sleeps,
    "stream_cpu": stream_cpu,
    "agent_parts": agent_parts,
    "agent_store": agent_store,
    "coordinator_fanout": coordinator_fanout,
    "abandoned_dedup": abandoned_dedup,
    "answered_dedup": answered_dedup,
    "llm_reply": llm_reply,
    "dedup_redis": dedup_redis,
    "spellings": spellings,
    "zero_window_grpc": zero_window_grpc,
    "silent_grpc": silent_grpc,
    "sse_hog": sse_hog,
    "reset_storm": reset_storm,
    "mcp_replies": mcp_replies,
}

if __name__ == "__main__":
    chosen = sys.argv[2:] or list(SCENARIOS)
    for name in chosen:
        try:
            SCENARIOS[name]()
        except Exception as error:
            report(name, [("failed", f"{type(error).__name__}: {error}")])
