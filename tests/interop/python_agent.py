"""An agent served by the official A2A Python SDK (a2a-sdk 1.3.0, Starlette, uvicorn), for the
Rust client's interop test: JSON-RPC at POST /, HTTP+JSON routes at the root.

Usage: python_agent.py PORT

Texts: anything -> a reply message "echo: TEXT"; "fail:unsupported" -> the SDK's
UnsupportedOperationError. GetTask of an unknown id gives the SDK's own TaskNotFoundError.
"""

import sys

import uvicorn
from a2a.helpers.proto_helpers import get_message_text, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes.jsonrpc_routes import create_jsonrpc_routes
from a2a.server.routes.rest_routes import create_rest_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from a2a.utils.errors import UnsupportedOperationError
from starlette.applications import Starlette


class Echo(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = get_message_text(context.message)
        if text == "fail:unsupported":
            raise UnsupportedOperationError()
        await event_queue.enqueue_event(
            new_text_message(f"echo: {text}", context_id=context.context_id)
        )

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise UnsupportedOperationError()


def main() -> None:
    port = int(sys.argv[1])
    base = f"http://127.0.0.1:{port}"
    card = AgentCard(
        name="python echo",
        description="a2a-sdk 1.3.0 echo agent for interop tests",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=f"{base}/", protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=base, protocol_binding="HTTP+JSON", protocol_version="1.0"),
        ],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="Echo", description="Echoes text", tags=["echo"])],
    )
    handler = DefaultRequestHandler(
        agent_executor=Echo(), task_store=InMemoryTaskStore(), agent_card=card
    )
    app = Starlette(routes=create_jsonrpc_routes(handler, "/") + create_rest_routes(handler))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
