// The official `@anthropic-ai/sdk` client against vkserve's /v1/messages (stories260K on
// lavapipe): message shape, streaming event order and text reconstruction, forced tool use
// with a schema-valid input, tool result round trips, thinking blocks in history and out
// (a second server with a thinking template), stop sequences, count_tokens, x-api-key,
// Anthropic-shaped errors, and the prefix cache across Claude-Code-shaped turns whose
// attribution header changes.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, skip } from './lib/server.mjs';

let Anthropic;
try {
  ({ default: Anthropic } = await import('@anthropic-ai/sdk'));
} catch (e) {
  skip(`the @anthropic-ai/sdk npm package is not installed (npm ci in tests/e2e): ${e.message}`);
}

const here = path.dirname(fileURLToPath(import.meta.url));
const key = 'sk-e2e-anthropic';
const server = await startServer(['--api-key', key]);
const client = new Anthropic({ baseURL: server.base, apiKey: key, maxRetries: 0 });
const model = 'stories260K';
const messages = [{ role: 'user', content: 'Once upon a time' }];

after(async () => {
  const r = await server.stop();
  assert.equal(r.code, 0, `exit status after SIGTERM: ${JSON.stringify(r)}\n${server.log}`);
});

const raw = (route, body, headers = {}) => fetch(`${server.base}${route}`, {
  method: 'POST',
  headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01', ...headers },
  body: JSON.stringify(body),
});

// SSE body -> [{event, data}] (data parsed).
function parseTypedSse(text) {
  const out = [];
  for (const block of text.split('\n\n')) {
    if (!block.trim()) continue;
    const ev = block.match(/^event: (.*)$/m);
    const data = block.match(/^data: (.*)$/m);
    assert.ok(ev && data, `bad SSE block: ${block}`);
    const d = JSON.parse(data[1]);
    assert.equal(d.type, ev[1], 'event name = payload type');
    out.push(d);
  }
  return out;
}

test('message: shape, ids, usage', async () => {
  const m = await client.messages.create({ model, messages, max_tokens: 12, temperature: 0 });
  assert.match(m.id, /^msg_[0-9a-f]{32}$/);
  assert.equal(m.type, 'message');
  assert.equal(m.role, 'assistant');
  assert.equal(m.model, model);
  assert.equal(m.content.length, 1);
  assert.equal(m.content[0].type, 'text');
  assert.ok(m.content[0].text.length > 0);
  assert.ok(['end_turn', 'max_tokens'].includes(m.stop_reason));
  assert.equal(m.stop_sequence, null);
  assert.ok(m.usage.input_tokens > 0);
  assert.equal(m.usage.cache_creation_input_tokens, 0);
  assert.equal(typeof m.usage.cache_read_input_tokens, 'number');
  assert.ok(m.usage.output_tokens > 0 && m.usage.output_tokens <= 12);
  const full = await client.messages.create({ model, messages, max_tokens: 3, temperature: 0, ignore_eos: true });
  assert.equal(full.stop_reason, 'max_tokens');
  assert.equal(full.usage.output_tokens, 3);
});

test('stream: event order, text equals the whole message (SDK stream helper and raw SSE)', async () => {
  const req = { model, messages, max_tokens: 16, temperature: 0, system: 'You tell stories.' };
  const whole = await client.messages.create(req);
  const stream = client.messages.stream(req);
  const types = [];
  for await (const ev of stream) types.push(ev.type);
  const final = await stream.finalMessage();
  assert.deepEqual(final.content, whole.content);
  assert.equal(final.stop_reason, whole.stop_reason);
  assert.deepEqual(final.usage.output_tokens, whole.usage.output_tokens);
  assert.equal(final.usage.input_tokens + final.usage.cache_read_input_tokens,
    whole.usage.input_tokens + whole.usage.cache_read_input_tokens);
  assert.equal(types[0], 'message_start');
  assert.equal(types[1], 'content_block_start');
  assert.equal(types.at(-2), 'message_delta');
  assert.equal(types.at(-1), 'message_stop');

  const res = await raw('/v1/messages?beta=true', { ...req, stream: true }, { 'anthropic-beta': 'interleaved-thinking-2025-05-14' });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type'), /^text\/event-stream/);
  const evs = parseTypedSse(await res.text());
  assert.deepEqual(evs.slice(0, 3).map((e) => e.type), ['message_start', 'ping', 'content_block_start']);
  assert.equal(evs[0].message.stop_reason, null);
  assert.deepEqual(evs[0].message.content, []);
  const text = evs.filter((e) => e.type === 'content_block_delta').map((e) => e.delta.text).join('');
  assert.equal(text, whole.content[0].text);
  assert.deepEqual(evs.slice(-3).map((e) => e.type), ['content_block_stop', 'message_delta', 'message_stop']);
  assert.equal(evs.at(-2).usage.output_tokens, whole.usage.output_tokens);
});

