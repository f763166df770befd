// Request preparation runs off the I/O thread (issue 17): with one I/O thread, while a
// request that takes seconds to prepare (a multi-MB prompt to tokenize, on /tokenize,
// /v1/completions and a bidi WebSocket message) is being prepared, /health and a small
// chat completion on the same thread keep answering within a second. With a short
// --prep-timeout the heavy request gets 503 (+ Retry-After) and the server stays healthy.
// Runs the server under a memory limit (prlimit --as) so that a regression fails here.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, skip } from './lib/server.mjs';

let WebSocket;  // checked before any test: a skip never follows results
try {
  ({ WebSocket } = await import('ws'));
} catch {
  skip('the ws npm package is not installed (tests/e2e/node_modules)');
}

const model = 'stories260K';
const memoryLimitBytes = 8 * 1024 ** 3;
// ~4 MB of words (~1.3M tokens): a few seconds of decoding, tokenizing and (on /tokenize)
// building a ~7 MB answer, all of which ran on the I/O thread before the prep pool.
const heavyPrompt = 'Once upon a time there was a little dog who liked to run. '.repeat(70000);

let server = null;
let ws = null;
after(async () => {
  if (ws) ws.terminate();
  if (server) await server.stop();
});

async function chatSmall(base) {
  const r = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2, temperature: 0 }),
    signal: AbortSignal.timeout(1000),
  });
  const text = await r.text();
  assert.equal(r.status, 200, text);
  assert.equal(JSON.parse(text).object, 'chat.completion');
}

// Probes /health and a small chat every 200 ms until `heavy` settles; each must answer
// within a second. Returns the number of probe rounds and how long the heavy request took.
async function probeWhile(heavy, what) {
  const t0 = Date.now();
  let settled = false;
  const done = heavy.finally(() => { settled = true; });
  await new Promise((r) => setTimeout(r, 300));  // the heavy request is being prepared now
  let rounds = 0;
  while (!settled) {
    const t = Date.now();
    await server.assertHealthy(1000, `${what}, probe ${rounds}`);
    await chatSmall(server.base).catch((e) => {
      throw new Error(`${what}: a small chat did not answer within 1 s (probe ${rounds}): ${e.message}`);
    });
    const ms = Date.now() - t;
    assert.ok(ms < 2000, `${what}: probe ${rounds} took ${ms} ms`);
    rounds += 1;
    await new Promise((r) => setTimeout(r, 200));
  }
  const result = await done;
  return { rounds, ms: Date.now() - t0, result };
}

function post(path, body) {
  return fetch(`${server.base}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  }).then(async (r) => ({ status: r.status, headers: r.headers, text: await r.text() }));
}

test('a heavy /tokenize does not stall /health or a small chat on its I/O thread', async () => {
  // Default --prep-threads (auto: at least 2), so this part runs against older builds too.
  server = await startServer(['--io-threads', '1'], { memoryLimitBytes });
  await chatSmall(server.base).catch(() => {});  // the first generation may compile pipelines
  const heavy = post('/tokenize', { model, prompt: heavyPrompt, return_token_strs: true });
  const { rounds, ms, result } = await probeWhile(heavy, '/tokenize');
  assert.equal(result.status, 200, result.text.slice(0, 300));
  const j = JSON.parse(result.text);
  assert.ok(j.count > 1000000, `count ${j.count}`);
  assert.ok(rounds >= 2, `the heavy request took only ${ms} ms: too light to show a stall`);
});

test('a heavy completion prompt (400 context overflow) does not stall the loop either', async () => {
  const heavy = post('/v1/completions', { model, prompt: heavyPrompt, max_tokens: 4 });
  const { rounds, ms, result } = await probeWhile(heavy, '/v1/completions');
  assert.equal(result.status, 400, result.text.slice(0, 300));
  assert.ok(rounds >= 1, `the heavy request took only ${ms} ms`);
});

test('a heavy bidi WebSocket message does not stall the loop', async () => {
  ws = new WebSocket(`ws://127.0.0.1:${server.port}/invocations-bidirectional-stream`);
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  const frame = new Promise((resolve) => ws.once('message', (d) => resolve(d.toString('utf8'))));
  ws.send(JSON.stringify({ id: 'big', prompt: heavyPrompt, max_tokens: 4 }));
  const { result } = await probeWhile(frame, 'bidi message');
  const err = JSON.parse(result);
  assert.equal(err.id, 'big');
  assert.equal(err.error.code, 400);
  ws.close();
  ws = null;
  const r = await server.stop();
  server = null;
  assert.equal(r.code, 0, `exit status after SIGTERM: ${JSON.stringify(r)}`);
});

test('past --prep-timeout the heavy request gets 503 and the server stays healthy', async () => {
  server = await startServer(['--io-threads', '1', '--prep-threads', '2', '--prep-timeout', '0.5'],
    { memoryLimitBytes });
  await chatSmall(server.base).catch(() => {});
  const t0 = Date.now();
  const r = await post('/tokenize', { model, prompt: heavyPrompt, return_token_strs: true });
  const ms = Date.now() - t0;
  assert.equal(r.status, 503, r.text.slice(0, 300));
  assert.ok(r.headers.get('retry-after'), 'Retry-After on 503');
  const e = JSON.parse(r.text);
  assert.match(e.error.message, /could not be prepared within 500 ms/);
  assert.equal(e.error.type, 'ServiceUnavailableError');
  assert.ok(ms < 5000, `answered after ${ms} ms`);
  // The worker still finishes the discarded job; the other one serves meanwhile.
  await server.assertHealthy(1000, 'after the timeout');
  await chatSmall(server.base);
  const m = await server.metrics();
  assert.equal(m['vkserve:prep_timeouts_total'], 1, 'the timeout is counted in /metrics');
  const st = await server.stop();
  server = null;
  assert.equal(st.code, 0, `exit status after SIGTERM: ${JSON.stringify(st)}`);
});
