"""Drives the official A2A Python client (a2a-sdk 1.3.0) through push notifications.

usage: python_push_client.py BASE_URL BINDING HOOK_URL   (BINDING: JSONRPC or HTTP+JSON)
Sends `stream:2` with the client's push config (ClientConfig.push_notification_config, put in
each SendMessage's configuration by the SDK) for HOOK_URL/sent, then creates, reads, lists and
deletes a config for HOOK_URL/created on that task with the client's own methods. Prints one
JSON object with what the client saw; exits 1 if a call raised.
"""

import asyncio
import json
import sys

from a2a.client import ClientConfig, ClientFactory
from a2a.types import (
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskPushNotificationConfig,
)


async def main(url, binding, hook):
    config = ClientConfig(
        supported_protocol_bindings=[binding],
        streaming=False,
        push_notification_config=TaskPushNotificationConfig(url=f"{hook}/sent", token="py-token"),
    )
    client = await ClientFactory(config).create_from_url(url)
    seen = {}
    request = SendMessageRequest(
        message=Message(message_id=f"py-push-{binding}", role=Role.ROLE_USER, parts=[Part(text="stream:2")])
    )
    task_id = None
    async for event in client.send_message(request):
        if event.HasField("task"):
            task_id = event.task.id
            seen["state"] = event.task.status.state
    seen["task_id"] = task_id
    created = await client.create_task_push_notification_config(
        TaskPushNotificationConfig(task_id=task_id, url=f"{hook}/created", token="py-created")
    )
    seen["created_id"] = created.id
    got = await client.get_task_push_notification_config(
        GetTaskPushNotificationConfigRequest(task_id=task_id, id=created.id)
    )
    seen["got_url"] = got.url
    listed = await client.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=task_id)
    )
    seen["listed"] = sorted(c.url for c in listed.configs)
    await client.delete_task_push_notification_config(
        DeleteTaskPushNotificationConfigRequest(task_id=task_id, id=created.id)
    )
    listed = await client.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=task_id)
    )
    seen["listed_after_delete"] = sorted(c.url for c in listed.configs)
    await client.close()
    print(json.dumps({"binding": binding, "seen": seen}))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3])))
