// qwen35 served with Qwen3.5's own chat template (#23), through the official `openai` client:
// a seeded tiny-qwen35 GGUF from make-test-model that carries the template
// (tests/text/jinja/templates/Qwen3.5-4B.jinja as tokenizer.chat_template), served without
// --chat-template, so the tool-call format (Qwen3-Coder XML) and the <think> reasoning are
// detected from the file's template. Its random weights never write </think>: with thinking
// on (the template's default: the prompt opens <think>) every token is reasoning; with
// chat_template_kwargs {enable_thinking: false} every token is content. A regex constraint
// makes it write the XML call a Qwen3.5 model writes; tool_choice "required" and a named
// function (with --strict-tools on) force calls by decoding. Skipped (exit 77) without
// make-test-model, VKS_SHARED's llama vocabulary, the openai package or a Vulkan device.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServer, skip, buildRoot } from './lib/server.mjs';
import { OpenAI, repoTemplate, escape, collectStream } from './lib/tool_formats.mjs';

const shared = process.env.VKS_SHARED || '';
const vocab = path.join(shared, 'models', 'vocab', 'ggml-vocab-llama-spm.gguf');
if (!shared || !existsSync(vocab)) skip('VKS_SHARED with the llama vocab is needed');
const maker = path.join(buildRoot, 'tools', 'make-test-model');
if (!existsSync(maker)) skip(`${maker} is not built`);

const dir = mkdtempSync(path.join(os.tmpdir(), 'vks-qwen35-chat-'));
const model = path.join(dir, 'tiny-qwen35.gguf');
execFileSync(maker, ['--shape', 'tiny-qwen35', '--vocab', vocab, '--chat-template', repoTemplate('Qwen3.5-4B.jinja'),
  '-o', model], { stdio: 'ignore' });

const server = await startServer(['--strict-tools'], { model, name: 'tiny-qwen35' });
after(async () => {
  assert.equal((await server.stop()).code, 0, server.log);
  rmSync(dir, { recursive: true, force: true });
});
const client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: 'unused', maxRetries: 0 });

const noThinking = { chat_template_kwargs: { enable_thinking: false } };
const user = [{ role: 'user', content: 'What is the weather in Paris for the next 3 days?' }];
const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather forecast of a city.',
  parameters: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Oslo'] },
    days: { type: 'integer', enum: [1, 3, 7] } }, required: ['city', 'days'], additionalProperties: false } } }];
const body = (extra = {}) => ({ model: 'tiny-qwen35', messages: user, max_tokens: 8, temperature: 0, ...extra });

test('thinking on (the template default): the prompt opens <think>, the reply is reasoning, streamed as whole', async () => {
  const j = await client.chat.completions.create(body());
  const m = j.choices[0].message;
  assert.equal(j.usage.completion_tokens, 8, JSON.stringify(j));
  assert.ok(m.reasoning_content.length > 0, JSON.stringify(j));
  assert.ok(!m.content, `content: ${JSON.stringify(m.content)}`);
  const s = await collectStream(client, body());
  assert.equal(s.reasoning, m.reasoning_content);
  assert.equal(s.content, '');
});

test('enable_thinking false through chat_template_kwargs: the prompt closes the block, the reply is content', async () => {
  const on = await client.chat.completions.create(body());
  const j = await client.chat.completions.create(body(noThinking));
  const m = j.choices[0].message;
  // The template appends "<think>\n\n</think>\n\n" instead of "<think>\n".
  assert.ok(j.usage.prompt_tokens > on.usage.prompt_tokens, `${j.usage.prompt_tokens} vs ${on.usage.prompt_tokens}`);
  assert.ok(m.content.length > 0, JSON.stringify(j));
  assert.ok(!m.reasoning_content, JSON.stringify(j));
  const s = await collectStream(client, body(noThinking));
  assert.equal(s.content, m.content);
  assert.equal(s.reasoning, '');
  // reasoning_effort "none" turns the template's switch off the same way.
  const none = await client.chat.completions.create(body({ reasoning_effort: 'none' }));
  assert.equal(none.usage.prompt_tokens, j.usage.prompt_tokens);
  assert.equal(none.choices[0].message.content, m.content);
});

const xmlCall = '<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n'
  + '</parameter>\n</function>\n</tool_call>';

