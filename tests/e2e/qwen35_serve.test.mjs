// qwen35 (the gated-DeltaNet hybrid, #23) served through the API: a seeded tiny-qwen35 file
// from make-test-model behind vkserve with Qwen3.5's chat template (tests/text/jinja/templates;
// qwen35_chat.test.mjs covers its tool calls and thinking). A repeated request and a
// follow-up turn must read their prefix from the cache (recurrent-state checkpoints at block
// boundaries: usage.prompt_tokens_details.cached_tokens > 0) and answer exactly as the cold
// request did (greedy), streamed and not. The MoE hybrids (tiny-qwen35moe, tiny-qwen3next:
// routed experts plus the shared expert; qwen3next's file layout reordered at load) serve the
// same way. Skipped (exit 77) without make-test-model,
// VKS_SHARED's vocabulary, or a Vulkan device.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, skip, buildRoot, parseSse } from './lib/server.mjs';

const shared = process.env.VKS_SHARED || '';
const template = fileURLToPath(new URL('../text/jinja/templates/Qwen3.5-4B.jinja', import.meta.url));
const vocab = path.join(shared, 'models', 'vocab', 'ggml-vocab-llama-spm.gguf');
if (!shared || !existsSync(template) || !existsSync(vocab)) skip('VKS_SHARED with the llama vocab is needed');
const maker = path.join(buildRoot, 'tools', 'make-test-model');
if (!existsSync(maker)) skip(`${maker} is not built`);

const dir = mkdtempSync(path.join(os.tmpdir(), 'vks-qwen35-'));
const model = path.join(dir, 'tiny-qwen35.gguf');
execFileSync(maker, ['--shape', 'tiny-qwen35', '--vocab', vocab, '-o', model], { stdio: 'ignore' });

const server = await startServer(['--chat-template', template, '--enable-prompt-tokens-details', '--reasoning', 'off'],
  { model, name: 'tiny-qwen35' });
after(async () => {
  assert.equal((await server.stop()).code, 0, server.log);
  rmSync(dir, { recursive: true, force: true });
});

const turn1 = [{ role: 'system', content: 'You are a terse assistant who answers in one short line.' },
  { role: 'user', content: 'Name three colours of the rainbow and one animal that lives in the sea.' }];
const body = (messages, extra = {}) => ({ model: 'tiny-qwen35', messages, max_tokens: 8, temperature: 0, ...extra });

async function post(b) {
  const r = await fetch(`${server.base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify(b) });
  const text = await r.text();
  assert.equal(r.status, 200, text);
  return text;
}
const cached = (j) => j.usage.prompt_tokens_details?.cached_tokens ?? 0;

test('qwen35: a repeated prompt resumes from a state checkpoint and answers as the cold one', async () => {
  const cold = JSON.parse(await post(body(turn1)));
  assert.ok(cold.usage.completion_tokens >= 1, JSON.stringify(cold));
  const warm = JSON.parse(await post(body(turn1)));
  assert.ok(cached(warm) >= 16, `cached_tokens ${cached(warm)} of ${warm.usage.prompt_tokens}`);
  assert.ok(cached(warm) < warm.usage.prompt_tokens);
  assert.equal(warm.choices[0].message.content, cold.choices[0].message.content);
});

test('qwen35: a follow-up turn reads the first turn from the cache; streamed equals whole', async () => {
  const first = JSON.parse(await post(body(turn1)));
  const turn2 = [...turn1, { role: 'assistant', content: first.choices[0].message.content },
    { role: 'user', content: 'And one more animal, please.' }];
  const whole = JSON.parse(await post(body(turn2)));
  assert.ok(cached(whole) >= 16, `cached_tokens ${cached(whole)} of ${whole.usage.prompt_tokens}`);
  let content = '';
  for (const d of parseSse(await post(body(turn2, { stream: true })))) {
    if (d === '[DONE]') continue;
    content += JSON.parse(d).choices[0]?.delta?.content ?? '';
  }
  assert.equal(content, whole.choices[0].message.content);
});

test('qwen35moe and qwen3next serve: streamed equals whole, a repeated prompt resumes from a checkpoint', async () => {
  for (const shape of ['tiny-qwen35moe', 'tiny-qwen3next']) {
    const file = path.join(dir, `${shape}.gguf`);
    execFileSync(maker, ['--shape', shape, '--vocab', vocab, '-o', file], { stdio: 'ignore' });
    const s = await startServer(['--chat-template', template, '--enable-prompt-tokens-details', '--reasoning', 'off'],
      { model: file, name: shape });
    try {
      const req = (extra = {}) => fetch(`${s.base}/v1/chat/completions`, { method: 'POST',
        headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...body(turn1, extra), model: shape }) });
      const cold = await (await req()).json();
      assert.ok(cold.usage.completion_tokens >= 1, `${shape}: ${JSON.stringify(cold)}`);
      const warm = await (await req()).json();
      assert.ok(cached(warm) >= 16, `${shape}: cached_tokens ${cached(warm)} of ${warm.usage.prompt_tokens}`);
      assert.equal(warm.choices[0].message.content, cold.choices[0].message.content, shape);
      let content = '';
      for (const d of parseSse(await (await req({ stream: true })).text())) {
        if (d === '[DONE]') continue;
        content += JSON.parse(d).choices[0]?.delta?.content ?? '';
      }
      assert.equal(content, cold.choices[0].message.content, shape);
    } finally {
      assert.equal((await s.stop()).code, 0, s.log);
    }
  }
});
