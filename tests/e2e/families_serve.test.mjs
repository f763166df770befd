// qwen3moe, gemma2, gemma3, phi3, mistral3 and smollm3 served end to end (#22), one after the
// other: for each, a seeded random-weight file from make-test-model carrying the family's
// real chat template (tokenizer.chat_template) and a real vocabulary, served without
// --chat-template, and driven through the official `openai` client. Each must list itself
// in /v1/models; count as prompt_tokens exactly the tokens of the template's rendering
// (`vkserve template` on the GGUF, tokenized by /tokenize), with and without tools; answer
// greedily the same twice and streamed, with the finish_reason its length implies; turn a
// forced tool_choice into one parseable call; and, where the template teaches one, parse a
// call written in the family's own format and split its reasoning markers (both forced by a
// regex, the weights being random). Gemma 3 is served with the Gemma 2 template (the same
// turn markers; none of Gemma 3's own is in the shared set). Skipped (exit 77) without the
// openai package, make-test-model, VKS_SHARED's templates and vocabularies, or a Vulkan device.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { serveTestModel, renderTemplate, sharedTemplate, sharedVocab } from './lib/server.mjs';
import { OpenAI, escape, collectStream } from './lib/tool_formats.mjs';

const spm = { vocab: sharedVocab('ggml-vocab-llama-spm.gguf'), bos: '<s>', eos: '</s>' };
const call = '{"city": "Paris", "days": 3}';
// arch: the served name; shape: make-test-model's; system: the template takes a system
// message; marks: text the rendering must contain; call: the family's own tool-call text
// (when the template teaches tools: toolsMark shows them rendered); think: a reply with
// reasoning markers and its expected {reasoning, content}.
const families = [
  { arch: 'qwen3moe', shape: 'tiny-qwen3moe', template: 'Qwen-Qwen3-0.6B.jinja', ...spm, system: true,
    marks: ['<|im_start|>system\n', '<|im_start|>user\nName three', '<|im_start|>assistant\n'], toolsMark: '<tools>',
    call: `<tool_call>\n{"name": "get_weather", "arguments": ${call}}\n</tool_call>`,
    think: { reply: '<think>\nShort.\n</think>\n\nHi.', reasoning: 'Short.', content: 'Hi.' } },
  { arch: 'gemma2', shape: 'tiny-gemma2', template: 'google-gemma-2-2b-it.jinja', ...spm, system: false,
    marks: ['<s><start_of_turn>user\nName three', '<end_of_turn>\n<start_of_turn>model\n'] },
  { arch: 'gemma3', shape: 'tiny-gemma3', template: 'google-gemma-2-2b-it.jinja', ...spm, system: false,
    marks: ['<s><start_of_turn>user\nName three', '<end_of_turn>\n<start_of_turn>model\n'] },
  { arch: 'phi3', shape: 'tiny-phi3', template: 'microsoft-Phi-3.5-mini-instruct.jinja',
    vocab: sharedVocab('ggml-vocab-phi-3.gguf'), bos: '<s>', eos: '<|endoftext|>', system: true,
    marks: ['<|system|>\nYou are', '<|end|>\n<|user|>\nName three', '<|assistant|>\n'] },
  { arch: 'mistral3', shape: 'tiny-mistral3', template: 'mistralai-Ministral-3-14B-Reasoning-2512.jinja', ...spm,
    system: true,
    marks: ['<s>[SYSTEM_PROMPT]You are', '[INST]Name three'], toolsMark: '[AVAILABLE_TOOLS]',
    call: `[TOOL_CALLS]get_weather[ARGS]${call}`,
    think: { reply: '[THINK]Short.[/THINK]Hi.', reasoning: 'Short.', content: 'Hi.' } },
  { arch: 'smollm3', shape: 'tiny-smollm3', template: 'HuggingFaceTB-SmolLM3-3B.jinja',
    vocab: sharedVocab('ggml-vocab-gpt-2.gguf'), bos: '<|endoftext|>', eos: '<|endoftext|>', system: true,
    marks: ['<|im_start|>system\n## Metadata', 'Reasoning Mode: /think', 'You are a terse', '<|im_start|>assistant\n'],
    think: { reply: '<think>\nShort.\n</think>\nHi.', reasoning: 'Short.', content: 'Hi.' } },
];
for (const f of families) f.templatePath = sharedTemplate(f.template);

const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather of a city.', parameters: {
  type: 'object',
  properties: { city: { type: 'string', enum: ['Paris', 'Rome'] }, days: { type: 'integer', enum: [1, 2, 3] } },
  required: ['city', 'days'] } } }];
// max_tokens of the constrained requests leaves room for the forced text written one
// character a token and for some of the JSON whitespace a schema allows, within tiny-mistral3's
// 256-token context: the result does not depend on which tokens the random weights prefer.
const messagesOf = (f) => [...(f.system ? [{ role: 'system', content: 'You are a terse assistant.' }] : []),
  { role: 'user', content: 'Name three colours of the rainbow and one animal that lives in the sea.' }];

