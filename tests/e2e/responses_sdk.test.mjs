// The official `openai` client's Responses API against vkserve (stories260K on lavapipe):
// response shape, streaming event order and sequence numbers (SDK stream helper and raw
// SSE), function tools with forced calls and unknown tool types ignored (as Codex sends),
// function_call_output round trips, json_schema through the structured-output engine,
// max_output_tokens -> incomplete, reasoning items (a second server with a thinking
// template), store + previous_response_id (the prefix cache serves the follow-up),
// GET / DELETE / cancel, and the store's bounds (count cap with LRU eviction).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, skip } from './lib/server.mjs';

let OpenAI;
try {
  ({ default: OpenAI } = await import('openai'));
} catch (e) {
  skip(`the openai npm package is not installed (npm ci in tests/e2e): ${e.message}`);
}

const here = path.dirname(fileURLToPath(import.meta.url));
const server = await startServer(['--responses-store-max-entries', '3']);
const client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: 'unused', maxRetries: 0 });
const model = 'stories260K';
const input = 'Once upon a time';

after(async () => {
  const r = await server.stop();
  assert.equal(r.code, 0, `exit status after SIGTERM: ${JSON.stringify(r)}\n${server.log}`);
});

const post = (route, body) => fetch(`${server.base}${route}`, {
  method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
});

test('response: shape, output_text, usage, echo', async () => {
  const r = await client.responses.create({ model, input, max_output_tokens: 12, temperature: 0, instructions: 'Tell a story.' });
  assert.match(r.id, /^resp_[0-9a-f]{32}$/);
  assert.equal(r.object, 'response');
  assert.ok(['completed', 'incomplete'].includes(r.status));
  assert.equal(r.model, model);
  assert.equal(r.instructions, 'Tell a story.');
  assert.equal(r.max_output_tokens, 12);
  assert.equal(r.output.length, 1);
  const msg = r.output[0];
  assert.equal(msg.type, 'message');
  assert.match(msg.id, /^msg_/);
  assert.equal(msg.role, 'assistant');
  assert.equal(msg.content[0].type, 'output_text');
  assert.ok(r.output_text.length > 0);
  assert.equal(r.output_text, msg.content[0].text);
  assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
  assert.equal(typeof r.usage.input_tokens_details.cached_tokens, 'number');
});

test('max_output_tokens: status incomplete with the reason', async () => {
  const r = await client.responses.create({ model, input, max_output_tokens: 3, temperature: 0, ignore_eos: true });
  assert.equal(r.status, 'incomplete');
  assert.deepEqual(r.incomplete_details, { reason: 'max_output_tokens' });
  assert.equal(r.usage.output_tokens, 3);
});

