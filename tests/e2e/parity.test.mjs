// The same request over HTTP and over the bidirectional-streaming WebSocket (main-port path
// /invocations-bidirectional-stream) must give the same answer: both transports run the
// same preparation and drive loop, so with temperature 0 (or a fixed seed) the responses,
// stream chunks and LMI lines are equal once `id` and `created` are normalized. Cases:
// chat, completions and LMI, streamed and not, with echo (and echo with max_tokens 0),
// logprobs, prompt_logprobs, n > 1, several prompts and return_token_ids.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, skip, parseSse } from './lib/server.mjs';

let WebSocket;
try {
  ({ WebSocket } = await import('ws'));
} catch {
  skip('the ws npm package is not installed (tests/e2e/node_modules)');
}

const server = await startServer([]);
const model = 'stories260K';

after(async () => {
  const r = await server.stop();
  assert.equal(r.code, 0, `exit status after SIGTERM: ${JSON.stringify(r)}\n${server.log}`);
});

// One WebSocket for every case: requests run one at a time, each answered in order.
const ws = new WebSocket(`ws://127.0.0.1:${server.port}/invocations-bidirectional-stream`);
const frames = [];
const waiters = [];
ws.on('message', (data) => {
  const w = waiters.shift();
  if (w) w(data.toString('utf8'));
  else frames.push(data.toString('utf8'));
});
await new Promise((resolve, reject) => {
  ws.once('open', resolve);
  ws.once('error', reject);
});
after(() => ws.close());

const nextFrame = () =>
  new Promise((resolve, reject) => {
    if (frames.length) return resolve(frames.shift());
    const timer = setTimeout(() => reject(new Error('no frame within 60 s')), 60000);
    waiters.push((f) => {
      clearTimeout(timer);
      resolve(f);
    });
  });

// `id` and `created` differ per request: replaced wherever they appear at an object's top.
function normalize(v) {
  if (Array.isArray(v)) return v.map(normalize);
  if (v && typeof v === 'object') {
    const out = {};
    for (const [k, x] of Object.entries(v)) out[k] = k === 'id' || k === 'created' ? '<norm>' : normalize(x);
    return out;
  }
  return v;
}

// Stream chunks in choice order (stable): how the choices of different prompts (or
// sequences) interleave depends on scheduling, not on the transport. Chunks without a
// choice (usage) stay last.
function byChoice(chunks) {
  const key = (c) => (Array.isArray(c.choices) && c.choices.length ? c.choices[0].index : Infinity);
  return chunks.map((c, i) => [key(c), i, c]).sort((a, b) => a[0] - b[0] || a[1] - b[1]).map((x) => x[2]);
}

