// Concurrency through the server: 32 simultaneous streaming clients with mixed prompt
// lengths (each stream complete and well-formed), admission control (429 + Retry-After
// when the queue is full), and graceful SIGTERM (an in-flight stream still finishes with
// [DONE], new connections are refused, exit status 0).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, parseSse } from './lib/server.mjs';

const model = 'stories260K';
const postTo = (server, path, body) =>
  fetch(`${server.base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

test('32 concurrent streaming clients with mixed prompt lengths', async () => {
  const server = await startServer(['--max-num-seqs', '32']);
  try {
    const words = 'Once upon a time there was a little girl named Lily who loved to play outside'.split(' ');
    const jobs = [];
    for (let i = 0; i < 32; i++) {
      const prompt = Array.from({ length: 2 + ((i * 7) % 60) }, (_, k) => words[k % words.length]).join(' ');
      const chat = i % 2 === 0;
      const body = chat
        ? { model, messages: [{ role: 'user', content: prompt }], max_tokens: 12 + (i % 5), temperature: 0.7, seed: i,
            stream: true, stream_options: { include_usage: true } }
        : { model, prompt, max_tokens: 12 + (i % 5), temperature: 0.7, seed: i, stream: true,
            stream_options: { include_usage: true } };
      jobs.push(postTo(server, chat ? '/v1/chat/completions' : '/v1/completions', body).then(async (r) => {
        assert.equal(r.status, 200);
        const p = parseSse(await r.text());
        assert.equal(p.at(-1), '[DONE]');
        const chunks = p.slice(0, -1).map((x) => JSON.parse(x));
        assert.ok(!chunks.some((c) => c.error), JSON.stringify(chunks.find((c) => c.error)));
        assert.equal(chunks.filter((c) => c.choices[0]?.finish_reason).length, 1);
        const usage = chunks.at(-1).usage;
        assert.ok(usage.completion_tokens >= 1 && usage.completion_tokens <= 16);
        return usage.completion_tokens;
      }));
    }
    const counts = await Promise.all(jobs);
    assert.equal(counts.length, 32);
    // The engine updates its gauges after posting the last events: poll briefly.
    const deadline = Date.now() + 10000;
    for (;;) {
      const m = await server.metrics();
      if ((m['vkserve:num_requests_running'] || 0) === 0) break;
      if (Date.now() > deadline) assert.fail(`still running: ${JSON.stringify(m)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    const r = await server.stop();
    assert.equal(r.code, 0);
  }
});

test('overload answers 429 with Retry-After; SIGTERM drains in-flight streams', async () => {
  const server = await startServer(['--max-num-seqs', '1', '--max-queued-requests', '1', '--drain-timeout', '20']);
  let stopped = false;
  try {
    const body = { model, prompt: 'Once upon a time', max_tokens: 60, ignore_eos: true, temperature: 0 };
    const rs = await Promise.all(Array.from({ length: 8 }, () => postTo(server, '/v1/completions', body)));
    const statuses = rs.map((r) => r.status);
    assert.ok(statuses.includes(200), statuses.join(','));
    const limited = rs.filter((r) => r.status === 429);
    assert.ok(limited.length >= 1, statuses.join(','));
    for (const r of limited) {
      assert.ok(Number(r.headers.get('retry-after')) >= 1);
      const j = await r.json();
      assert.equal(j.error.code, 429);
      assert.equal(j.error.type, 'RateLimitError');
    }
    await Promise.all(rs.filter((r) => r.status === 200).map((r) => r.json()));
    const m = await server.metrics();
    assert.ok(m['vkserve:rejected_overload_total'] >= limited.length);

    // Graceful stop while a stream is running.
    const r = await postTo(server, '/v1/completions', { ...body, max_tokens: 40, stream: true });
    assert.equal(r.status, 200);
    const reader = r.body.getReader();
    let text = new TextDecoder().decode((await reader.read()).value);
    server.proc.kill('SIGTERM');
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    const p = parseSse(text);
    assert.equal(p.at(-1), '[DONE]');
    assert.equal(JSON.parse(p.at(-2)).choices[0].finish_reason, 'length');
    const exit = await server.exited;
    stopped = true;
    assert.equal(exit.code, 0, server.log);
    await assert.rejects(fetch(`${server.base}/ping`));
  } finally {
    if (!stopped) await server.stop();
  }
});
