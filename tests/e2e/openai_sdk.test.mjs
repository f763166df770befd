// The official `openai` npm client against vkserve + stories260K on lavapipe: chat and
// completions, non-stream and stream, include_usage, n=2, stop, logprobs, several prompts;
// vLLM's return_token_ids, allowed_token_ids, bad_words and truncate_prompt_tokens.
// Run: VKS_BUILD_ROOT=build VKS_SOURCE_ROOT=. node tests/e2e/openai_sdk.test.mjs
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, parseSse, skip } from './lib/server.mjs';

let OpenAI;
try {
  ({ default: OpenAI } = await import('openai'));
} catch (e) {
  skip(`the openai npm package is not installed (npm ci in tests/e2e): ${e.message}`);
}

const server = await startServer();
const client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: 'unused', maxRetries: 0 });
const model = 'stories260K';
const messages = [{ role: 'user', content: 'Once upon a time' }];

after(async () => {
  const r = await server.stop();
  assert.equal(r.code, 0, `exit status after SIGTERM: ${JSON.stringify(r)}\n${server.log}`);
});

test('models list names the served model', async () => {
  const list = await client.models.list();
  const ids = list.data.map((m) => m.id);
  assert.deepEqual(ids, [model]);
  assert.equal(list.data[0].object, 'model');
  assert.equal(typeof list.data[0].created, 'number');
  assert.equal(typeof list.data[0].owned_by, 'string');
});

test('chat non-stream: seed 000 shape', async () => {
  const r = await client.chat.completions.create({ model, messages, max_tokens: 12, temperature: 0 });
  assert.match(r.id, /^chatcmpl-[0-9a-f]{32}$/);
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.model, model);
  assert.ok(Number.isInteger(r.created));
  assert.equal(r.choices.length, 1);
  const c = r.choices[0];
  assert.equal(c.index, 0);
  assert.equal(c.message.role, 'assistant');
  assert.equal(typeof c.message.content, 'string');
  assert.ok(c.message.content.length > 0);
  assert.deepEqual(c.message.tool_calls, []);
  for (const k of ['refusal', 'annotations', 'audio', 'function_call']) assert.equal(c.message[k], null, k);
  assert.equal(c.logprobs, null);
  assert.ok(['stop', 'length'].includes(c.finish_reason));
  assert.ok('stop_reason' in c);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  assert.ok(r.usage.completion_tokens <= 12 && r.usage.completion_tokens > 0);
  for (const k of ['service_tier', 'system_fingerprint', 'prompt_logprobs', 'kv_transfer_params']) assert.ok(k in r, k);
});

test('chat: max_tokens hit gives finish_reason length', async () => {
  const r = await client.chat.completions.create({ model, messages, max_tokens: 3, temperature: 0, ignore_eos: true });
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage.completion_tokens, 3);
});

test('chat: greedy is deterministic and equals the streamed text', async () => {
  const a = await client.chat.completions.create({ model, messages, max_tokens: 20, temperature: 0 });
  const b = await client.chat.completions.create({ model, messages, max_tokens: 20, temperature: 0 });
  assert.equal(a.choices[0].message.content, b.choices[0].message.content);
  const stream = await client.chat.completions.create({ model, messages, max_tokens: 20, temperature: 0, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(text, a.choices[0].message.content);
});

test('chat stream: role chunk first, one finish chunk, include_usage last', async () => {
  const stream = await client.chat.completions.create({
    model, messages, max_tokens: 10, temperature: 0, stream: true, stream_options: { include_usage: true },
  });
  const chunks = [];
  for await (const c of stream) chunks.push(c);
  assert.ok(chunks.length >= 3);
  const ids = new Set(chunks.map((c) => c.id));
  assert.equal(ids.size, 1);
  assert.match(chunks[0].id, /^chatcmpl-/);
  for (const c of chunks) assert.equal(c.object, 'chat.completion.chunk');
  assert.deepEqual(chunks[0].choices[0].delta, { role: 'assistant', content: '' });
  const finishes = chunks.filter((c) => c.choices.length && c.choices[0].finish_reason !== null);
  assert.equal(finishes.length, 1);
  const last = chunks[chunks.length - 1];
  assert.deepEqual(last.choices, []);
  assert.equal(last.usage.total_tokens, last.usage.prompt_tokens + last.usage.completion_tokens);
  assert.ok(last.usage.completion_tokens > 0);
  const fi = chunks.indexOf(finishes[0]);
  assert.equal(fi, chunks.length - 2, 'nothing but the usage chunk after the finish chunk');
});

test('chat n=2: two choices, each with its own role and finish chunk', async () => {
  const r = await client.chat.completions.create({ model, messages, max_tokens: 8, temperature: 1, seed: 7, n: 2 });
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1]);
  const stream = await client.chat.completions.create({
    model, messages, max_tokens: 8, temperature: 1, seed: 7, n: 2, stream: true,
  });
  const roles = [0, 0], finishes = [0, 0];
  for await (const c of stream) {
    for (const ch of c.choices) {
      if (ch.delta.role) roles[ch.index]++;
      if (ch.finish_reason) finishes[ch.index]++;
    }
  }
  assert.deepEqual(roles, [1, 1]);
  assert.deepEqual(finishes, [1, 1]);
});

