// Hostile input on the routes added after the hostile-client suite (issue #25's
// /v1/messages, /v1/messages/count_tokens, /v1/responses, /v1/embeddings): bodies nested 10^6
// deep, wrong types, out-of-range values, broken UTF-8, oversized lists and unknown ids each
// get a clear 4xx in the route's own error shape (Anthropic's {"type":"error","error":{...}}
// on /v1/messages*, OpenAI's elsewhere), and the server keeps answering /health within a
// second after each. One I/O thread, under a memory limit, so a parse on the event loop or a
// runaway allocation shows here.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from './lib/server.mjs';

const server = await startServer(['--io-threads', '1', '--embeddings'], { memoryLimitBytes: 8 * 1024 ** 3 });
const model = 'stories260K';
const DEPTH = 1_000_000;
const deepArrays = (n) => '['.repeat(n) + ']'.repeat(n);

after(async () => {
  const r = await server.stop();
  assert.equal(r.code, 0, `exit status after SIGTERM: ${JSON.stringify(r)}\n${server.log}`);
});

async function post(path, body, headers = {}) {
  const r = await fetch(`${server.base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
    signal: AbortSignal.timeout(60000),
  });
  const text = await r.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: r.status, json, text };
}

// The route's error shape: Anthropic's on /v1/messages*, OpenAI's elsewhere. Returns the message.
function errorMessage(path, r, what) {
  assert.ok(r.status >= 400 && r.status < 500, `${what}: status ${r.status}: ${r.text.slice(0, 300)}`);
  assert.ok(r.json, `${what}: the error body is JSON: ${r.text.slice(0, 300)}`);
  if (path.startsWith('/v1/messages')) {
    assert.equal(r.json.type, 'error', what);
    assert.equal(r.json.error.type, 'invalid_request_error', what);
    return r.json.error.message;
  }
  assert.equal(r.json.error.code, r.status, what);
  return r.json.error.message;
}

const routes = ['/v1/messages', '/v1/messages/count_tokens', '/v1/responses', '/v1/embeddings'];

for (const path of routes) {
  test(`${path}: a body nested ${DEPTH} deep is a 400 and /health stays up`, async () => {
    const r = await post(path, deepArrays(DEPTH));
    assert.match(errorMessage(path, r, path), /nesting exceeds 128 levels/);
    await server.assertHealthy(1000, `after a deep body on ${path}`);
  });

  test(`${path}: broken UTF-8 and a non-object body are 400s`, async () => {
    const bad = Buffer.concat([Buffer.from(`{"model":"${model}","input":"`), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]);
    assert.equal((await post(path, bad)).status, 400);
    for (const body of ['[]', '"x"', '', '{"model":']) {
      const r = await post(path, body);
      errorMessage(path, r, `${path} ${JSON.stringify(body)}`);
      assert.equal(r.status, 400, `${path} ${JSON.stringify(body)}`);
    }
    await server.assertHealthy(1000, `after broken bodies on ${path}`);
  });
}

const user = [{ role: 'user', content: 'Hi' }];
const cases = [
  ['/v1/messages', 'messages of the wrong type', { model, max_tokens: 4, messages: 5 }, /messages/],
  ['/v1/messages', 'max_tokens negative', { model, max_tokens: -1, messages: user }, /max_tokens/],
  ['/v1/messages', 'max_tokens missing', { model, messages: user }, /max_tokens/],
  ['/v1/messages', 'temperature out of range', { model, max_tokens: 4, messages: user, temperature: 7 }, /temperature/],
  ['/v1/messages', 'a block of an unknown type',
    { model, max_tokens: 4, messages: [{ role: 'user', content: [{ type: 'hologram' }] }] }, /hologram|type/],
  ['/v1/messages', 'tool_choice naming an absent tool',
    { model, max_tokens: 4, messages: user, tools: [{ name: 'f', input_schema: { type: 'object' } }],
      tool_choice: { type: 'tool', name: 'g' } }, /`g`/],
  ['/v1/messages/count_tokens', 'messages of the wrong type', { model, messages: { a: 1 } }, /messages/],
  ['/v1/responses', 'input of the wrong type', { model, input: 5 }, /input/],
  ['/v1/responses', 'max_output_tokens negative', { model, input: 'Hi', max_output_tokens: -3 }, /max_output_tokens/],
  ['/v1/responses', 'an unknown previous_response_id', { model, input: 'Hi', previous_response_id: 'resp_nope' },
    /resp_nope|previous_response_id/],
  ['/v1/responses', 'tool_choice naming an absent tool',
    { model, input: 'Hi', tools: [{ type: 'function', name: 'f', parameters: { type: 'object' } }],
      tool_choice: { type: 'function', name: 'g' } }, /`g`/],
  ['/v1/embeddings', 'an empty input list', { model, input: [] }, /empty/],
  ['/v1/embeddings', 'a token id out of range', { model, input: [[1, 2, 1e9]] }, /out of vocabulary range/],
  ['/v1/embeddings', 'a negative token id', { model, input: [-5] }, /out of vocabulary range|integers/],
  ['/v1/embeddings', 'a list mixing strings and bare ids', { model, input: ['a', 5] }, /each item/],
  ['/v1/embeddings', 'an unknown encoding_format', { model, input: 'a', encoding_format: 'hex' }, /encoding_format/],
  ['/v1/embeddings', 'dimensions of zero', { model, input: 'a', dimensions: 0 }, /dimensions/],
  ['/v1/embeddings', 'an input longer than the context', { model, input: 'once upon a time '.repeat(2000) }, /context/],
  ['/v1/embeddings', '5000 inputs (the cap is 2048)', { model, input: Array(5000).fill('a') }, /at most 2048/],
  ['/v1/embeddings', 'a million inputs (the JSON value cap)', { model, input: Array(1_000_000).fill('a') },
    /more than 1000000 values/],
];

for (const [path, what, body, re] of cases) {
  test(`${path}: ${what} is a clear 4xx`, async () => {
    const r = await post(path, JSON.stringify(body));
    assert.match(errorMessage(path, r, what), re, `${what}: ${r.text.slice(0, 300)}`);
  });
}

test('the server still serves each route after the hostile requests', async () => {
  await server.assertHealthy(1000, 'after all hostile requests');
  const m = await post('/v1/messages', JSON.stringify({ model, max_tokens: 4, messages: user }));
  assert.equal(m.status, 200, m.text);
  assert.equal(m.json.type, 'message');
  const r = await post('/v1/responses', JSON.stringify({ model, input: 'Hi', max_output_tokens: 4 }));
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.object, 'response');
});