test('stream: typed events in order, increasing sequence_number, text equals the whole response', async () => {
  const req = { model, input, max_output_tokens: 16, temperature: 0 };
  const whole = await client.responses.create(req);
  const stream = client.responses.stream(req);
  const types = [];
  let last = -1;
  for await (const ev of stream) {
    types.push(ev.type);
    assert.equal(ev.sequence_number, last + 1);
    last = ev.sequence_number;
  }
  const final = await stream.finalResponse();
  assert.equal(final.output_text, whole.output_text);
  assert.equal(final.status, whole.status);
  assert.deepEqual(types.slice(0, 4), ['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
  assert.ok(types.includes('response.output_text.delta'));
  assert.deepEqual(types.slice(-4), ['response.output_text.done', 'response.content_part.done', 'response.output_item.done',
    whole.status === 'completed' ? 'response.completed' : 'response.incomplete']);

  const res = await post('/v1/responses', { ...req, stream: true });
  assert.match(res.headers.get('content-type'), /^text\/event-stream/);
  const blocks = (await res.text()).split('\n\n').filter((b) => b.trim());
  for (const b of blocks) {
    const name = b.match(/^event: (.*)$/m)[1];
    assert.equal(JSON.parse(b.match(/^data: (.*)$/m)[1]).type, name);
  }
  assert.ok(!blocks.some((b) => b.includes('[DONE]')));
});

const tools = [
  { type: 'function', name: 'get_time', description: 'time in a zone', parameters: { type: 'object', properties: { zone: { enum: ['UTC', 'CET'] } }, required: ['zone'] } },
  { type: 'web_search' },  // Codex sends hosted tools: ignored, not a 400
  { type: 'local_shell' },
];

test('function tools: forced call, streamed the same, output round trip', async () => {
  const req = { model, input, tools, tool_choice: { type: 'function', name: 'get_time' }, max_output_tokens: 60, temperature: 0 };
  const r = await client.responses.create(req);
  const calls = r.output.filter((o) => o.type === 'function_call');
  assert.equal(calls.length, 1, JSON.stringify(r.output));
  assert.equal(calls[0].name, 'get_time');
  assert.match(calls[0].call_id, /^call_/);
  assert.ok(['UTC', 'CET'].includes(JSON.parse(calls[0].arguments).zone));
  assert.deepEqual(r.tools.map((t) => t.name), ['get_time']);

  const final = await client.responses.stream(req).finalResponse();
  const sc = final.output.filter((o) => o.type === 'function_call');
  assert.equal(sc.length, 1);
  assert.equal(sc[0].arguments, calls[0].arguments);

  const next = await client.responses.create({
    model, tools, max_output_tokens: 8, temperature: 0,
    input: [
      { role: 'user', content: input },
      { type: 'function_call', call_id: calls[0].call_id, name: 'get_time', arguments: calls[0].arguments },
      { type: 'function_call_output', call_id: calls[0].call_id, output: '12:00' },
    ],
  });
  assert.equal(next.object, 'response');
  assert.ok(next.usage.input_tokens > r.usage.input_tokens);
});

test('text.format json_schema goes through the structured-output engine', async () => {
  const r = await client.responses.create({
    model, input, max_output_tokens: 40, temperature: 0,
    text: { format: { type: 'json_schema', name: 'mood', schema: { type: 'object', properties: { mood: { enum: ['happy', 'sad'] } }, required: ['mood'] } } },
  });
  assert.ok(['happy', 'sad'].includes(JSON.parse(r.output_text).mood), r.output_text);
});

test('store + previous_response_id: the follow-up continues the conversation from the prefix cache', async () => {
  const first = await client.responses.create({ model, input: 'Once upon a time there was a little girl named Lily who loved to play', max_output_tokens: 8, temperature: 0 });
  const second = await client.responses.create({ model, input: 'Tell me more.', previous_response_id: first.id, max_output_tokens: 8, temperature: 0 });
  assert.equal(second.previous_response_id, first.id);
  assert.ok(second.usage.input_tokens > first.usage.input_tokens + first.usage.output_tokens - 2);
  assert.ok(second.usage.input_tokens_details.cached_tokens >= 16, JSON.stringify(second.usage));
  const got = await client.responses.retrieve(first.id);
  assert.deepEqual(got.output, first.output);
  await assert.rejects(client.responses.create({ model, input, previous_response_id: 'resp_missing' }), (e) => e.status === 404);
  await assert.rejects(client.responses.cancel(first.id), (e) => e.status === 400);
  const del = await client.responses.delete(first.id);
  assert.deepEqual(del, { id: first.id, object: 'response', deleted: true });
  await assert.rejects(client.responses.retrieve(first.id), (e) => e.status === 404);
  const unstored = await client.responses.create({ model, input, max_output_tokens: 2, store: false });
  await assert.rejects(client.responses.retrieve(unstored.id), (e) => e.status === 404);
});

test('the store is bounded: least recently used evicted past --responses-store-max-entries 3', async () => {
  const ids = [];
  for (let i = 0; i < 4; ++i) ids.push((await client.responses.create({ model, input, max_output_tokens: 2 })).id);
  await assert.rejects(client.responses.retrieve(ids[0]), (e) => e.status === 404);
  for (const id of ids.slice(1)) assert.equal((await client.responses.retrieve(id)).id, id);
});

// The request sequence Codex sends (store off, so it resends the whole history each turn):
// developer and environment messages, a function tool beside custom / hosted tools,
// reasoning settings, include, prompt_cache_key, text.verbosity, a streamed turn; then the
// history with a reasoning item, the model's call and its output.
test('Codex-shaped turns are served unmodified', async () => {
  const shell = {
    type: 'function', name: 'shell', description: 'Runs a shell command', strict: false,
    parameters: { type: 'object', properties: { command: { type: 'array', items: { type: 'string' } }, workdir: { type: 'string' } }, required: ['command'], additionalProperties: false },
  };
  const codexTools = [shell, { type: 'custom', name: 'apply_patch', description: 'patch', format: { type: 'grammar', syntax: 'lark', definition: 'start: /.+/' } },
    { type: 'web_search' }, { type: 'local_shell' }];
  const base = {
    model, instructions: 'You are a coding agent.', tools: codexTools, tool_choice: 'auto', parallel_tool_calls: false,
    reasoning: { effort: 'medium', summary: 'auto' }, store: false, include: ['reasoning.encrypted_content'],
    prompt_cache_key: 'session-1', text: { verbosity: 'medium' }, max_output_tokens: 8,
  };
  const history = [
    { type: 'message', role: 'developer', content: [{ type: 'input_text', text: '<permissions>workspace-write</permissions>' }] },
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: '<environment_context><cwd>/repo</cwd></environment_context>' }] },
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Once upon a time' }] },
  ];
  const stream = client.responses.stream({ ...base, input: history });
  const first = await stream.finalResponse();
  assert.ok(['completed', 'incomplete'].includes(first.status));
  assert.equal(first.store, false);
  assert.deepEqual(first.tools.map((t) => t.name), ['shell']);
  await assert.rejects(client.responses.retrieve(first.id), (e) => e.status === 404);  // store: false
  const next = await client.responses.create({
    ...base, input: [...history,
      { type: 'reasoning', id: 'rs_1', summary: [], content: null, encrypted_content: 'gAAAA' },
      { type: 'function_call', name: 'shell', arguments: '{"command":["ls"]}', call_id: 'call_1' },
      { type: 'function_call_output', call_id: 'call_1', output: 'README.md' },
      ...first.output,
    ],
  });
  assert.equal(next.object, 'response');
  assert.ok(next.usage.input_tokens > first.usage.input_tokens);
});

