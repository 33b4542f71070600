// Drives the official A2A JS client (@a2a-js/sdk 1.3.0) against an agent with the example
// agents' text protocol, over one binding, a stream that fails after its first event
// included.
//
// usage: node js_client.mjs BASE_URL BINDING   (BINDING: JSONRPC or HTTP+JSON)
// Prints one JSON object with what the client saw; exits 1 if an expectation failed.
import { Role } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions } from '@a2a-js/sdk/client';

const [url, binding] = process.argv.slice(2);
const SECRET = 'hunter2';
const seen = {};
const failures = [];
const expect = (name, ok, detail) => {
  seen[name] = detail;
  if (!ok) failures.push(name);
};
const message = (id, text) => ({
  message: {
    messageId: `js-${id}-${binding}-${Date.now()}`,
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined }],
  },
});
// What the client exposes of an error: the spec's reason (a reason it does not know is its
// default, INTERNAL_ERROR), and the wire's own: the JSON-RPC code and ErrorInfo, or the REST
// status and Retry-After.
const infoOf = (data) => (Array.isArray(data) ? data : []).find(
  (d) => d && d['@type'] === 'type.googleapis.com/google.rpc.ErrorInfo') ?? null;
const described = (e) => ({
  name: e?.name,
  reason: e?.reason,
  message: String(e?.message),
  code: e?.envelopeCode ?? null,
  wireReason: infoOf(e?.data)?.reason ?? null,
  status: e?.statusCode ?? null,
  retryAfter: e?.headers?.get?.('retry-after') ?? e?.headers?.['retry-after'] ?? null,
});
// The reason as it came: the client's own when it knows it, else the JSON-RPC ErrorInfo's.
const reasonOf = (d) => (d.reason !== 'INTERNAL_ERROR' || !d.wireReason ? d.reason : d.wireReason);

const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { preferredTransports: [binding] }),
);
const client = await factory.createFromUrl(url);

try {
  const reply = await client.sendMessage(message('hello', 'hello'));
  const text = JSON.stringify(reply);
  expect('send_hello', text.includes('echo: hello'), { reply: text.slice(0, 200) });
} catch (e) {
  expect('send_hello', false, described(e));
}

for (const [name, text, reason] of [
  ['internal_error', 'fail:internal', 'INTERNAL_ERROR'],
  ['rate_limited', 'fail:rate_limited', 'RATE_LIMITED'],
  ['unsupported', 'fail:unsupported', 'UNSUPPORTED_OPERATION'],
  ['unavailable', 'flaky:5', 'AGENT_UNAVAILABLE'],
]) {
  try {
    await client.sendMessage(message(name, text));
    expect(name, false, 'no error raised');
  } catch (e) {
    const d = described(e);
    const ok = reasonOf(d) === reason
      || (binding === 'HTTP+JSON' && name === 'rate_limited' && d.status === 429 && d.retryAfter === '2')
      || (binding === 'HTTP+JSON' && name === 'unavailable' && d.status === 503);
    expect(name, ok && !JSON.stringify(d).includes(SECRET), d);
  }
}

let events = 0;
try {
  for await (const _ of client.sendMessageStream(message('stream', 'stream:fail_after:1'))) {
    events += 1;
  }
  expect('stream_error_after_first_event', false, { events, error: null });
} catch (e) {
  const d = described(e);
  expect('stream_error_after_first_event',
    events === 1 && /Internal error/.test(d.message) && !JSON.stringify(d).includes(SECRET),
    { events, ...d });
}

console.log(JSON.stringify({ binding, seen, failures }));
process.exit(failures.length ? 1 : 0);