test('chat seed: same seed, same output', async () => {
  const req = { model, messages, max_tokens: 16, temperature: 1, seed: 1234 };
  const a = await client.chat.completions.create(req);
  const b = await client.chat.completions.create(req);
  assert.equal(a.choices[0].message.content, b.choices[0].message.content);
});

test('chat stop string: stop_reason names it and the text excludes it', async () => {
  const base = await client.chat.completions.create({ model, messages, max_tokens: 30, temperature: 0 });
  const text = base.choices[0].message.content;
  const words = text.trim().split(/\s+/);
  assert.ok(words.length >= 3, `need a longer completion: ${JSON.stringify(text)}`);
  const stop = words[2];
  const r = await client.chat.completions.create({ model, messages, max_tokens: 30, temperature: 0, stop: [stop] });
  const c = r.choices[0];
  assert.equal(c.finish_reason, 'stop');
  assert.equal(c.stop_reason, stop);
  assert.ok(!c.message.content.includes(stop));
  assert.ok(text.startsWith(c.message.content));
});

test('chat logprobs with top_logprobs', async () => {
  const r = await client.chat.completions.create({
    model, messages, max_tokens: 5, temperature: 0, logprobs: true, top_logprobs: 3,
  });
  const lp = r.choices[0].logprobs.content;
  assert.equal(lp.length, r.usage.completion_tokens);
  for (const e of lp) {
    assert.equal(typeof e.token, 'string');
    assert.ok(e.logprob <= 0);
    assert.ok(e.bytes === null || Array.isArray(e.bytes));
    assert.equal(e.top_logprobs.length, 3);
    // greedy: the chosen token is the most likely one
    assert.ok(Math.abs(e.top_logprobs[0].logprob - e.logprob) < 1e-4);
  }
});

test('completions: several prompts, usage sums', async () => {
  const prompts = ['Once upon a time', 'The cat', 'Lily and Tom'];
  const r = await client.completions.create({ model, prompt: prompts, max_tokens: 6, temperature: 0 });
  assert.match(r.id, /^cmpl-[0-9a-f]{32}$/);
  assert.equal(r.object, 'text_completion');
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2]);
  for (const c of r.choices) {
    assert.equal(typeof c.text, 'string');
    assert.ok(['stop', 'length'].includes(c.finish_reason));
    assert.ok('prompt_logprobs' in c);
  }
  for (let i = 0; i < prompts.length; i++) {
    const one = await client.completions.create({ model, prompt: prompts[i], max_tokens: 6, temperature: 0 });
    assert.equal(one.choices[0].text, r.choices[i].text, `prompt ${i}`);
  }
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
});

test('completions: prompts x n flatten to prompt_idx * n + i', async () => {
  const r = await client.completions.create({
    model, prompt: ['Once', 'The dog'], max_tokens: 4, temperature: 0.8, seed: 3, n: 2,
  });
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2, 3]);
});

