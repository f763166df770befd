// The official `openai` client's embeddings API against vkserve serving the bundled
// generation model with --embeddings (last-token pooling of the final-normed hidden state,
// n_embd = 64): float and base64 (the SDK's default, decoded by the SDK) give the same
// vectors, unit norm, input order kept, determinism, dimensions (Matryoshka truncation +
// renormalisation), token-id inputs, usage, and errors; a server without --embeddings
// refuses with a clear 400.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, skip } from './lib/server.mjs';

let OpenAI;
try {
  ({ default: OpenAI } = await import('openai'));
} catch (e) {
  skip(`the openai npm package is not installed (npm ci in tests/e2e): ${e.message}`);
}

const server = await startServer(['--embeddings']);
const plain = await startServer([]);
const client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: 'unused', maxRetries: 0 });
const model = 'stories260K';
const texts = ['Once upon a time', 'The little dog ran to the park.', 'Lily saw a big red ball'];

after(async () => {
  for (const s of [server, plain]) {
    const r = await s.stop();
    assert.equal(r.code, 0, `exit status after SIGTERM: ${JSON.stringify(r)}\n${s.log}`);
  }
});

const norm = (v) => Math.sqrt(v.reduce((a, x) => a + x * x, 0));
const close = (a, b, eps = 2e-5) => {  // one input alone vs in a batch: kernel tiling may differ
  assert.equal(a.length, b.length);
  for (let i = 0; i < a.length; ++i) assert.ok(Math.abs(a[i] - b[i]) <= eps, `component ${i}: ${a[i]} vs ${b[i]}`);
};

test('float: shape, unit norm, usage', async () => {
  const r = await client.embeddings.create({ model, input: texts[0], encoding_format: 'float' });
  assert.equal(r.object, 'list');
  assert.equal(r.model, model);
  assert.equal(r.data.length, 1);
  assert.equal(r.data[0].object, 'embedding');
  assert.equal(r.data[0].index, 0);
  assert.equal(r.data[0].embedding.length, 64);
  assert.ok(Math.abs(norm(r.data[0].embedding) - 1) < 1e-5);
  assert.ok(r.usage.prompt_tokens > 0);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens);
});

test('base64 (the SDK default) decodes to the float answer; order kept; deterministic', async () => {
  const singles = [];
  for (const t of texts) singles.push((await client.embeddings.create({ model, input: t, encoding_format: 'float' })).data[0].embedding);
  const b64 = await client.embeddings.create({ model, input: texts });  // SDK asks base64, decodes
  assert.equal(b64.data.length, texts.length);
  b64.data.forEach((d, i) => {
    assert.equal(d.index, i);
    close(Array.from(d.embedding), singles[i]);
    assert.ok(Math.abs(norm(Array.from(d.embedding)) - 1) < 1e-5);
  });
  assert.notDeepEqual(singles[0], singles[1]);
  // Raw base64 on the wire: little-endian f32 bytes.
  const raw = await (await fetch(`${server.base}/v1/embeddings`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, input: texts[1], encoding_format: 'base64' }),
  })).json();
  const buf = Buffer.from(raw.data[0].embedding, 'base64');
  assert.equal(buf.length, 64 * 4);
  const f = Array.from({ length: 64 }, (_, i) => buf.readFloatLE(i * 4));
  close(f, singles[1]);
  // Determinism: the same request again gives the same f32 values, bit for bit.
  const again = await client.embeddings.create({ model, input: texts, encoding_format: 'float' });
  again.data.forEach((d, i) => assert.deepEqual(d.embedding.map(Math.fround), Array.from(b64.data[i].embedding)));
});

test('dimensions: the first components renormalised; beyond the width is a 400', async () => {
  const full = await client.embeddings.create({ model, input: texts[2], encoding_format: 'float', normalize: false });
  const cut = await client.embeddings.create({ model, input: texts[2], encoding_format: 'float', dimensions: 16 });
  const v = cut.data[0].embedding;
  assert.equal(v.length, 16);
  assert.ok(Math.abs(norm(v) - 1) < 1e-5);
  const head = full.data[0].embedding.slice(0, 16);
  close(v, head.map((x) => x / norm(head)), 1e-5);
  await assert.rejects(client.embeddings.create({ model, input: 'x', dimensions: 65 }),
    (e) => e.status === 400 && /dimensions/.test(e.message));
});

test('token ids and lists of ids equal the text they encode', async () => {
  const tok = await (await fetch(`${server.base}/tokenize`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, prompt: texts[0] }),
  })).json();
  assert.ok(Array.isArray(tok.tokens) && tok.tokens.length > 0);
  const byText = (await client.embeddings.create({ model, input: texts[0], encoding_format: 'float' })).data[0].embedding;
  const byIds = await client.embeddings.create({ model, input: tok.tokens, encoding_format: 'float' });
  close(byIds.data[0].embedding, byText);
  assert.equal(byIds.usage.prompt_tokens, tok.tokens.length);
  const lists = await client.embeddings.create({ model, input: [tok.tokens, [1, 2, 3]], encoding_format: 'float' });
  assert.equal(lists.data.length, 2);
  close(lists.data[0].embedding, byText);
});

test('errors: empty input, bad format, ids out of range, unknown model, no --embeddings', async () => {
  const bad = async (body, re, status = 400, base = server.base) => {
    const r = await fetch(`${base}/v1/embeddings`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
    });
    const j = await r.json();
    assert.equal(r.status, status, JSON.stringify(j));
    assert.match(j.error.message, re);
  };
  await bad({ model, input: [] }, /input/);
  await bad({ model, input: '' }, /input/);
  await bad({ model }, /input/);
  await bad({ model, input: 'x', encoding_format: 'int8' }, /encoding_format/);
  await bad({ model, input: [1, 999999] }, /vocabulary/);
  await bad({ model: 'nope', input: 'x' }, /does not exist/, 404);
  await bad({ model, input: 'x' }, /not an embedding model.*--embeddings/, 400, plain.base);
  await assert.rejects(new OpenAI({ baseURL: `${plain.base}/v1`, apiKey: 'unused', maxRetries: 0 })
    .embeddings.create({ model, input: 'x' }), (e) => e.status === 400);
});
