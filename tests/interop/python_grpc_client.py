"""Drives the official A2A Python client (a2a-sdk[grpc] 1.3.0) over gRPC against the SDK agent.

usage: python_grpc_client.py CARD_URL
The client reads the agent card at CARD_URL and calls the gRPC interface it advertises, as
any user of the SDK would. Prints one JSON object with what it saw: the SDK's own error
classes for A2A's errors, and for the agent's own errors (which the SDK maps to a class only
for the a2a-protocol.org domain) the google.rpc.Status the SDK reads from the call with its
own `status_from_call`: code, reason, domain, metadata, retry delay.
"""

import asyncio
import json
import sys

import grpc
from google.rpc import error_details_pb2

from a2a.client import ClientConfig, ClientFactory
from a2a.types import GetTaskRequest, Message, Part, Role, SendMessageRequest
from a2a.utils.errors import TaskNotFoundError
from a2a.utils.grpc_status import status_from_call


def message(message_id, text):
    return SendMessageRequest(
        message=Message(message_id=message_id, role=Role.ROLE_USER, parts=[Part(text=text)])
    )


def status_of(error):
    """The google.rpc.Status behind an SDK error, read as the SDK's own client reads it."""
    cause = error
    while cause is not None and not isinstance(cause, grpc.aio.AioRpcError):
        cause = cause.__cause__
    if cause is None:
        return None
    status = status_from_call(cause)
    seen = {"grpc_code": cause.code().name, "message": cause.details(), "text": str(error)}
    for detail in status.details if status is not None else []:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            seen.update(reason=info.reason, domain=info.domain, metadata=dict(info.metadata))
        elif detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
            retry = error_details_pb2.RetryInfo()
            detail.Unpack(retry)
            seen["retry_delay_s"] = retry.retry_delay.seconds + retry.retry_delay.nanos / 1e9
    seen["pushback_ms"] = dict(cause.trailing_metadata() or ()).get("grpc-retry-pushback-ms")
    return seen


async def main(card_url):
    config = ClientConfig(
        supported_protocol_bindings=["GRPC"],
        streaming=False,
        grpc_channel_factory=grpc.aio.insecure_channel,
    )
    client = await ClientFactory(config).create_from_url(card_url)
    seen = {}

    try:
        await client.get_task(GetTaskRequest(id="nope"))
        seen["get_unknown_task"] = "no error raised"
    except TaskNotFoundError as e:
        seen["get_unknown_task"] = {"class": type(e).__name__, "status": status_of(e)}

    for name, text in [
        ("rate_limited", "fail:rate_limited"),
        ("internal", "fail:internal"),
        ("unavailable", "flaky:5"),
    ]:
        try:
            async for _ in client.send_message(message(f"py-grpc-{name}", text)):
                pass
            seen[name] = "no error raised"
        except Exception as e:  # noqa: BLE001
            seen[name] = {"class": type(e).__name__, "status": status_of(e)}

    async for event in client.send_message(message("py-grpc-hello", "hello")):
        seen["send_hello"] = {"task": event.task.id, "reply": event.task.status.message.parts[0].text}
        break
    print(json.dumps({"seen": seen}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
