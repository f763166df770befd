// Bidirectional streaming (SageMaker InvokeEndpointWithBidirectionalStream, contracts.md
// section 4) against vkserve with the `ws` npm package: the main-port path and the
// dedicated port (any sub-path + query), a multi-turn conversation on one connection
// (chat stream, chat non-stream, completions stream, LMI inputs), binary-framed JSON, a
// fragmented request with a ping between its fragments, a ping during generation, cancel,
// bad requests (error frame, connection stays usable) and a clean close that releases the
// request in flight (visible in /metrics).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, skip } from './lib/server.mjs';

let WebSocket;
try {
  ({ WebSocket } = await import('ws'));
} catch {
  skip('the ws npm package is not installed (tests/e2e/node_modules)');
}

const server = await startServer(['--bidi-port', '0']);
const bidiPort = Number((server.log.match(/bidi streaming on port (\d+)/) || [])[1]);
const model = 'stories260K';

after(async () => {
  const r = await server.stop();
  assert.equal(r.code, 0, `exit status after SIGTERM: ${JSON.stringify(r)}\n${server.log}`);
});

// A connection with a message queue: next() resolves with the next frame
// ({text, binary}) or rejects on close/error.
async function connect(url) {
  const ws = new WebSocket(url);
  const queue = [];
  const waiters = [];
  let closed = null;
  const deliver = (item) => {
    const w = waiters.shift();
    if (w) w(item);
    else queue.push(item);
  };
  ws.on('message', (data, isBinary) => deliver({ text: data.toString('utf8'), binary: isBinary }));
  ws.on('close', (code, reason) => {
    closed = { code, reason: reason.toString() };
    while (waiters.length) waiters.shift()({ closed });
  });
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  const next = () =>
    new Promise((resolve, reject) => {
      if (queue.length) return resolve(queue.shift());
      if (closed) return resolve({ closed });
      const timer = setTimeout(() => reject(new Error('no frame within 60 s')), 60000);
      waiters.push((item) => {
        clearTimeout(timer);
        resolve(item);
      });
    });
  // Frames until `[DONE]` (excluded).
  const untilDone = async () => {
    const frames = [];
    for (;;) {
      const f = await next();
      if (f.closed) throw new Error(`closed before [DONE]: ${JSON.stringify(f.closed)}`);
      if (f.text === '[DONE]') return frames;
      frames.push(JSON.parse(f.text));
    }
  };
  const closedP = new Promise((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  return { ws, next, untilDone, closed: () => closedP };
}

const mainUrl = () => `ws://127.0.0.1:${server.port}/invocations-bidirectional-stream`;
const longStream = (extra = {}) => ({
  model,
  messages: [{ role: 'user', content: 'Tell a long story.' }],
  stream: true,
  max_tokens: 400,
  ignore_eos: true,
  ...extra,
});

test('bidi port is open and the upgrade works on the main port and any sub-path', async () => {
  assert.ok(bidiPort > 0, `no bidi port in the log:\n${server.log}`);
  for (const url of [mainUrl(), `ws://127.0.0.1:${bidiPort}/invoke-bidi-stream`,
    `ws://127.0.0.1:${bidiPort}/v1/listen?max_tokens=3&temperature=0`,
    `ws://127.0.0.1:${server.port}/invocations-bidirectional-stream/custom/path`]) {
    const c = await connect(url);
    c.ws.send(JSON.stringify({ prompt: 'Once', max_tokens: 3 }));
    const f = JSON.parse((await c.next()).text);
    assert.equal(f.object, 'text_completion', url);
    c.ws.close(1000);
    assert.equal((await c.closed()).code, 1000);
  }
});

test('query string parameters are per-connection request defaults', async () => {
  const c = await connect(`ws://127.0.0.1:${bidiPort}/invoke-bidi-stream?max_tokens=2&ignore_eos=true`);
  c.ws.send(JSON.stringify({ prompt: 'Once upon' }));
  const f = JSON.parse((await c.next()).text);
  assert.equal(f.usage.completion_tokens, 2);
  c.ws.send(JSON.stringify({ prompt: 'Once upon', max_tokens: 4 }));  // the body wins
  assert.equal(JSON.parse((await c.next()).text).usage.completion_tokens, 4);
  c.ws.close();
});

test('multi-turn conversation over one connection, ids echoed', async () => {
  const c = await connect(mainUrl());
  // Turn 1: streamed chat; frames are exactly the SSE chunk objects.
  c.ws.send(JSON.stringify({ id: 'turn-1', model, messages: [{ role: 'user', content: 'Hi' }], stream: true,
    max_tokens: 8, stream_options: { include_usage: true } }));
  const chunks = await c.untilDone();
  assert.ok(chunks.length >= 2);
  for (const ch of chunks) {
    assert.equal(ch.object, 'chat.completion.chunk');
    assert.equal(ch.id, 'turn-1');
    assert.equal(ch.model, model);
  }
  assert.deepEqual(chunks[0].choices[0].delta, { role: 'assistant', content: '' });
  const usage = chunks.at(-1);
  assert.deepEqual(usage.choices, []);
  assert.ok(usage.usage.completion_tokens > 0 && usage.usage.completion_tokens <= 8);
  const text = chunks.map((x) => x.choices[0]?.delta?.content ?? '').join('');
  // Turn 2: non-streaming chat answers one frame with the whole response.
  c.ws.send(JSON.stringify({ id: 7, model, messages: [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: text },
    { role: 'user', content: 'More' }], max_tokens: 5 }));
  const whole = JSON.parse((await c.next()).text);
  assert.equal(whole.object, 'chat.completion');
  assert.equal(whole.id, '7');
  assert.equal(typeof whole.choices[0].message.content, 'string');
  // Turn 3: completions stream; turn 4: LMI inputs stream and non-stream.
  c.ws.send(JSON.stringify({ prompt: 'Once upon a time', max_tokens: 4, stream: true }));
  const cmpl = await c.untilDone();
  assert.ok(cmpl.every((x) => x.object === 'text_completion'));
  c.ws.send(JSON.stringify({ inputs: 'Once upon a time', parameters: { max_new_tokens: 3 }, stream: true }));
  const lmi = await c.untilDone();
  assert.ok(lmi.length >= 1 && lmi.every((x) => 'token' in x), JSON.stringify(lmi));
  c.ws.send(JSON.stringify({ inputs: 'Once upon a time', parameters: { max_new_tokens: 3 } }));
  const lmiWhole = JSON.parse((await c.next()).text);
  assert.equal(typeof lmiWhole.generated_text, 'string', JSON.stringify(lmiWhole));
  c.ws.close(1000);
  assert.equal((await c.closed()).code, 1000);
});

test('structured output and forced tool calls over the WebSocket', async () => {
  const c = await connect(mainUrl());
  c.ws.send(JSON.stringify({ model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 20, guided_choice: ['red', 'blue'] }));
  const chat = JSON.parse((await c.next()).text);
  assert.ok(['red', 'blue'].includes(chat.choices[0].message.content), JSON.stringify(chat));
  c.ws.send(JSON.stringify({ prompt: 'Once', max_tokens: 20, stream: true, guided_regex: '[0-9]{3}' }));
  const text = (await c.untilDone()).map((x) => x.choices[0]?.text ?? '').join('');
  assert.match(text, /^[0-9]{3}$/);
  c.ws.send(JSON.stringify({
    model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 40,
    tools: [{ type: 'function', function: { name: 'pick', parameters: { type: 'object', properties: { c: { enum: ['a', 'b'] } }, required: ['c'] } } }],
    tool_choice: { type: 'function', function: { name: 'pick' } },
  }));
  const call = JSON.parse((await c.next()).text).choices[0].message.tool_calls[0];
  assert.equal(call.function.name, 'pick');
  assert.ok(['a', 'b'].includes(JSON.parse(call.function.arguments).c));
  c.ws.close();
});

test('binary frames carry JSON like text frames (SageMaker BINARY default)', async () => {
  const c = await connect(mainUrl());
  c.ws.send(Buffer.from(JSON.stringify({ prompt: 'Once', max_tokens: 2 })), { binary: true });
  const f = await c.next();
  assert.equal(f.binary, false, 'replies are text frames');
  assert.equal(JSON.parse(f.text).object, 'text_completion');
  c.ws.close();
});

test('fragmented request with a ping between the fragments', async () => {
  const c = await connect(mainUrl());
  const body = JSON.stringify({ prompt: 'Once upon a time', max_tokens: 3 });
  const pong = new Promise((resolve) => c.ws.once('pong', (d) => resolve(d.toString())));
  c.ws.send(body.slice(0, 10), { fin: false });
  c.ws.ping('between');
  c.ws.send(body.slice(10, 20), { fin: false });
  c.ws.send(body.slice(20), { fin: true });
  assert.equal(await pong, 'between');
  const f = JSON.parse((await c.next()).text);
  assert.equal(f.object, 'text_completion');
  c.ws.close();
});

test('ping during generation is answered with the same payload', async () => {
  const c = await connect(mainUrl());
  let done = false;
  const pong = new Promise((resolve) => c.ws.once('pong', (d) => resolve({ payload: d.toString(), duringGeneration: !done })));
  c.ws.send(JSON.stringify(longStream()));
  const first = await c.next();
  assert.equal(JSON.parse(first.text).object, 'chat.completion.chunk');
  c.ws.ping('mid-generation');
  const frames = await c.untilDone();
  done = true;
  const p = await pong;
  assert.equal(p.payload, 'mid-generation');
  assert.ok(frames.length > 10);
  if (!p.duringGeneration) console.log('note: generation ended before the pong arrived');
  c.ws.close();
});

test('cancel aborts the request in flight; the stream ends with [DONE]', async () => {
  const before = await server.metrics();
  const c = await connect(mainUrl());
  c.ws.send(JSON.stringify(longStream({ id: 'long' })));
  await c.next();
  c.ws.send(JSON.stringify({ type: 'cancel', id: 'long' }));
  const rest = await c.untilDone();
  const tokens = rest.filter((x) => x.choices?.[0]?.delta?.content !== undefined).length;
  assert.ok(tokens < 399, `cancel did not stop the stream (${tokens} chunks)`);
  // The engine counts the abort on its own thread, shortly after the [DONE] frame: poll.
  const want = (before['vkserve:request_aborted_total'] || 0) + 1;
  let after;
  for (let i = 0; i < 200; ++i) {
    after = await server.metrics();
    if (after['vkserve:request_aborted_total'] >= want) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.ok(after['vkserve:request_aborted_total'] >= want, JSON.stringify(after));
  // The connection stays usable.
  c.ws.send(JSON.stringify({ prompt: 'Once', max_tokens: 2 }));
  assert.equal(JSON.parse((await c.next()).text).object, 'text_completion');
  c.ws.close();
});

test('bad requests answer an OpenAI error frame and the connection stays open', async () => {
  const c = await connect(mainUrl());
  c.ws.send('{not json');
  let f = JSON.parse((await c.next()).text);
  assert.equal(f.error.code, 400);
  c.ws.send(JSON.stringify({ id: 'bad', model, messages: 'nope' }));
  f = JSON.parse((await c.next()).text);
  assert.equal(f.error.type, 'BadRequestError');
  assert.equal(f.id, 'bad');
  c.ws.send(JSON.stringify({ foo: 1 }));
  f = JSON.parse((await c.next()).text);
  assert.equal(f.error.code, 400);
  c.ws.send(JSON.stringify({ type: 'bogus' }));
  f = JSON.parse((await c.next()).text);
  assert.equal(f.error.param, 'type');
  c.ws.send(JSON.stringify({ prompt: 'Once', max_tokens: 2 }));
  assert.equal(JSON.parse((await c.next()).text).object, 'text_completion');
  c.ws.close();
});

test('clean close releases the request in flight (metrics)', async () => {
  const before = await server.metrics();
  const c = await connect(mainUrl());
  c.ws.send(JSON.stringify(longStream()));
  await c.next();
  c.ws.close(1000, 'bye');
  const closed = await c.closed();
  assert.equal(closed.code, 1000);
  let m;
  for (let i = 0; i < 200; ++i) {
    m = await server.metrics();
    if (m['vkserve:request_aborted_total'] >= (before['vkserve:request_aborted_total'] || 0) + 1 &&
        m['vkserve:num_requests_running'] === 0) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.ok(m['vkserve:request_aborted_total'] >= (before['vkserve:request_aborted_total'] || 0) + 1, JSON.stringify(m));
  assert.equal(m['vkserve:num_requests_running'], 0);
  assert.ok(m['vkserve:client_disconnects_total'] >= (before['vkserve:client_disconnects_total'] || 0) + 1);
});

test('protocol violation closes with 1002; oversized frames never reach the app', async () => {
  const c = await connect(mainUrl());
  // ws refuses to send reserved opcodes, so write one on the raw socket.
  c.ws._socket.write(Buffer.from([0x83, 0x80, 1, 2, 3, 4]));
  const closed = await c.closed();
  assert.equal(closed.code, 1002);
});