// Over HTTP: the JSON response, or the stream's payloads (SSE data / JSON lines) parsed.
async function overHttp(path, body, streaming) {
  const r = await fetch(`${server.base}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await r.text();
  assert.equal(r.status, 200, text);
  if (!streaming) return JSON.parse(text);
  if (path === '/invocations' && body.inputs !== undefined) {
    assert.match(r.headers.get('content-type'), /application\/jsonlines/);
    return text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));
  }
  const payloads = parseSse(text);
  assert.equal(payloads.pop(), '[DONE]');
  return payloads.map((p) => JSON.parse(p));
}

// Over the WebSocket: one frame with the response, or frames until `[DONE]`.
async function overWs(body, streaming) {
  ws.send(JSON.stringify(body));
  if (!streaming) return JSON.parse(await nextFrame());
  const out = [];
  for (;;) {
    const f = await nextFrame();
    if (f === '[DONE]') return out;
    out.push(JSON.parse(f));
  }
}

const chat = (extra) => ({
  model,
  messages: [{ role: 'user', content: 'Once upon a time' }],
  max_tokens: 8,
  temperature: 0,
  ...extra,
});
const completion = (extra) => ({ model, prompt: 'Once upon a time', max_tokens: 8, temperature: 0, ...extra });
const lmi = (extra, stream = false) => ({
  inputs: 'Once upon a time',
  parameters: { max_new_tokens: 8, do_sample: false, ...extra },
  stream,
});

const cases = [
  ['chat', '/v1/chat/completions', chat({})],
  ['chat n=2 logprobs token ids', '/v1/chat/completions', chat({ n: 2, temperature: 0.8, seed: 5, logprobs: true, top_logprobs: 2, return_token_ids: true })],
  ['chat prompt_logprobs', '/v1/chat/completions', chat({ prompt_logprobs: 1 })],
  ['chat echo', '/v1/chat/completions',
    chat({ echo: true, add_generation_prompt: false,
      messages: [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Once upon' }] })],
  ['chat seeded', '/v1/chat/completions', chat({ temperature: 0.9, seed: 7, n: 2 })],
  ['chat stream', '/v1/chat/completions',
    chat({ stream: true, n: 2, temperature: 0.8, seed: 5, logprobs: true, top_logprobs: 1, stream_options: { include_usage: true } })],
  ['chat stream echo', '/v1/chat/completions',
    chat({ stream: true, echo: true, add_generation_prompt: false,
      messages: [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Once upon' }] })],
  ['completion', '/v1/completions', completion({})],
  ['completion echo logprobs n=2 token ids', '/v1/completions',
    completion({ echo: true, logprobs: 2, n: 2, temperature: 0.8, seed: 5, return_token_ids: true })],
  ['completion prompt_logprobs', '/v1/completions', completion({ prompt_logprobs: 1 })],
  ['completion echo max_tokens 0', '/v1/completions', completion({ echo: true, max_tokens: 0 })],
  ['completion two prompts', '/v1/completions', completion({ prompt: ['Once upon a time', 'The cat'], n: 2, temperature: 0.8, seed: 5 })],
  ['completion seeded', '/v1/completions', completion({ temperature: 0.9, seed: 11 })],
  ['completion stream', '/v1/completions',
    completion({ stream: true, echo: true, logprobs: 1, n: 2, temperature: 0.8, seed: 5, return_token_ids: true,
      stream_options: { include_usage: true } })],
  ['completion stream echo max_tokens 0', '/v1/completions',
    completion({ stream: true, echo: true, max_tokens: 0, stream_options: { include_usage: true } })],
  ['completion stream two prompts', '/v1/completions',
    completion({ stream: true, prompt: ['Once upon a time', 'The cat'] })],
  ['lmi', '/invocations', lmi({ details: true })],
  ['lmi stream', '/invocations', lmi({ details: true }, true)],
];

for (const [name, path, body] of cases) {
  test(`HTTP and WebSocket agree: ${name}`, async () => {
    const streaming = body.stream === true;
    const viaHttp = await overHttp(path, body, streaming);
    const viaWs = await overWs(body, streaming);
    assert.ok(!viaWs.error, `WebSocket error: ${JSON.stringify(viaWs)}`);
    if (streaming) assert.deepEqual(normalize(byChoice(viaWs)), normalize(byChoice(viaHttp)));
    else assert.deepEqual(normalize(viaWs), normalize(viaHttp));
  });
}

// The drift this suite was written for: echo with max_tokens 0 is the prompt alone.
test('echo with max_tokens 0 returns the prompt only, over both transports', async () => {
  const body = completion({ echo: true, max_tokens: 0, n: 2, temperature: 0.8, seed: 5 });
  for (const r of [await overHttp('/v1/completions', body, false), await overWs(body, false)]) {
    assert.equal(r.choices.length, 2);
    for (const c of r.choices) {
      assert.equal(c.text, 'Once upon a time');
      assert.equal(c.finish_reason, 'length');
    }
    assert.equal(r.usage.completion_tokens, 0);
  }
});

test('prompt_logprobs are set over the WebSocket', async () => {
  const r = await overWs(completion({ prompt_logprobs: 1 }), false);
  assert.ok(Array.isArray(r.choices[0].prompt_logprobs), JSON.stringify(r.choices[0]));
  assert.ok(r.choices[0].prompt_logprobs.length > 1);
});
