// Raw HTTP against vkserve (fetch, no SDK): SSE framing byte by byte, error bodies,
// operational endpoints, continuous usage, X-Request-Id, and a client that disconnects
// mid-stream (its request must be aborted: checked through /metrics).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, parseSse } from './lib/server.mjs';

const server = await startServer();
const model = 'stories260K';

after(async () => {
  const r = await server.stop();
  assert.equal(r.code, 0, `exit status after SIGTERM: ${JSON.stringify(r)}\n${server.log}`);
});

const post = (path, body, headers = {}) =>
  fetch(`${server.base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

function assertErrorBody(j, status) {
  assert.ok(j.error, JSON.stringify(j));
  assert.equal(typeof j.error.message, 'string');
  assert.equal(typeof j.error.type, 'string');
  assert.ok('param' in j.error);
  assert.equal(j.error.code, status);
}

test('health, ping (GET and POST), version', async () => {
  let r = await fetch(`${server.base}/health`);
  assert.equal(r.status, 200);
  assert.equal((await r.json()).status, 'ok');
  r = await fetch(`${server.base}/ping`);
  assert.equal(r.status, 200);
  r = await fetch(`${server.base}/ping`, { method: 'POST' });
  assert.equal(r.status, 200);
  r = await fetch(`${server.base}/version`);
  assert.equal(typeof (await r.json()).version, 'string');
});

test('chat SSE framing: data lines, chunk shape, [DONE] last', async () => {
  const r = await post('/v1/chat/completions', {
    model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 6, temperature: 0, stream: true,
  });
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type'), /^text\/event-stream/);
  const payloads = parseSse(await r.text());
  assert.equal(payloads[payloads.length - 1], '[DONE]');
  assert.equal(payloads.filter((p) => p === '[DONE]').length, 1);
  const chunks = payloads.slice(0, -1).map((p) => JSON.parse(p));
  for (const c of chunks) {
    assert.deepEqual(Object.keys(c).slice(0, 5), ['id', 'object', 'created', 'model', 'choices']);
    assert.equal(c.choices.length, 1);
    const ch = c.choices[0];
    assert.ok('logprobs' in ch && 'finish_reason' in ch);
    assert.ok(!('usage' in c) || c.usage === null);
  }
  assert.deepEqual(chunks[0].choices[0].delta, { role: 'assistant', content: '' });
  assert.ok(chunks[chunks.length - 1].choices[0].finish_reason);
});

test('continuous_usage_stats: every chunk has cumulative usage', async () => {
  const r = await post('/v1/chat/completions', {
    model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 5, temperature: 0, stream: true,
    stream_options: { include_usage: true, continuous_usage_stats: true },
  });
  const chunks = parseSse(await r.text()).slice(0, -1).map((p) => JSON.parse(p));
  let prev = -1;
  for (const c of chunks) {
    assert.ok(c.usage, JSON.stringify(c));
    assert.ok(c.usage.completion_tokens >= prev);
    prev = c.usage.completion_tokens;
  }
});

test('completion SSE: usage null on chunks, no role chunk', async () => {
  const r = await post('/v1/completions', { model, prompt: 'Once', max_tokens: 4, temperature: 0, stream: true });
  const payloads = parseSse(await r.text());
  assert.equal(payloads.at(-1), '[DONE]');
  for (const p of payloads.slice(0, -1)) {
    const c = JSON.parse(p);
    assert.equal(c.object, 'text_completion');
    assert.equal(c.usage, null);
    assert.equal(typeof c.choices[0].text, 'string');
  }
});

test('error bodies: JSON, content type, validation, unknown model, routes', async () => {
  let r = await post('/v1/chat/completions', '{"model": ');
  assert.equal(r.status, 400);
  let j = await r.json();
  assertErrorBody(j, 400);
  assert.match(j.error.message, /JSON/);

  r = await post('/v1/chat/completions', '{}', { 'content-type': 'text/plain' });
  assert.equal(r.status, 400);
  assertErrorBody(await r.json(), 400);

  r = await post('/v1/chat/completions', { model, messages: [{ role: 'user', content: 'x' }], top_p: 0 });
  assert.equal(r.status, 400);
  j = await r.json();
  assertErrorBody(j, 400);
  assert.equal(j.error.param, 'top_p');

  r = await post('/v1/chat/completions', { model, messages: [{ role: 'user', content: 'x' }], stream_options: { include_usage: true } });
  assert.equal(r.status, 400);

  r = await post('/v1/chat/completions', { model: 'gpt-4', messages: [{ role: 'user', content: 'x' }] });
  assert.equal(r.status, 404);
  j = await r.json();
  assertErrorBody(j, 404);
  assert.match(j.error.message, /The model `gpt-4` does not exist/);

  r = await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }], max_tokens: 2, unknown_field: 1 });
  assert.equal(r.status, 200, 'model omitted and unknown fields are fine');

  r = await fetch(`${server.base}/v1/nothing`);
  assert.equal(r.status, 404);
  assertErrorBody(await r.json(), 404);
  r = await fetch(`${server.base}/v1/chat/completions`);
  assert.equal(r.status, 405);
});

test('context overflow names both token counts', async () => {
  const long = 'Once upon a time there was a little girl. '.repeat(400);
  const r = await post('/v1/completions', { model, prompt: long, max_tokens: 10 });
  assert.equal(r.status, 400);
  const j = await r.json();
  assertErrorBody(j, 400);
  const nums = j.error.message.match(/\d+/g) || [];
  assert.ok(nums.length >= 2, j.error.message);
  const r2 = await post('/v1/completions', { model, prompt: 'Once', max_tokens: 1000000 });
  assert.equal(r2.status, 400);
});

test('X-Request-Id becomes the response id', async () => {
  const r = await post('/v1/chat/completions', { model, messages: [{ role: 'user', content: 'x' }], max_tokens: 2 },
    { 'x-request-id': 'abc-123' });
  assert.equal((await r.json()).id, 'chatcmpl-abc-123');
});

test('tokenize / detokenize round trip', async () => {
  const t = await (await post('/tokenize', { prompt: 'Once upon a time', add_special_tokens: false })).json();
  assert.equal(t.count, t.tokens.length);
  assert.ok(t.max_model_len > 0);
  const d = await (await post('/detokenize', { tokens: t.tokens })).json();
  assert.equal(d.prompt.trim(), 'Once upon a time');
  const c = await (await post('/tokenize', { messages: [{ role: 'user', content: 'Hi' }] })).json();
  assert.ok(c.count > 0);
  const bad = await post('/detokenize', { tokens: [-1] });
  assert.equal(bad.status, 400);
});

test('a client that disconnects mid-stream aborts its request', async () => {
  const before = await server.metrics();
  const ac = new AbortController();
  const r = await post('/v1/completions', {
    model, prompt: 'Once upon a time', max_tokens: 400, ignore_eos: true, temperature: 0, stream: true,
  }, {});
  const reader = r.body.getReader();
  await reader.read();  // the first chunk has arrived: generation is running
  await reader.cancel();
  ac.abort();
  const deadline = Date.now() + 20000;
  let m;
  for (;;) {
    m = await server.metrics();
    const aborted = (m['vkserve:request_aborted_total'] || 0) - (before['vkserve:request_aborted_total'] || 0);
    const gone = (m['vkserve:client_disconnects_total'] || 0) - (before['vkserve:client_disconnects_total'] || 0);
    if (aborted >= 1 && gone >= 1 && (m['vkserve:num_requests_running'] || 0) === 0) break;
    if (Date.now() > deadline) assert.fail(`not aborted: ${JSON.stringify(m)}`);
    await new Promise((res) => setTimeout(res, 50));
  }
  // Far fewer than 400 tokens were generated for it.
  const gen = m['vkserve:generation_tokens_total'] - (before['vkserve:generation_tokens_total'] || 0);
  assert.ok(gen < 400, `generated ${gen} tokens after the disconnect`);
});

test('echo with max_tokens 0 returns the prompt without generating', async () => {
  const r = await post('/v1/completions', { model, prompt: ['Once upon a time', 'The cat'], max_tokens: 0, echo: true });
  assert.equal(r.status, 200);
  const j = await r.json();
  assert.deepEqual(j.choices.map((c) => c.text), ['Once upon a time', 'The cat']);
  assert.equal(j.usage.completion_tokens, 0);
  assert.ok(j.usage.prompt_tokens > 0);
  assert.equal(j.choices[0].finish_reason, 'length');
  const bad = await post('/v1/completions', { model, prompt: 'x', max_tokens: 0 });
  assert.equal(bad.status, 400);
});

test('chat echo repeats the last message only when its role is the reply role', async () => {
  const chat = async (body) => {
    const r = await post('/v1/chat/completions', { model, max_tokens: 6, temperature: 0, ...body });
    const j = await r.json();
    assert.equal(r.status, 200, JSON.stringify(j));
    return j.choices[0].message;
  };
  // Last message from the user, reply from the assistant: nothing to echo.
  const user = [{ role: 'user', content: 'Once upon a time' }];
  const plain = await chat({ messages: user });
  const echoed = await chat({ messages: user, echo: true });
  assert.equal(echoed.content, plain.content);
  // continue_final_message alone (add_generation_prompt not given): the assistant's
  // unfinished message is continued, and echo repeats it (text parts joined by newlines,
  // as the template renders them).
  const partial = [{ role: 'user', content: 'Tell a story.' },
    { role: 'assistant', content: [{ type: 'text', text: 'Once upon' }, { type: 'text', text: ' a time' }] }];
  const cont = await chat({ messages: partial, continue_final_message: true });
  assert.equal(cont.role, 'assistant');
  const contEcho = await chat({ messages: partial, continue_final_message: true, echo: true });
  assert.equal(contEcho.content, 'Once upon\n a time' + cont.content);
  const both = await post('/v1/chat/completions', { model, messages: partial, continue_final_message: true, add_generation_prompt: true });
  assert.equal(both.status, 400);
});
