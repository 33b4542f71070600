"""Sends one message with the official A2A Python client (a2a-sdk 1.3.0), its HTTP client
carrying a W3C `traceparent`, as an instrumented Python agent's would.

usage: python_traced_client.py BASE_URL BINDING TRACEPARENT   (BINDING: JSONRPC or HTTP+JSON)
Prints the reply's text; exits 1 if the call failed.
"""

import asyncio
import sys

import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, SendMessageRequest


async def main(url, binding, traceparent):
    http = httpx.AsyncClient(headers={"traceparent": traceparent}, timeout=30)
    config = ClientConfig(supported_protocol_bindings=[binding], streaming=False, httpx_client=http)
    client = await ClientFactory(config).create_from_url(url)
    request = SendMessageRequest(
        message=Message(message_id=f"py-traced-{binding}", role=Role.ROLE_USER, parts=[Part(text="hi")])
    )
    async for event in client.send_message(request):
        print(event)
        return 0
    return 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main(*sys.argv[1:4])))