test('the XML call a Qwen3.5 model writes comes back as an OpenAI tool call (arguments typed by the schema), streamed and not', async () => {
  const params = body({ ...noThinking, tools, max_tokens: 120, guided_regex: escape(xmlCall) });
  const j = await client.chat.completions.create(params);
  const c = j.choices[0];
  assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(j));
  assert.equal(c.message.content, null);
  assert.equal(c.message.tool_calls.length, 1);
  assert.equal(c.message.tool_calls[0].function.name, 'get_weather');
  assert.equal(c.message.tool_calls[0].function.arguments, '{"city":"Paris","days":3}');
  assert.match(c.message.tool_calls[0].id, /^chatcmpl-tool-[0-9a-f]{32}$/);
  const s = await collectStream(client, params);
  assert.equal(s.calls.length, 1);
  assert.equal(s.calls[0].function.name, 'get_weather');
  assert.equal(s.calls[0].function.arguments, '{"city":"Paris","days":3}');
  assert.equal(s.content.trim(), '');
  assert.equal(s.finish, 'tool_calls');
});

test('forced tool_choice under --strict-tools: a named function and "required" yield parsed, schema-valid calls', async () => {
  const valid = (args) => {
    const a = JSON.parse(args);
    assert.ok(['Paris', 'Oslo'].includes(a.city), args);
    assert.ok([1, 3, 7].includes(a.days), args);
    assert.deepEqual(Object.keys(a).sort(), ['city', 'days']);
  };
  const named = body({ ...noThinking, tools, max_tokens: 60, tool_choice: { type: 'function', function: { name: 'get_weather' } } });
  const j = await client.chat.completions.create(named);
  const c = j.choices[0];
  assert.equal(c.message.tool_calls?.length, 1, JSON.stringify(j));
  assert.equal(c.message.tool_calls[0].function.name, 'get_weather');
  valid(c.message.tool_calls[0].function.arguments);
  const s = await collectStream(client, named);
  assert.equal(s.calls.length, 1);
  assert.equal(s.calls[0].function.arguments, c.message.tool_calls[0].function.arguments);

  const required = body({ ...noThinking, tools, max_tokens: 60, tool_choice: 'required', parallel_tool_calls: false });
  const r = (await client.chat.completions.create(required)).choices[0];
  assert.equal(r.finish_reason, 'tool_calls', JSON.stringify(r));
  assert.equal(r.message.tool_calls.length, 1);
  assert.equal(r.message.tool_calls[0].function.name, 'get_weather');
  valid(r.message.tool_calls[0].function.arguments);
});

// An agent loop as clients send it back: arguments as JSON text, tool results, reasoning_content.
const loop = (reasoningBefore, reasoningAfter) => [
  { role: 'user', content: 'Hi.' },
  { role: 'assistant', content: 'Hello.', ...(reasoningBefore ? { reasoning_content: 'Greet back.' } : {}) },
  ...user,
  { role: 'assistant', content: null, ...(reasoningAfter ? { reasoning_content: 'I need the forecast.' } : {}),
    tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris","days":3}' } }] },
  { role: 'tool', tool_call_id: 'call_1', content: '{"forecast": ["sun", "rain", "sun"]}' },
];

test('multi-turn agent loop: the history renders; only reasoning after the last user query reaches the prompt', async () => {
  const tokens = async (messages) => {
    const j = await client.chat.completions.create(body({ messages, max_tokens: 1 }));
    assert.equal(j.choices.length, 1);
    return j.usage.prompt_tokens;
  };
  const bare = await tokens(loop(false, false));
  assert.equal(await tokens(loop(true, false)), bare);  // before the last query: dropped by the template
  const kept = await tokens(loop(false, true));
  assert.ok(kept > bare);                                // inside the loop: kept
  // `reasoning` (vLLM's newer name) reaches the template as reasoning_content.
  const alias = loop(false, false);
  alias[3].reasoning = 'I need the forecast.';
  assert.equal(await tokens(alias), kept);
  // The call history in Qwen3.5's XML form: its parameters make the prompt longer than without the call.
  const noCall = loop(false, false).slice(0, 3);
  assert.ok(bare > (await tokens(noCall)) + 20);
});
