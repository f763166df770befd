// Hostile clients against the scheduler and the prefix cache (issue #17):
// - a request with many prompts x n must not starve another client's small request
//   (round-robin admission across client requests), while /health keeps answering;
// - prompts x n above --max-sequences-per-request is a 400 naming the limit;
// - cache_salt and --prefix-cache-salt-per-key keep one client's prompts out of another's
//   prefix cache (usage.prompt_tokens_details.cached_tokens, --enable-prompt-tokens-details).
// Servers run under a memory limit (prlimit --as) so that a regression fails the test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from './lib/server.mjs';

const model = 'stories260K';
const memoryLimitBytes = 16 * 1024 ** 3;
const post = (server, path, body, headers = {}) =>
  fetch(`${server.base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

const story = 'Once upon a time, there was a little girl named Lily. She loved to play outside in the park ' +
  'with her dog Max. One day, Lily and Max found a big red ball under a tree near the pond.';

test('a request with many prompts x n does not starve a small request sent just after it', async () => {
  const server = await startServer(['--max-num-seqs', '16'], { memoryLimitBytes });
  try {
    // 64 prompts x n=4 = 256 sequences of 32 tokens: 16 waves of 16 sequences.
    const prompts = Array.from({ length: 64 }, (_, i) => `${story} Number ${i}.`);
    const t0 = Date.now();
    let bigDone = 0;
    const big = post(server, '/v1/completions', {
      model, prompt: prompts, n: 4, max_tokens: 32, ignore_eos: true, temperature: 1, seed: 1,
    }).then(async (r) => {
      assert.equal(r.status, 200);
      const j = await r.json();
      bigDone = Date.now() - t0;
      assert.equal(j.choices.length, 256);
      return j;
    });
    await new Promise((r) => setTimeout(r, 300));  // the big request is queued and running
    await server.assertHealthy(1000, 'while the big request runs');
    const t1 = Date.now();
    const r = await post(server, '/v1/chat/completions', {
      model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 8, ignore_eos: true, temperature: 0,
    });
    assert.equal(r.status, 200);
    const small = await r.json();
    const smallDone = Date.now() - t0;
    assert.equal(small.usage.completion_tokens, 8);
    const healthMs = await server.assertHealthy(1000, 'after the small request');
    await big;
    console.log(`small request: ${smallDone - (t1 - t0)} ms after it was sent (done at ${smallDone} ms); ` +
      `big request: ${bigDone} ms; /health ${healthMs} ms`);
    // FIFO admission ran the small request after every one of the 256 sequences had been
    // admitted (it finished with the big one); round-robin admits it at the first free slot.
    assert.ok(smallDone < bigDone * 0.5, `small ${smallDone} ms vs big ${bigDone} ms`);
  } finally {
    await server.stop();
  }
});

test('prompts x n above --max-sequences-per-request is a 400 naming the limit', async () => {
  const server = await startServer(['--max-sequences-per-request', '8'], { memoryLimitBytes });
  try {
    const over = await post(server, '/v1/completions', {
      model, prompt: ['a', 'b', 'c'], n: 3, temperature: 1, max_tokens: 2,
    });
    assert.equal(over.status, 400);
    const j = await over.json();
    assert.equal(j.error.type, 'BadRequestError');
    assert.match(j.error.message, /9 sequences/);
    assert.match(j.error.message, /--max-sequences-per-request/);
    const chat = await post(server, '/v1/chat/completions', {
      model, messages: [{ role: 'user', content: 'Hi' }], n: 9, temperature: 1, max_tokens: 2,
    });
    assert.equal(chat.status, 400);
    const ok = await post(server, '/v1/completions', { model, prompt: ['a', 'b'], n: 4, temperature: 1, max_tokens: 2 });
    assert.equal(ok.status, 200);
    assert.equal((await ok.json()).choices.length, 8);
  } finally {
    await server.stop();
  }
});

const cachedTokens = async (server, body, headers) => {
  const r = await post(server, '/v1/completions', { model, prompt: story, max_tokens: 2, temperature: 0, ...body },
    headers);
  const j = await r.json();
  assert.equal(r.status, 200, JSON.stringify(j));
  assert.ok(j.usage.prompt_tokens > 32);
  return j.usage.prompt_tokens_details.cached_tokens;
};

test('cache_salt: a different salt never reports cached tokens, the same salt does', async () => {
  const server = await startServer(['--enable-prompt-tokens-details'], { memoryLimitBytes });
  try {
    assert.equal(await cachedTokens(server, { cache_salt: 'alice' }), 0);
    assert.equal(await cachedTokens(server, { cache_salt: 'mallory' }), 0);
    assert.equal(await cachedTokens(server, {}), 0);
    assert.ok(await cachedTokens(server, { cache_salt: 'alice' }) > 0);
    assert.ok(await cachedTokens(server, {}) > 0);
    const bad = await post(server, '/v1/completions', { model, prompt: story, max_tokens: 2, cache_salt: '' });
    assert.equal(bad.status, 400);
    assert.equal((await bad.json()).error.param, 'cache_salt');
  } finally {
    await server.stop();
  }
});

test('--prefix-cache-salt-per-key: clients with different API keys never share cached blocks', async () => {
  const server = await startServer(
    ['--api-key', 'key-one,key-two', '--prefix-cache-salt-per-key', '--enable-prompt-tokens-details'],
    { memoryLimitBytes });
  try {
    const one = { authorization: 'Bearer key-one' };
    const two = { authorization: 'Bearer key-two' };
    const nobody = await post(server, '/v1/completions', { model, prompt: story, max_tokens: 2 });
    assert.equal(nobody.status, 401);
    assert.equal(await cachedTokens(server, {}, one), 0);
    assert.equal(await cachedTokens(server, {}, two), 0);  // key-one's blocks are not visible
    assert.ok(await cachedTokens(server, {}, one) > 0);    // a key shares with itself
    assert.equal(await cachedTokens(server, { cache_salt: 's' }, one), 0);
    assert.equal(await cachedTokens(server, { cache_salt: 's' }, two), 0);  // same salt, other key
    assert.ok(await cachedTokens(server, { cache_salt: 's' }, two) > 0);
  } finally {
    await server.stop();
  }
});