const tools = [
  { name: 'get_weather', description: 'Weather of a city', input_schema: { type: 'object', properties: { city: { type: 'string', maxLength: 10 } }, required: ['city'] } },
  { name: 'get_time', input_schema: { type: 'object', properties: { zone: { enum: ['UTC', 'CET'] } }, required: ['zone'] } },
  { type: 'web_search_20250305', name: 'web_search', max_uses: 3 },  // a server tool: ignored
];

test('forced tool use: a schema-valid input, streamed the same', async () => {
  const req = { model, messages, tools, max_tokens: 60, temperature: 0, tool_choice: { type: 'tool', name: 'get_time' } };
  const m = await client.messages.create(req);
  assert.equal(m.stop_reason, 'tool_use');
  const uses = m.content.filter((b) => b.type === 'tool_use');
  assert.equal(uses.length, 1, JSON.stringify(m.content));
  assert.match(uses[0].id, /^toolu_[0-9a-f]{24}$/);
  assert.equal(uses[0].name, 'get_time');
  assert.ok(['UTC', 'CET'].includes(uses[0].input.zone), JSON.stringify(uses[0]));

  const stream = client.messages.stream(req);
  const deltas = [];
  stream.on('streamEvent', (ev) => { if (ev.type === 'content_block_delta') deltas.push(ev.delta.type); });
  const final = await stream.finalMessage();
  assert.equal(final.stop_reason, 'tool_use');
  const su = final.content.filter((b) => b.type === 'tool_use');
  assert.equal(su.length, 1);
  assert.deepEqual(su[0].input, uses[0].input);
  assert.ok(deltas.includes('input_json_delta'));

  const any = await client.messages.create({ ...req, temperature: 1, seed: 1, max_tokens: 120, tool_choice: { type: 'any', disable_parallel_tool_use: true } });
  assert.equal(any.stop_reason, 'tool_use', JSON.stringify(any));
  const call = any.content.find((b) => b.type === 'tool_use');
  assert.ok(['get_weather', 'get_time'].includes(call.name));
  if (call.name === 'get_weather') assert.equal(typeof call.input.city, 'string');
  else assert.ok(['UTC', 'CET'].includes(call.input.zone));

  const none = await client.messages.create({ ...req, tool_choice: { type: 'none' }, max_tokens: 8 });
  assert.ok(none.content.every((b) => b.type === 'text'));
});

test('tool result round trip and thinking blocks in history', async () => {
  const history = [
    { role: 'user', content: 'What time is it?' },
    { role: 'assistant', content: [
      { type: 'thinking', thinking: 'I should call get_time.', signature: 'opaque' },
      { type: 'redacted_thinking', data: 'c2VjcmV0' },
      { type: 'text', text: 'Let me check.' },
      { type: 'tool_use', id: 'toolu_01', name: 'get_time', input: { zone: 'UTC' } },
    ] },
    { role: 'user', content: [
      { type: 'tool_result', tool_use_id: 'toolu_01', content: [{ type: 'text', text: '12:00' }] },
      { type: 'text', text: 'Thanks. Once upon a time' },
    ] },
  ];
  const m = await client.messages.create({ model, messages: history, tools, max_tokens: 8, temperature: 0 });
  assert.equal(m.type, 'message');
  assert.ok(m.usage.input_tokens + m.usage.cache_read_input_tokens > 20);
  const count = await client.messages.countTokens({ model, messages: history, tools });
  assert.equal(count.input_tokens, m.usage.input_tokens + m.usage.cache_read_input_tokens);
});

test('stop_sequences end the message with stop_sequence', async () => {
  const free = await client.messages.create({ model, messages, max_tokens: 24, temperature: 0 });
  const words = free.content[0].text.split(/\s+/).filter((w) => /^[a-z]{3,}$/.test(w));
  assert.ok(words.length > 1, free.content[0].text);
  const stop = words[1];
  const m = await client.messages.create({ model, messages, max_tokens: 24, temperature: 0, stop_sequences: [stop] });
  assert.equal(m.stop_reason, 'stop_sequence');
  assert.equal(m.stop_sequence, stop);
  assert.ok(!m.content[0].text.includes(stop));
});