test('completions: token-id prompt, echo, logprobs', async () => {
  const r = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 5, temperature: 0, echo: true, logprobs: 2 });
  const c = r.choices[0];
  assert.ok(c.text.startsWith('Once upon a time'));
  const lp = c.logprobs;
  assert.equal(lp.tokens.length, lp.token_logprobs.length);
  assert.equal(lp.tokens.length, lp.top_logprobs.length);
  assert.equal(lp.tokens.length, lp.text_offset.length);
  // Checklist 51: the echoed prompt tokens are scored, the first one with null.
  assert.equal(lp.token_logprobs[0], null);
  assert.equal(lp.top_logprobs[0], null);
  const nPrompt = r.usage.prompt_tokens;
  assert.ok(lp.tokens.length > nPrompt, 'prompt and completion tokens both listed');
  for (let i = 1; i < lp.tokens.length; i++) {
    assert.equal(typeof lp.token_logprobs[i], 'number', `token_logprobs[${i}]`);
    assert.ok(lp.token_logprobs[i] <= 0);
    assert.ok(Object.keys(lp.top_logprobs[i]).length >= 1);
  }
  for (let i = 1; i < lp.text_offset.length; i++) assert.ok(lp.text_offset[i] >= lp.text_offset[i - 1]);
  const ids = await fetch(`${server.base}/tokenize`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt: 'Once upon a time' }),
  }).then((x) => x.json());
  assert.ok(ids.count > 0);
  const byIds = await client.completions.create({ model, prompt: ids.tokens, max_tokens: 5, temperature: 0 });
  const byText = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 5, temperature: 0 });
  assert.equal(byIds.choices[0].text, byText.choices[0].text);
});

test('completions stream: text_completion chunks, finish chunk, usage chunk', async () => {
  const stream = await client.completions.create({
    model, prompt: 'Once upon a time', max_tokens: 8, temperature: 0, stream: true, stream_options: { include_usage: true },
  });
  const chunks = [];
  for await (const c of stream) chunks.push(c);
  for (const c of chunks) assert.equal(c.object, 'text_completion');
  const finishes = chunks.filter((c) => c.choices.length && c.choices[0].finish_reason);
  assert.equal(finishes.length, 1);
  assert.deepEqual(chunks[chunks.length - 1].choices, []);
  assert.ok(chunks[chunks.length - 1].usage.completion_tokens > 0);
  const text = chunks.map((c) => c.choices[0]?.text ?? '').join('');
  const whole = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 8, temperature: 0 });
  assert.equal(text, whole.choices[0].text);
});

