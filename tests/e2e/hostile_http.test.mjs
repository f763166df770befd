// Hostile clients at the HTTP/WebSocket surface (issue 17), against the real binary under a
// memory limit: many connections half-sending large bodies keep RSS bounded by the
// buffered-request budget while /health answers within a second; the API key guards
// WebSocket upgrades (both ports; Bearer header or the `bearer.KEY` subprotocol) and, outside
// SageMaker mode, /invocations; a browser Origin not allow-listed gets 403; a WebSocket that
// sends half a message is closed (1008) after the assembly timeout; no info route shows the
// model's filesystem path.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startServer, skip, modelPath } from './lib/server.mjs';

let WebSocket;
try {
  ({ WebSocket } = await import('ws'));
} catch {
  skip('the ws npm package is not installed (tests/e2e/node_modules)');
}

const key = 'sekrit-42';
const budget = 64 * 1024 * 1024;
const server = await startServer([
  '--api-key', key,
  '--allowed-origins', 'https://good.example, http://localhost:3000',
  '--bidi-assembly-timeout', '0.5',
  '--max-buffered-request-bytes', String(budget),
], { memoryLimitBytes: 8 * 1024 ** 3 });
const bidiPort = Number((server.log.match(/bidi streaming on port (\d+)/) || [])[1]);
const wsMain = `ws://127.0.0.1:${server.port}/invocations-bidirectional-stream`;
const wsBidi = `ws://127.0.0.1:${bidiPort}/invoke-bidi-stream`;
const auth = { authorization: `Bearer ${key}` };

after(async () => {
  const r = await server.stop();
  assert.equal(r.code, 0, `exit status after SIGTERM: ${JSON.stringify(r)}\n${server.log}`);
});

// Opens a WebSocket: resolves {ws, protocol} once open, or {status} when the upgrade is refused.
function openWs(url, { protocols, headers, origin } = {}) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, protocols, { headers, origin });
    ws.once('open', () => resolve({ ws, protocol: ws.protocol }));
    ws.once('unexpected-response', (_req, res) => {
      resolve({ status: res.statusCode });
      res.resume();
      ws.terminate();
    });
    ws.once('error', (e) => reject(e));
  });
}

const closed = (ws) => new Promise((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));

test('WebSocket upgrades need the API key on both ports', async () => {
  assert.ok(bidiPort > 0, `the bidi port is open when asked for (--bidi-port 0):\n${server.log}`);
  for (const url of [wsMain, wsBidi]) {
    assert.equal((await openWs(url)).status, 401, url);
    assert.equal((await openWs(url, { headers: { authorization: 'Bearer wrong' } })).status, 401, url);
    assert.equal((await openWs(url, { protocols: ['bearer.wrong'] })).status, 401, url);
    const a = await openWs(url, { headers: auth });
    assert.ok(a.ws, url);
    a.ws.close();
    // Browsers cannot set headers: the key as a subprotocol entry; `vkserve` is selected when offered.
    const b = await openWs(url, { protocols: ['vkserve', `bearer.${key}`] });
    assert.equal(b.protocol, 'vkserve');
    b.ws.send(JSON.stringify({ prompt: 'Once', max_tokens: 2 }));
    const reply = await new Promise((resolve) => b.ws.once('message', (d) => resolve(JSON.parse(d.toString()))));
    assert.equal(reply.object, 'text_completion');
    b.ws.close();
    const c = await openWs(url, { protocols: [`bearer.${key}`] });
    assert.equal(c.protocol, `bearer.${key}`);
    c.ws.close();
  }
});

test('a browser Origin not allow-listed is refused with 403', async () => {
  for (const url of [wsMain, wsBidi]) {
    assert.equal((await openWs(url, { headers: auth, origin: 'https://evil.example' })).status, 403, url);
    assert.equal((await openWs(url, { headers: auth, origin: 'null' })).status, 403, url);
    const ok = await openWs(url, { headers: auth, origin: 'https://good.example' });
    assert.ok(ok.ws, url);
    ok.ws.close();
  }
  let r = await fetch(`${server.base}/v1/completions`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json', origin: 'https://evil.example' },
    body: JSON.stringify({ prompt: 'x', max_tokens: 1 }),
  });
  assert.equal(r.status, 403);
  assert.equal((await r.json()).error.type, 'PermissionDeniedError');
  assert.equal(r.headers.get('access-control-allow-origin'), null, 'no permissive CORS');
  r = await fetch(`${server.base}/v1/models`, { headers: { ...auth, origin: 'http://localhost:3000' } });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('access-control-allow-origin'), null);
});

test('/invocations needs the key outside SageMaker mode', async () => {
  const post = (headers) => fetch(`${server.base}/invocations`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ prompt: 'Once', max_tokens: 2 }),
  });
  let r = await post({});
  assert.equal(r.status, 401);
  assert.equal((await r.json()).error.type, 'AuthenticationError');
  r = await post(auth);
  assert.equal(r.status, 200);
  assert.equal((await r.json()).object, 'text_completion');
  assert.equal((await fetch(`${server.base}/ping`)).status, 200, '/ping stays open');
});

test('info routes do not show the model path', async () => {
  const dir = modelPath.slice(0, modelPath.lastIndexOf('/'));
  for (const [path, headers] of [['/health', {}], ['/v1/models', auth], ['/v1/models/stories260K', auth],
    ['/version', {}], ['/metrics', {}], ['/ping', {}]]) {
    const r = await fetch(`${server.base}${path}`, { headers });
    assert.equal(r.status, 200, path);
    const text = await r.text();
    assert.ok(!text.includes(dir), `${path} shows ${dir}: ${text.slice(0, 300)}`);
  }
  const card = await (await fetch(`${server.base}/v1/models/stories260K`, { headers: auth })).json();
  assert.equal(card.root, 'stories260K');
});