test('errors in Anthropic shape: validation, media, auth, model', async () => {
  await assert.rejects(client.messages.create({ model, messages }), (e) => {
    assert.equal(e.status, 400);
    assert.equal(e.error.type, 'error');
    assert.equal(e.error.error.type, 'invalid_request_error');
    assert.match(e.error.error.message, /max_tokens/);
    return true;
  });
  await assert.rejects(client.messages.create({
    model, max_tokens: 4,
    messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }] }],
  }), (e) => e.status === 400 && /text only/.test(e.error.error.message));
  const bad = new Anthropic({ baseURL: server.base, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(bad.messages.create({ model, messages, max_tokens: 4 }),
    (e) => e.status === 401 && e.error.error.type === 'authentication_error');
  await assert.rejects(client.messages.create({ model: 'claude-nope', messages, max_tokens: 4 }),
    (e) => e.status === 404 && e.error.error.type === 'not_found_error');
  const res = await raw('/v1/messages', { model, messages, max_tokens: 4 }, { 'x-api-key': '', authorization: `Bearer ${key}` });
  assert.equal(res.status, 200, 'a bearer token works too');
});

// Claude Code sends its system prompt as blocks, the first one an attribution line whose
// hash changes every request; vkserve drops that line, so the next turn reuses the cache.
test('Claude-Code-shaped turns: the attribution header does not defeat the prefix cache', async () => {
  const stable = 'You are a storyteller for small children. Tell short, happy stories about animals, friends, '
    + 'toys and the park. Use simple words. Always end the story well. '.repeat(3);
  const turn = (cch, msgs, header = 'x-anthropic-billing-header') => client.messages.create({
    model, max_tokens: 4, temperature: 0, tools: tools.slice(0, 2),
    system: [
      { type: 'text', text: `${header}: cc_version=2.1.37.${cch}; cc_entrypoint=cli; cch=${cch};` },
      { type: 'text', text: stable, cache_control: { type: 'ephemeral' } },
    ],
    metadata: { user_id: 'user_e2e' },
    messages: msgs,
  });
  const first = await turn('a1b2c', [{ role: 'user', content: 'Once upon a time' }]);
  const second = await turn('f9e8d', [
    { role: 'user', content: 'Once upon a time' },
    { role: 'assistant', content: first.content },
    { role: 'user', content: 'Tell me more.' },
  ]);
  const prompt2 = second.usage.input_tokens + second.usage.cache_read_input_tokens;
  console.log(`turn 2: ${second.usage.cache_read_input_tokens} of ${prompt2} prompt tokens from the prefix cache`);
  const prompt1 = first.usage.input_tokens + first.usage.cache_read_input_tokens;
  assert.ok(second.usage.cache_read_input_tokens >= prompt1 - 32, JSON.stringify({ first: first.usage, second: second.usage }));
  // Control: the same volatile line under another name is kept, and the cache misses
  // everything after its hash.
  const otherFirst = await turn('a1b2c', [{ role: 'user', content: 'Once upon a time' }], 'x-other-attribution');
  const otherSecond = await turn('f9e8d', [{ role: 'user', content: 'Once upon a time' }], 'x-other-attribution');
  console.log(`control (volatile line kept): turn 2 read ${otherSecond.usage.cache_read_input_tokens} cached tokens of ${otherSecond.usage.input_tokens + otherSecond.usage.cache_read_input_tokens}`);
  // Only the blocks before the hash on that line (the chat header and the line's start) hit.
  assert.ok(otherSecond.usage.cache_read_input_tokens <= 48, JSON.stringify({ otherFirst: otherFirst.usage, otherSecond: otherSecond.usage }));
  assert.ok(second.usage.cache_read_input_tokens > otherSecond.usage.cache_read_input_tokens + 100);
});

test('thinking: a reasoning model answers with thinking blocks, streamed the same', async () => {
  const think = await startServer(['--reasoning', 'on', '--chat-template', path.join(here, 'fixtures', 'think.jinja')]);
  try {
    const c = new Anthropic({ baseURL: think.base, apiKey: 'unused', maxRetries: 0 });
    const req = { model, messages, max_tokens: 12, temperature: 0, thinking: { type: 'enabled', budget_tokens: 1024 } };
    const m = await c.messages.create(req);
    assert.equal(m.content[0].type, 'thinking', JSON.stringify(m.content));
    assert.ok(m.content[0].thinking.length > 0);
    assert.equal(typeof m.content[0].signature, 'string');
    const final = await c.messages.stream(req).finalMessage();
    assert.deepEqual(final.content, m.content);
    const off = await c.messages.create({ ...req, thinking: { type: 'disabled' } });
    assert.equal(off.content[0].type, 'text');
  } finally {
    assert.equal((await think.stop()).code, 0);
  }
});
