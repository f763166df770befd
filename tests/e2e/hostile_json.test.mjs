// Hostile JSON against the real binary (issue #17), under a memory limit so that a regression
// fails here instead of exhausting the machine: bodies nested 10^6 deep on /invocations,
// /v1/chat/completions, /v1/completions and one bidi WebSocket message each get a clear 400
// (an error frame on the socket) and the server keeps answering /health within a second; a
// 1.2 MB body with 100k keys does not stall /health while it is parsed (one I/O thread, so
// a parse on the event loop would block the probe).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, skip } from './lib/server.mjs';

let WebSocket;
try {
  ({ WebSocket } = await import('ws'));
} catch {
  skip('the ws npm package is not installed (tests/e2e/node_modules)');
}

const server = await startServer(['--io-threads', '1'], { memoryLimitBytes: 8 * 1024 ** 3 });
const model = 'stories260K';
const DEPTH = 1_000_000;
const deepArrays = (n) => '['.repeat(n) + ']'.repeat(n);
const deepObjects = (n) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);

after(async () => {
  const r = await server.stop();
  assert.equal(r.code, 0, `exit status after SIGTERM: ${JSON.stringify(r)}\n${server.log}`);
});

async function post(path, body) {
  const r = await fetch(`${server.base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
    signal: AbortSignal.timeout(60000),
  });
  return { status: r.status, json: await r.json().catch(() => null) };
}

function assertNestingRefused(r, what) {
  assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.json)}`);
  assert.equal(r.json.error.code, 400, what);
  assert.equal(r.json.error.type, 'BadRequestError', what);
  assert.match(r.json.error.message, /JSON nesting exceeds 128 levels/, what);
}

const deepBodies = [
  ['/v1/chat/completions', 'messages: arrays', `{"model":"${model}","messages":${deepArrays(DEPTH)}}`],
  ['/v1/chat/completions', 'content: objects',
    `{"model":"${model}","messages":[{"role":"user","content":${deepObjects(DEPTH)}}]}`],
  ['/v1/completions', 'prompt: arrays', `{"model":"${model}","prompt":${deepArrays(DEPTH)}}`],
  ['/invocations', 'inputs: objects', `{"inputs":${deepObjects(DEPTH)}}`],
  ['/invocations', 'the whole body: arrays', deepArrays(DEPTH)],
];

for (const [path, what, body] of deepBodies) {
  test(`${path}: a body nested ${DEPTH} deep (${what}) is a 400 and /health stays up`, async () => {
    assertNestingRefused(await post(path, body), path);
    await server.assertHealthy(1000, `after a deep body on ${path}`);
  });
}

test('bidi WebSocket: a message nested 10^6 deep answers an error frame; the socket stays usable', async () => {
  const ws = new WebSocket(`ws://127.0.0.1:${server.port}/invocations-bidirectional-stream`);
  const frames = [];
  const waiters = [];
  ws.on('message', (d) => (waiters.length ? waiters.shift()(d.toString()) : frames.push(d.toString())));
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  const next = () =>
    new Promise((resolve, reject) => {
      if (frames.length) return resolve(frames.shift());
      const timer = setTimeout(() => reject(new Error('no frame within 60 s')), 60000);
      waiters.push((t) => {
        clearTimeout(timer);
        resolve(t);
      });
    });
  ws.send(`{"model":"${model}","messages":${deepArrays(DEPTH)}}`);
  const f = JSON.parse(await next());
  assert.equal(f.error.code, 400, JSON.stringify(f));
  assert.match(f.error.message, /JSON nesting exceeds 128 levels/);
  await server.assertHealthy(1000, 'after a deep WebSocket message');
  ws.send(JSON.stringify({ prompt: 'Once', max_tokens: 2 }));
  assert.equal(JSON.parse(await next()).object, 'text_completion');
  ws.close();
});

test('a 1.2 MB body with 100k keys is parsed without stalling /health', async () => {
  const keys = [];
  for (let i = 0; i < 100_000; i++) keys.push(`"key${String(i).padStart(5, '0')}":0`);
  const body = `{"model":"${model}","prompt":"Once","max_tokens":1,${keys.join(',')}}`;
  assert.ok(body.length > 1_200_000, `${body.length} bytes`);
  let done = false;
  const reply = post('/v1/completions', body).finally(() => { done = true; });
  // Probe /health while the body is read and parsed; every probe must answer within a second.
  let probes = 0;
  await new Promise((r) => setTimeout(r, 20));
  do {
    await server.assertHealthy(1000, `probe ${probes} during a 100k-key body`);
    probes++;
    await new Promise((r) => setTimeout(r, 50));
  } while (!done && probes < 200);
  const r = await reply;
  assert.ok(r.status === 200 || r.status === 400, `status ${r.status}: ${JSON.stringify(r.json)}`);
  await server.assertHealthy(1000, 'after a 100k-key body');
});