test('a WebSocket that sends half a message is closed after the assembly timeout', async () => {
  const { ws } = await openWs(wsMain, { headers: auth });
  const t0 = Date.now();
  const done = closed(ws);
  // The first fragment of a text message (FIN clear); the rest never comes.
  ws.send('{"prompt": "Once', { fin: false });
  const c = await done;
  assert.equal(c.code, 1008, JSON.stringify(c));
  assert.ok(Date.now() - t0 >= 400, 'closed by the timeout, not at once');
  await server.assertHealthy(1000);
});

test('many connections half-sending large bodies: RSS stays bounded, /health answers', async () => {
  const n = 200;
  const bodyBytes = 16 * 1024 * 1024;  // the largest body a request may declare
  const sendBytes = 8 * 1024 * 1024;   // each sends half, then stalls
  const rss0 = server.rssBytes();
  const chunk = Buffer.alloc(1024 * 1024, 0x61);
  const statuses = [];
  const sockets = [];
  let nClosedByServer = 0;  // refused: the answer (503) may be lost to the reset that follows
  await Promise.all(Array.from({ length: n }, () => new Promise((resolve) => {
    const s = net.connect(server.port, '127.0.0.1');
    sockets.push(s);
    let answer = '';
    s.on('data', (d) => {
      answer += d.toString('latin1');
      const m = answer.match(/^HTTP\/1\.1 (\d+)/);
      if (m) statuses.push(Number(m[1]));
    });
    s.on('error', () => {});
    s.on('close', () => { nClosedByServer += 1; resolve(); });
    s.once('connect', async () => {
      s.write(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${bodyBytes}\r\n\r\n`);
      for (let sent = 0; sent < sendBytes && !s.destroyed; sent += chunk.length) {
        if (!s.write(chunk)) await new Promise((r) => { s.once('drain', r); s.once('close', r); });
      }
      resolve();  // half sent (or refused): hold the connection open
    });
  })));
  const rss1 = server.rssBytes();
  await server.assertHealthy(1000, 'while 200 connections hold half-sent bodies');
  const held = await server.metrics();
  assert.ok(held['vkserve:http_buffered_request_bytes'] > 0, 'the held bodies show in /metrics');
  assert.ok(held['vkserve:http_buffered_request_bytes'] <= budget, 'within the budget');
  assert.ok(held['vkserve:http_open_connections'] >= 1, 'open connections show in /metrics');
  const refused = nClosedByServer;
  for (const s of sockets) s.destroy();
  assert.ok(statuses.every((s) => s === 503), `statuses: ${statuses}`);
  assert.ok(statuses.length > 0, 'some 503 answers were read');
  assert.ok(rss1 - rss0 < budget + 128 * 1024 * 1024,
    `RSS grew by ${((rss1 - rss0) / 2 ** 20).toFixed(0)} MiB with a ${budget / 2 ** 20} MiB budget`);
  assert.ok(refused >= n - 8, `only ${refused} of ${n} connections were refused`);
  await server.assertHealthy(1000, 'after the connections closed');
  // The peers are gone: their reservations come back (bounded wait), so bodies fit again.
  let status = 0;
  for (let i = 0; i < 50 && status !== 200; i++) {
    if (i) await new Promise((r) => setTimeout(r, 100));
    const r = await fetch(`${server.base}/v1/completions`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'Once', max_tokens: 1 }),
    });
    status = r.status;
    await r.arrayBuffer();
  }
  assert.equal(status, 200, 'the budget was returned when the connections closed');
  // A reservation is returned when its handler returns, just after the answer is sent.
  let left = -1;
  for (let i = 0; i < 20 && left !== 0; i++) {
    if (i) await new Promise((r) => setTimeout(r, 50));
    left = (await server.metrics())['vkserve:http_buffered_request_bytes'];
  }
  assert.equal(left, 0, 'no bytes left charged');
});

test('a WebSocket session queues at most 64 requests; more get error frames', async () => {
  const { ws } = await openWs(wsMain, { headers: auth });
  const n = 100;
  const frames = [];
  const count = (pred) => frames.filter(pred).length;
  // Until every refusal has arrived (fixed code) or more than 65 requests were served
  // (a session without the cap); then closing the socket drops what still waits.
  const enough = new Promise((resolve) => ws.on('message', (d) => {
    frames.push(JSON.parse(d.toString()));
    if (count((f) => f.error) >= n - 65 || count((f) => !f.error) > 65 || frames.length === n) resolve();
  }).once('close', (code, reason) => {
    frames.push({ closed: code, reason: reason.toString() });
    resolve();
  }));
  // All sent at once: the first (long) runs while the others wait in the session's queue.
  for (let i = 0; i < n; i++)
    ws.send(JSON.stringify({ id: `r${i}`, prompt: 'Once upon a time', max_tokens: i === 0 ? 64 : 1 }));
  await enough;
  ws.close();
  const errors = frames.filter((f) => f.error);
  assert.ok(errors.length >= n - 65, `${errors.length} error frames of ${frames.length}; last ${JSON.stringify(frames.at(-1))}`);
  for (const e of errors) {
    assert.equal(e.error.type, 'RateLimitError');
    assert.equal(e.error.code, 429);
  }
  await server.assertHealthy(1000);
});
