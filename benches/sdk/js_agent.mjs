// An agent served by the official A2A JS SDK (@a2a-js/sdk 1.3.0 on express), for
// benches/sdk/compare.sh: JSON-RPC at POST /. SendMessage answers a message echoing the
// text; GetTask of an unknown id gives the SDK's own TaskNotFoundError.
//
// Usage: node js_agent.mjs PORT
import express from 'express';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { Role } from '@a2a-js/sdk';

const port = Number(process.argv[2]);
const card = {
  name: 'js echo',
  description: '@a2a-js/sdk 1.3.0 echo agent for the performance comparison',
  version: '1.0.0',
  supportedInterfaces: [
    { url: `http://127.0.0.1:${port}/`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
  ],
  capabilities: { streaming: false, pushNotifications: false },
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [{ id: 'echo', name: 'Echo', description: 'Echoes text', tags: ['echo'] }],
};

let next = 0;
const echo = {
  async execute(context, bus) {
    const text = context.userMessage.parts
      .map((part) => (part.content?.$case === 'text' ? part.content.value : ''))
      .join('');
    bus.publish(
      AgentEvent.message({
        messageId: `reply-${next++}`,
        contextId: context.contextId,
        role: Role.ROLE_AGENT,
        parts: [{ content: { $case: 'text', value: `echo: ${text}` } }],
      }),
    );
    bus.finished();
  },
  async cancelTask() {},
};

const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), echo);
const app = express();
app.use(jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
app.listen(port, '127.0.0.1');
