// Reasoning split end to end: a chat template that opens <think> in the prompt (like
// Qwen3 / DeepSeek-R1) with --reasoning on. stories260K never writes </think>, so all
// output is reasoning: it must appear in reasoning_content and reasoning (never in
// content), identically streamed and not; enable_thinking=false puts it all in content.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, parseSse } from './lib/server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const server = await startServer(['--reasoning', 'on', '--chat-template', path.join(here, 'fixtures', 'think.jinja')]);
after(async () => assert.equal((await server.stop()).code, 0));

const post = (body) => fetch(`${server.base}/v1/chat/completions`, {
  method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
});
const base = { model: 'stories260K', messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 16, temperature: 0 };

test('thinking prompt: output is reasoning, streamed and not alike', async () => {
  const j = await (await post(base)).json();
  const m = j.choices[0].message;
  assert.equal(typeof m.reasoning_content, 'string');
  assert.ok(m.reasoning_content.length > 0);
  assert.equal(m.reasoning, m.reasoning_content);
  assert.ok(!m.content, `content: ${JSON.stringify(m.content)}`);

  const p = parseSse(await (await post({ ...base, stream: true })).text());
  assert.equal(p.at(-1), '[DONE]');
  let reasoning = '', content = '';
  for (const x of p.slice(0, -1)) {
    const d = JSON.parse(x).choices[0].delta;
    reasoning += d.reasoning_content ?? '';
    content += d.content ?? '';
  }
  assert.equal(reasoning, m.reasoning_content);
  assert.equal(content, '');
});

test('enable_thinking=false: everything is content', async () => {
  const j = await (await post({ ...base, chat_template_kwargs: { enable_thinking: false } })).json();
  const m = j.choices[0].message;
  assert.ok(m.content.length > 0);
  assert.ok(!m.reasoning_content);
});

test('include_reasoning=false hides the reasoning', async () => {
  const j = await (await post({ ...base, include_reasoning: false })).json();
  assert.ok(!j.choices[0].message.reasoning_content);
});

// Structured output waits for the end of the reasoning: stories260K never closes it, so
// the reasoning must be exactly the unconstrained one; without reasoning (thinking off)
// the same constraint holds the content.
test('a constraint starts after </think>: the reasoning stays free', async () => {
  const free = (await (await post(base)).json()).choices[0].message;
  const j = await (await post({ ...base, guided_choice: ['yes', 'no'] })).json();
  const m = j.choices[0].message;
  assert.equal(m.reasoning_content, free.reasoning_content);
  assert.ok(!m.content);
  const off = await (await post({ ...base, guided_choice: ['yes', 'no'], chat_template_kwargs: { enable_thinking: false } })).json();
  assert.ok(['yes', 'no'].includes(off.choices[0].message.content), JSON.stringify(off.choices[0].message));
});