test('reasoning: a thinking model answers with a reasoning item, streamed the same', async () => {
  const think = await startServer(['--reasoning', 'on', '--chat-template', path.join(here, 'fixtures', 'think.jinja')]);
  try {
    const c = new OpenAI({ baseURL: `${think.base}/v1`, apiKey: 'unused', maxRetries: 0 });
    const req = { model, input, max_output_tokens: 12, temperature: 0, reasoning: { effort: 'high' } };
    const r = await c.responses.create(req);
    assert.equal(r.output[0].type, 'reasoning', JSON.stringify(r.output));
    assert.ok(r.output[0].content[0].text.length > 0);
    assert.equal(r.reasoning.effort, 'high');
    const types = [];
    const s = c.responses.stream(req);
    for await (const ev of s) types.push(ev.type);
    const final = await s.finalResponse();
    assert.equal(final.output[0].content[0].text, r.output[0].content[0].text);
    assert.ok(types.includes('response.reasoning_text.delta'));
    // The reasoning item goes back as history.
    const next = await c.responses.create({ model, max_output_tokens: 4, input: [{ role: 'user', content: input }, r.output[0], { role: 'user', content: 'more' }] });
    assert.equal(next.object, 'response');
    const off = await c.responses.create({ ...req, reasoning: { effort: 'none' } });
    assert.equal(off.output[0].type, 'message');
  } finally {
    assert.equal((await think.stop()).code, 0);
  }
});
