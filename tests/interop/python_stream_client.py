"""Reads a streamed answer with the official A2A Python client (a2a-sdk 1.3.0).

usage: python_stream_client.py BASE_URL BINDING TEXT   (BINDING: JSONRPC or HTTP+JSON)
Prints, as JSON, the kind of each event the client yields (`task`, `artifact_update`,
`status_update`, `message`), the task id the first names, the artifact text and the last
state, or the client's error class.
"""

import asyncio
import json
import sys

from a2a.client import ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, SendMessageRequest


async def main(url, binding, text):
    config = ClientConfig(supported_protocol_bindings=[binding], streaming=True)
    client = await ClientFactory(config).create_from_url(url)
    request = SendMessageRequest(
        message=Message(message_id=f"py-stream-{binding}", role=Role.ROLE_USER,
                        parts=[Part(text=text)])
    )
    seen = {"kinds": [], "text": "", "task": None, "last_state": None}
    try:
        async for event in client.send_message(request):
            kind = event.WhichOneof("payload")
            seen["kinds"].append(kind)
            if kind == "task" and seen["task"] is None:
                seen["task"] = event.task.id
            if kind == "artifact_update":
                seen["text"] += "".join(part.text for part in event.artifact_update.artifact.parts)
            if kind == "status_update":
                seen["last_state"] = event.status_update.status.state
    except Exception as error:  # the client's own error classes
        seen["error"] = type(error).__name__
    await client.close()
    print(json.dumps(seen))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
