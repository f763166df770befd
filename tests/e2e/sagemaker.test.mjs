// SageMaker contract against vkserve: /ping, /invocations with each schema (messages ->
// chat, prompt -> completions, inputs -> LMI JSON / JSON lines), SSE through
// /invocations, dispatch errors; and --api-key: /v1/* needs the Bearer key while /ping
// and /invocations stay open. The server runs in SageMaker mode (SAGEMAKER_BIND_TO_PORT set;
// --port 0 and --host still win): outside it /invocations needs the key too (hostile_http).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, parseSse } from './lib/server.mjs';

const server = await startServer(['--api-key', 'sekrit', '--host', '127.0.0.1'],
  { env: { SAGEMAKER_BIND_TO_PORT: '8080' } });
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
const auth = { authorization: 'Bearer sekrit' };

test('api key: /v1 needs it, /ping /health /invocations do not', async () => {
  let r = await fetch(`${server.base}/v1/models`);
  assert.equal(r.status, 401);
  const j = await r.json();
  assert.equal(j.error.code, 401);
  r = await fetch(`${server.base}/v1/models`, { headers: { authorization: 'Bearer wrong' } });
  assert.equal(r.status, 401);
  r = await fetch(`${server.base}/v1/models`, { headers: { authorization: 'Bearer sekri' } });
  assert.equal(r.status, 401);
  r = await fetch(`${server.base}/v1/models`, { headers: auth });
  assert.equal(r.status, 200);
  r = await post('/v1/completions', { prompt: 'x', max_tokens: 1 });
  assert.equal(r.status, 401);
  assert.equal((await fetch(`${server.base}/ping`)).status, 200);
  assert.equal((await fetch(`${server.base}/health`)).status, 200);
  r = await post('/invocations', { prompt: 'Once', max_tokens: 2 });
  assert.equal(r.status, 200);
});

test('invocations with messages == /v1/chat/completions', async () => {
  const body = { messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 10, temperature: 0 };
  const a = await (await post('/invocations', body)).json();
  const b = await (await post('/v1/chat/completions', body, auth)).json();
  assert.equal(a.object, 'chat.completion');
  assert.equal(a.model, model);
  assert.equal(a.choices[0].message.content, b.choices[0].message.content);
  assert.deepEqual(a.usage, b.usage);
});

test('invocations with prompt == /v1/completions', async () => {
  const body = { prompt: 'Once upon a time', max_tokens: 10, temperature: 0 };
  const a = await (await post('/invocations', body)).json();
  const b = await (await post('/v1/completions', body, auth)).json();
  assert.equal(a.object, 'text_completion');
  assert.equal(a.choices[0].text, b.choices[0].text);
});

test('invocations with messages + stream: SSE ending in [DONE]', async () => {
  const r = await post('/invocations', { messages: [{ role: 'user', content: 'Hi' }], max_tokens: 5, stream: true });
  assert.match(r.headers.get('content-type'), /^text\/event-stream/);
  const p = parseSse(await r.text());
  assert.equal(p.at(-1), '[DONE]');
  assert.equal(JSON.parse(p[0]).object, 'chat.completion.chunk');
});

test('invocations LMI: generated_text, details, default 30 new tokens', async () => {
  let r = await post('/invocations', { inputs: 'Once upon a time', parameters: { max_new_tokens: 8, do_sample: false } });
  assert.equal(r.status, 200);
  let j = await r.json();
  assert.equal(typeof j.generated_text, 'string');
  const comp = await (await post('/invocations', { prompt: 'Once upon a time', max_tokens: 8, temperature: 0 })).json();
  assert.equal(j.generated_text, comp.choices[0].text);
  r = await post('/invocations', {
    inputs: 'Once upon a time', parameters: { do_sample: false, details: true, ignore_eos_token: true },
  });
  j = await r.json();
  assert.equal(j.details.generated_tokens, 30);
  assert.equal(j.details.finish_reason, 'length');
  assert.equal(j.details.tokens.length, 30);
  r = await post('/invocations', { inputs: 'Once', parameters: { return_full_text: true, max_new_tokens: 3 } });
  assert.ok((await r.json()).generated_text.startsWith('Once'));
});