async function tokenCount(server, name, prompt) {
  const r = await fetch(`${server.base}/tokenize`, { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: name, prompt, add_special_tokens: false }) });
  const text = await r.text();
  assert.equal(r.status, 200, text);
  return JSON.parse(text).tokens.length;
}

async function checkPrompt(f, server, model, client) {
  const messages = messagesOf(f);
  const models = await client.models.list();
  assert.deepEqual(models.data.map((m) => m.id), [f.arch]);
  assert.equal(models.data[0].object, 'model');

  const rendered = renderTemplate(model, { messages, add_generation_prompt: true }, f);
  for (const m of f.marks) {
    assert.ok(rendered.includes(m), `${f.arch}: ${JSON.stringify(m)} not in ${JSON.stringify(rendered)}`);
  }
  const body = { model: f.arch, messages, max_tokens: 8, temperature: 0 };
  const a = await client.chat.completions.create(body);
  assert.equal(a.usage.prompt_tokens, await tokenCount(server, f.arch, rendered), `rendered: ${JSON.stringify(rendered)}`);
  const n = a.usage.completion_tokens;
  assert.ok(n >= 1 && n <= 8, JSON.stringify(a));
  assert.equal(a.choices[0].finish_reason, n === 8 ? 'length' : 'stop', JSON.stringify(a));
  assert.equal(typeof a.choices[0].message.content, 'string');

  const b = await client.chat.completions.create(body);  // greedy: the same text again
  assert.equal(b.choices[0].message.content, a.choices[0].message.content);
  assert.deepEqual(b.usage, a.usage);
  const s = await collectStream(client, body);
  assert.equal(s.content, a.choices[0].message.content);
  assert.equal(s.finish, a.choices[0].finish_reason);
  assert.equal(s.usage.prompt_tokens, a.usage.prompt_tokens);
  assert.equal(s.usage.completion_tokens, n);
}

// A named tool_choice is held by decoding to the function's schema: one call whose arguments
// parse; the prompt is the template's rendering with the tools (rendered where it teaches them).
async function checkForcedCall(f, server, model, client) {
  const messages = messagesOf(f);
  const rendered = renderTemplate(model, { messages, tools, add_generation_prompt: true }, f);
  if (f.toolsMark) assert.ok(rendered.includes(f.toolsMark), `${f.arch}: tools not rendered: ${JSON.stringify(rendered)}`);
  const j = await client.chat.completions.create({ model: f.arch, messages, tools, max_tokens: 64, temperature: 0,
    tool_choice: { type: 'function', function: { name: 'get_weather' } } });
  assert.equal(j.usage.prompt_tokens, await tokenCount(server, f.arch, rendered));
  const c = j.choices[0];
  assert.equal(c.finish_reason, 'stop', JSON.stringify(j));
  assert.equal(c.message.tool_calls?.length, 1, JSON.stringify(j));
  assert.equal(c.message.tool_calls[0].function.name, 'get_weather');
  const args = JSON.parse(c.message.tool_calls[0].function.arguments);
  assert.ok(['Paris', 'Rome'].includes(args.city) && [1, 2, 3].includes(args.days), JSON.stringify(args));
}

// The family's own call text (forced by a regex) comes back as an OpenAI tool call (streamed
// calls per format: tool_formats_sdk*.test.mjs).
async function checkFamilyCall(f, client) {
  const j = await client.chat.completions.create({ model: f.arch, messages: messagesOf(f), tools,
    max_tokens: f.call.length + 4, temperature: 0, guided_regex: escape(f.call) });
  const c = j.choices[0];
  assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(j));
  assert.equal(c.message.tool_calls.length, 1, JSON.stringify(j));
  assert.equal(c.message.tool_calls[0].function.name, 'get_weather');
  assert.equal(c.message.tool_calls[0].function.arguments, '{"city":"Paris","days":3}');
  assert.equal(c.message.content, null);
}

// Reasoning markers (forced by a regex) come back split, streamed and not.
async function checkReasoning(f, client) {
  const body = { model: f.arch, messages: messagesOf(f), max_tokens: f.think.reply.length + 4, temperature: 0,
    guided_regex: escape(f.think.reply) };
  const j = await client.chat.completions.create(body);
  const m = j.choices[0].message;
  assert.equal(m.reasoning_content?.trim(), f.think.reasoning, JSON.stringify(j));
  assert.equal(m.content?.trim(), f.think.content, JSON.stringify(j));
  assert.equal(j.choices[0].finish_reason, 'stop');
  const s = await collectStream(client, body);
  assert.equal(s.reasoning, m.reasoning_content);
  assert.equal(s.content, m.content);
}

for (const f of families) {
  test(`${f.arch} serves with the template its GGUF carries`, async () => {
    const { server, model, close } = await serveTestModel(f.shape,
      { vocab: f.vocab, template: f.templatePath, name: f.arch });
    try {
      const client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: 'unused', maxRetries: 0 });
      await checkPrompt(f, server, model, client);
      await checkForcedCall(f, server, model, client);
      if (f.call) await checkFamilyCall(f, client);
      if (f.think) await checkReasoning(f, client);
    } finally {
      assert.equal((await close()).code, 0, server.log);
    }
  });
}
