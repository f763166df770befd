// gpt-oss served through the API (#22): a seeded tiny-gpt-oss file from make-test-model
// (the gpt-oss architecture: sinks, alternating windows, MXFP4 experts under llama.cpp's
// MXFP4_MOE mix) behind vkserve with gpt-oss's own harmony chat template. Its random weights
// write noise, so a regex constraint makes it answer in harmony's shape (an analysis channel,
// then the final one); the reply must come back split into reasoning_content and content,
// streamed and not. Skipped (exit 77) without make-test-model, VKS_SHARED's template and
// vocabulary, or a Vulkan device.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { serveTestModel, sharedTemplate, sharedVocab, parseSse } from './lib/server.mjs';

const template = sharedTemplate('openai-gpt-oss-120b.jinja');
const vocab = sharedVocab('ggml-vocab-llama-spm.gguf');
const { server, close } = await serveTestModel('tiny-gpt-oss', { vocab, makeArgs: ['--preset', 'MXFP4'],
  serverArgs: ['--chat-template', template] });
after(async () => assert.equal((await close()).code, 0, server.log));

const reply = '<|channel|>analysis<|message|>Short question.<|end|><|start|>assistant<|channel|>final<|message|>Hi there.';
const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const body = { model: 'tiny-gpt-oss', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello?' }],
  max_tokens: 110, temperature: 0, guided_regex: escape(reply) };  // the model's context is 256

async function post(b) {
  const r = await fetch(`${server.base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify(b) });
  return { status: r.status, text: await r.text() };
}

test('gpt-oss with its harmony template: reasoning and content come back apart', async () => {
  const r = await post(body);
  assert.equal(r.status, 200, r.text);
  const c = JSON.parse(r.text).choices[0];
  assert.equal(c.message.reasoning_content, 'Short question.', r.text);
  assert.equal(c.message.content, 'Hi there.', r.text);
  assert.equal(c.finish_reason, 'stop');
});

test('gpt-oss streamed: the same reasoning and content in deltas', async () => {
  const r = await post({ ...body, stream: true });
  assert.equal(r.status, 200, r.text);
  let reasoning = '', content = '', finish = null;
  for (const d of parseSse(r.text)) {
    if (d === '[DONE]') continue;
    const ch = JSON.parse(d).choices[0];
    if (!ch) continue;
    reasoning += ch.delta?.reasoning_content ?? '';
    content += ch.delta?.content ?? '';
    finish = ch.finish_reason ?? finish;
  }
  assert.equal(reasoning, 'Short question.');
  assert.equal(content, 'Hi there.');
  assert.equal(finish, 'stop');
});

test('gpt-oss without a constraint: the random model still answers with text', async () => {
  const r = await post({ ...body, guided_regex: undefined, max_tokens: 8 });
  assert.equal(r.status, 200, r.text);
  const j = JSON.parse(r.text);
  assert.ok(j.usage.completion_tokens >= 1 && j.usage.completion_tokens <= 8, r.text);
  assert.ok(j.usage.prompt_tokens > 10, r.text);  // the rendered harmony prompt
});