test('invocations LMI: vLLM fields in parameters (structured output, truncate, max_tokens, prefill)', async () => {
  for (const parameters of [
    { guided_regex: '(yes|no)!', temperature: 1, seed: 4 },
    { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { enum: ['yes', 'no'] } } } },
    { structured_outputs: { choice: ['yes', 'no'] }, do_sample: false },
  ]) {
    const r = await post('/invocations', { inputs: 'Once upon a time', parameters: { max_new_tokens: 20, ...parameters } });
    assert.equal(r.status, 200, JSON.stringify(parameters));
    const text = (await r.json()).generated_text;
    assert.match(text, /^\s*"?(yes|no)"?!?$/, text);  // JSON may start with whitespace
  }
  // Streamed, the constraint holds too.
  const s = await post('/invocations', { inputs: 'Once', stream: true, parameters: { guided_choice: ['a dog', 'a cat'] } });
  const lines = (await s.text()).trim().split('\n').map((l) => JSON.parse(l));
  assert.ok(['a dog', 'a cat'].includes(lines.at(-1).generated_text));
  // truncate keeps the last k prompt tokens: the prefill has k - 1 scored tokens.
  const long = 'Once upon a time there was a little girl named Lily who liked to play';
  const r = await post('/invocations', {
    inputs: long, parameters: { truncate: 5, details: true, decoder_input_details: true, max_new_tokens: 4, max_tokens: 2, do_sample: false },
  });
  assert.equal(r.status, 200);
  const d = (await r.json()).details;
  assert.equal(d.prefill.length, 4);
  for (const t of d.prefill) assert.ok(Number.isInteger(t.id) && typeof t.log_prob === 'number');
  assert.equal(d.generated_tokens, 2);  // max_tokens wins over max_new_tokens
  const bad = await post('/invocations', { inputs: 'x', parameters: { guided_regex: 'a', guided_choice: ['a'] } });
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).error.param, 'parameters.structured_outputs');
});

test('invocations LMI stream: JSON lines, last line has generated_text', async () => {
  const r = await post('/invocations', { inputs: 'Once upon a time', parameters: { max_new_tokens: 6, do_sample: false }, stream: true });
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type'), /^application\/jsonlines/);
  const text = await r.text();
  assert.ok(text.endsWith('\n'));
  const lines = text.trim().split('\n').map((l) => JSON.parse(l));
  assert.ok(lines.length >= 1);
  for (const l of lines) assert.equal(typeof l.token.text, 'string');
  const last = lines.at(-1);
  assert.equal(last.generated_text, lines.map((l) => l.token.text).join(''));
});

test('invocations dispatch errors', async () => {
  let r = await post('/invocations', { foo: 1 });
  assert.equal(r.status, 400);
  assert.equal((await r.json()).error.code, 400);
  r = await post('/invocations', 'not json');
  assert.equal(r.status, 400);
  assert.match((await r.json()).error.message, /JSON/);
  r = await post('/invocations', '{}', { 'content-type': 'text/csv' });
  assert.equal(r.status, 400);
  r = await post('/invocations', { requestType: 'NEW_SESSION' });
  assert.equal(r.status, 400);
  r = await post('/invocations', { prompt: 'x', max_tokens: 1 }, { 'X-Amzn-SageMaker-Adapter-Identifier': 'lora-a' });
  assert.equal(r.status, 404);
  r = await post('/invocations', { prompt: 'x', max_tokens: 1 }, { 'X-Amzn-SageMaker-Custom-Attributes': 'a=b', 'X-Amzn-Whatever': '1' });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('x-amzn-sagemaker-custom-attributes'), 'a=b');
});

test('/invocations echoes X-Amzn-SageMaker-Custom-Attributes on every kind of reply', async () => {
  const attrs = { 'X-Amzn-SageMaker-Custom-Attributes': 'trace_id=42,c000=1' };
  let r = await post('/invocations', { prompt: 'Once', max_tokens: 2, stream: true }, attrs);
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('x-amzn-sagemaker-custom-attributes'), 'trace_id=42,c000=1');
  await r.text();
  r = await post('/invocations', { inputs: 'Once', parameters: { max_new_tokens: 2 }, stream: true }, attrs);
  assert.equal(r.headers.get('x-amzn-sagemaker-custom-attributes'), 'trace_id=42,c000=1');
  await r.text();
  r = await post('/invocations', { nothing: 1 }, attrs);
  assert.equal(r.status, 400);
  assert.equal(r.headers.get('x-amzn-sagemaker-custom-attributes'), 'trace_id=42,c000=1');
  await r.text();
  // Over 1024 characters: not echoed (still served).
  r = await post('/invocations', { prompt: 'Once', max_tokens: 1 }, { 'X-Amzn-SageMaker-Custom-Attributes': 'x'.repeat(1025) });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('x-amzn-sagemaker-custom-attributes'), null);
  await r.text();
  r = await post('/v1/completions', { prompt: 'Once', max_tokens: 1 }, { ...attrs, ...auth });
  assert.equal(r.headers.get('x-amzn-sagemaker-custom-attributes'), null, 'only /invocations echoes it');
  await r.text();
});