// vLLM sampling extras (contracts 5.2), read back through return_token_ids.
const post = async (route, body) => {
  const res = await fetch(`${server.base}${route}`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
};
const hasRun = (ids, seq) => ids.some((_, i) => seq.every((t, k) => ids[i + k] === t));

test('return_token_ids: prompt and completion ids, streamed the same, counted by usage', async () => {
  const req = { model, messages, max_tokens: 12, temperature: 0, return_token_ids: true };
  const { status, json: r } = await post('/v1/chat/completions', req);
  assert.equal(status, 200);
  assert.equal(r.prompt_token_ids.length, r.usage.prompt_tokens);
  assert.equal(r.choices[0].token_ids.length, r.usage.completion_tokens);
  const res = await fetch(`${server.base}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...req, stream: true }),
  });
  const chunks = parseSse(await res.text()).slice(0, -1).map((x) => JSON.parse(x));
  assert.deepEqual(chunks[0].prompt_token_ids, r.prompt_token_ids);
  assert.deepEqual(chunks.flatMap((c) => c.choices[0].token_ids ?? []), r.choices[0].token_ids);
  // Completions: per choice; the ids decode to the text.
  const c = (await post('/v1/completions', { model, prompt: 'Once upon a time', max_tokens: 10, temperature: 0, return_token_ids: true })).json;
  const ch = c.choices[0];
  assert.equal(ch.prompt_token_ids.length, c.usage.prompt_tokens);
  const text = (await post('/detokenize', { model, tokens: ch.token_ids })).json.prompt;
  assert.equal(text.trim(), ch.text.trim());
  // Without the option the response has neither key.
  const plain = (await post('/v1/completions', { model, prompt: 'Once', max_tokens: 2 })).json;
  assert.ok(!('token_ids' in plain.choices[0]) && !('prompt_token_ids' in plain.choices[0]));
});

test('allowed_token_ids: every sampled token is one of them', async () => {
  const allowed = [317, 426, 338, 267];
  const { status, json: r } = await post('/v1/chat/completions', {
    model, messages, max_tokens: 16, temperature: 1, seed: 2, n: 2, allowed_token_ids: allowed, return_token_ids: true,
  });
  assert.equal(status, 200);
  for (const c of r.choices) {
    assert.equal(c.token_ids.length, 16);  // EOS is not allowed either
    for (const t of c.token_ids) assert.ok(allowed.includes(t), `token ${t}`);
  }
  const bad = await post('/v1/chat/completions', { model, messages, allowed_token_ids: [] });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.error.param, 'allowed_token_ids');
  const out = await post('/v1/chat/completions', { model, messages, allowed_token_ids: [512] });
  assert.equal(out.status, 400);
});

test('bad_words: a bad word never completes; the greedy output changes', async () => {
  const words = ['Lily', 'park'];
  const seqs = [];
  for (const w of words)
    for (const p of [w, ` ${w}`]) seqs.push((await post('/tokenize', { model, prompt: p, add_special_tokens: false })).json.tokens);
  const req = { model, prompt: 'Once upon a time', max_tokens: 60, temperature: 0, return_token_ids: true };
  const free = (await post('/v1/completions', req)).json.choices[0];
  assert.ok(seqs.some((s) => hasRun(free.token_ids, s)), 'the unconstrained text says a bad word');
  const { status, json: r } = await post('/v1/completions', { ...req, bad_words: words });
  assert.equal(status, 200);
  const c = r.choices[0];
  for (const s of seqs) assert.ok(!hasRun(c.token_ids, s), `${s} in ${c.token_ids}`);
  assert.notEqual(c.text, free.text);
  const blank = await post('/v1/completions', { ...req, bad_words: ['  '] });
  assert.equal(blank.status, 400);
  assert.equal(blank.json.error.param, 'bad_words');
});

test('truncate_prompt_tokens: keeps the last k prompt tokens; bounds are 400s', async () => {
  const long = [1, ...Array(3000).fill(403)];  // longer than the 2048-token context
  const over = await post('/v1/completions', { model, prompt: long, max_tokens: 2 });
  assert.equal(over.status, 400);
  const { status, json: r } = await post('/v1/completions', {
    model, prompt: [...long, 261, 378], max_tokens: 2, truncate_prompt_tokens: 50, return_token_ids: true,
  });
  assert.equal(status, 200);
  assert.equal(r.usage.prompt_tokens, 50);
  assert.deepEqual(r.choices[0].prompt_token_ids.slice(-3), [403, 261, 378]);
  const chat = (await post('/v1/chat/completions', { model, messages, max_tokens: 2, truncate_prompt_tokens: 3, return_token_ids: true })).json;
  assert.equal(chat.usage.prompt_tokens, 3);
  assert.equal(chat.prompt_token_ids.length, 3);
  for (const [v, re] of [[0, /positive/], [-2, /positive/], [4096, /greater than max_model_len \(2048\)/]]) {
    const e = await post('/v1/completions', { model, prompt: 'x', truncate_prompt_tokens: v });
    assert.equal(e.status, 400);
    assert.equal(e.json.error.param, 'truncate_prompt_tokens');
    assert.match(e.json.error.message, re);
  }
});

test('errors surface as SDK exceptions with OpenAI bodies', async () => {
  await assert.rejects(client.chat.completions.create({ model: 'nope', messages }), (e) => {
    assert.equal(e.status, 404);
    assert.match(e.message, /nope/);
    return true;
  });
  await assert.rejects(client.chat.completions.create({ model, messages, temperature: 5 }), (e) => e.status === 400);
  await assert.rejects(client.chat.completions.create({ model, messages: [] }), (e) => e.status === 400);
});
