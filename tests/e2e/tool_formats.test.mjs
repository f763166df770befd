// Tool-call formats end to end (#24): a Qwen3-Coder-style template (format detected from
// `<parameter=`) and the bundled stories260K forced by a regex constraint to write one
// XML call: the reply must come back as an OpenAI tool call (name, compact JSON arguments
// typed by the tool's schema, finish_reason tool_calls), identically streamed and not; a
// call of a function that was not offered stays content, with a warning (fail closed).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, parseSse } from './lib/server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const server = await startServer(['--chat-template', path.join(here, 'fixtures', 'qwen3_coder_tools.jinja')]);
after(async () => assert.equal((await server.stop()).code, 0));

const post = (body) => fetch(`${server.base}/v1/chat/completions`, {
  method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
});
const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object',
  properties: { city: { type: 'string' }, days: { type: 'integer' } } } } }];
const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const call = (fn) => `<tool_call>\n<function=${fn}>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>`;
const base = (fn) => ({ model: 'stories260K', messages: [{ role: 'user', content: 'Weather?' }], tools,
  max_tokens: 120, temperature: 0, guided_regex: escape(call(fn)) });

test('a forced Qwen3 XML call becomes a tool call, streamed and not alike', async () => {
  const j = await (await post(base('get_weather'))).json();
  const c = j.choices[0];
  assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(j));
  assert.equal(c.message.content, null);
  assert.equal(c.message.tool_calls.length, 1);
  const t = c.message.tool_calls[0];
  assert.match(t.id, /^chatcmpl-tool-[0-9a-f]{32}$/);
  assert.equal(t.function.name, 'get_weather');
  assert.equal(t.function.arguments, '{"city":"Paris","days":3}');

  const p = parseSse(await (await post({ ...base('get_weather'), stream: true })).text());
  assert.equal(p.at(-1), '[DONE]');
  const chunks = p.slice(0, -1).map((x) => JSON.parse(x).choices[0]);
  const calls = chunks.flatMap((x) => x.delta?.tool_calls ?? []);
  assert.equal(calls.length, 1);
  assert.equal(calls[0].function.name, 'get_weather');
  assert.equal(calls[0].function.arguments, t.function.arguments);
  assert.equal(chunks.map((x) => x.delta?.content ?? '').join('').trim(), '');
  assert.equal(chunks.at(-1).finish_reason, 'tool_calls');
});

test('a call of a function that was not offered stays content, with a warning', async () => {
  const j = await (await post(base('delete_everything'))).json();
  const c = j.choices[0];
  assert.equal(c.finish_reason, 'stop');
  assert.equal(c.message.tool_calls.length, 0);
  assert.equal(c.message.content, call('delete_everything'));
  assert.equal(c.warnings.length, 1);
  assert.match(c.warnings[0], /delete_everything/);

  const p = parseSse(await (await post({ ...base('delete_everything'), stream: true })).text());
  const chunks = p.slice(0, -1).map((x) => JSON.parse(x).choices[0]);
  assert.equal(chunks.map((x) => x.delta?.content ?? '').join(''), c.message.content);
  assert.deepEqual(chunks.flatMap((x) => x.warnings ?? []), c.warnings);
});
