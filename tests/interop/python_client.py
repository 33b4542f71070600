"""Drives the official A2A Python client (a2a-sdk 1.3.0) against the example agent.

usage: python_client.py BASE_URL BINDING [streaming]   (BINDING: JSONRPC or HTTP+JSON)
With `streaming` (an agent that streams, as the SDK agent does), it also reads a stream that
fails after its first event. Prints one JSON object with what the client saw; exits 1 if an expectation failed.
"""

import asyncio
import json
import sys

from a2a.client import A2AClientError, ClientConfig, ClientFactory
from a2a.types import CancelTaskRequest, GetTaskRequest, Message, Part, Role, SendMessageRequest
from a2a.utils.errors import InternalError, TaskNotCancelableError, TaskNotFoundError

SECRET = "hunter2"


def message(message_id, text):
    return SendMessageRequest(
        message=Message(message_id=message_id, role=Role.ROLE_USER, parts=[Part(text=text)])
    )


async def first_event(client, request):
    async for event in client.send_message(request):
        return event
    return None


async def main(url, binding, streaming=False):
    config = ClientConfig(supported_protocol_bindings=[binding], streaming=False)
    client = await ClientFactory(config).create_from_url(url)
    seen, failures = {}, []

    def expect(name, ok, detail):
        seen[name] = detail
        if not ok:
            failures.append(name)

    try:
        await client.get_task(GetTaskRequest(id="nope"))
        expect("get_unknown_task", False, "no error raised")
    except TaskNotFoundError as e:
        expect("get_unknown_task", True, {"class": type(e).__name__, "data": e.data})
    except Exception as e:  # noqa: BLE001
        expect("get_unknown_task", False, f"{type(e).__name__}: {e}")

    try:
        await first_event(client, message(f"py-int-{binding}", "fail:internal"))
        expect("internal_error", False, "no error raised")
    except InternalError as e:
        text = f"{e} {e!r} {e.data!r}"
        expect("internal_error", SECRET not in text, {"class": type(e).__name__, "text": text})
    except Exception as e:  # noqa: BLE001
        expect("internal_error", False, f"{type(e).__name__}: {e}")

    task_id = None
    try:
        event = await first_event(client, message(f"py-ok-{binding}", "hello"))
        task_id = event.task.id
        state = event.task.status.state
        reply = event.task.status.message.parts[0].text
        expect("send_hello", bool(task_id) and reply == "echo: hello",
               {"task": task_id, "state": int(state), "reply": reply})
    except Exception as e:  # noqa: BLE001
        expect("send_hello", False, f"{type(e).__name__}: {e}")

    if task_id:
        try:
            task = await client.get_task(GetTaskRequest(id=task_id))
            expect("get_task", task.id == task_id, {"id": task.id})
        except Exception as e:  # noqa: BLE001
            expect("get_task", False, f"{type(e).__name__}: {e}")
        try:
            await client.cancel_task(CancelTaskRequest(id=task_id))
            expect("cancel_completed", False, "no error raised")
        except TaskNotCancelableError as e:
            expect("cancel_completed", True, {"class": type(e).__name__})
        except Exception as e:  # noqa: BLE001
            expect("cancel_completed", False, f"{type(e).__name__}: {e}")

    # A project code the SDK does not know: still a clean client error, not a crash.
    try:
        await first_event(client, message(f"py-rl-{binding}", "fail:rate_limited"))
        expect("rate_limited", False, "no error raised")
    except (A2AClientError, Exception) as e:  # noqa: BLE001
        expect("rate_limited", SECRET not in str(e), {"class": type(e).__name__, "text": str(e)})

    if streaming:
        streamer = await ClientFactory(
            ClientConfig(supported_protocol_bindings=[binding], streaming=True)
        ).create_from_url(url)
        events = 0
        try:
            async for _ in streamer.send_message(message(f"py-st-{binding}", "stream:fail_after:1")):
                events += 1
            expect("stream_error_after_first_event", False, {"events": events, "error": None})
        except Exception as e:  # noqa: BLE001
            text = f"{e} {e!r}"
            expect("stream_error_after_first_event", events == 1 and SECRET not in text,
                   {"events": events, "class": type(e).__name__, "text": text})
        await streamer.close()

    await client.close()
    print(json.dumps({"binding": binding, "seen": seen, "failures": failures}))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3:] == ["streaming"])))
