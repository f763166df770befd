// gemma4 (text, #22) served through the API with the chat template the GGUF carries: a seeded
// tiny-gemma4 file from make-test-model (sliding and global layers, KV-shared layers,
// per-layer embeddings) written with Gemma 4's own template as tokenizer.chat_template, and a
// server started without --chat-template. The prompt the server counts is the template's
// rendering (`vkserve template --template <the gguf>` tokenized by /tokenize), the Gemma 4
// turn markers are in it, and greedy answers are the same whole and streamed. Skipped (exit
// 77) without make-test-model, VKS_SHARED's template and vocabulary, or a Vulkan device.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { serveTestModel, renderTemplate, sharedTemplate, sharedVocab, parseSse } from './lib/server.mjs';

const template = sharedTemplate('google-gemma-4-31B-it.jinja');
const vocab = sharedVocab('ggml-vocab-llama-spm.gguf');
const { server, model, close } = await serveTestModel('tiny-gemma4', { vocab, template, serverArgs: ['--reasoning', 'off'] });
after(async () => assert.equal((await close()).code, 0, server.log));

const messages = [{ role: 'system', content: 'You are a terse assistant.' },
  { role: 'user', content: 'Name three colours of the rainbow and one animal that lives in the sea.' }];
const body = (extra = {}) => ({ model: 'tiny-gemma4', messages, max_tokens: 12, temperature: 0, ...extra });

async function post(route, b) {
  const r = await fetch(`${server.base}${route}`, { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify(b) });
  const text = await r.text();
  assert.equal(r.status, 200, text);
  return text;
}

test('gemma4: the prompt is the GGUF template\'s rendering', async () => {
  const rendered = renderTemplate(model, { messages, add_generation_prompt: true }, { bos: '<s>' });  // the llama vocab's BOS
  assert.match(rendered, /^<s><\|turn>system\n/);
  assert.match(rendered, /<\|turn>user\nName three colours/);
  assert.match(rendered, /<\|turn>model\n/);
  const ids = JSON.parse(await post('/tokenize', { model: 'tiny-gemma4', prompt: rendered, add_special_tokens: false })).tokens;
  const j = JSON.parse(await post('/v1/chat/completions', body()));
  assert.equal(j.usage.prompt_tokens, ids.length, `rendered: ${JSON.stringify(rendered)}`);
  assert.ok(j.usage.completion_tokens >= 1, JSON.stringify(j));
  assert.equal(typeof j.choices[0].message.content, 'string');
});

test('gemma4: greedy answers are the same whole and streamed', async () => {
  const whole = JSON.parse(await post('/v1/chat/completions', body()));
  let content = '';
  for (const d of parseSse(await post('/v1/chat/completions', body({ stream: true })))) {
    if (d === '[DONE]') continue;
    content += JSON.parse(d).choices[0]?.delta?.content ?? '';
  }
  assert.equal(content, whole.choices[0].message.content);
});
