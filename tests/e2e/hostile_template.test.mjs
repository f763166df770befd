// Request-supplied chat templates (issue #17): refused with 400 unless the operator passes
// --trust-request-chat-template (vLLM's answer to CVE-2025-61620); when trusted, every
// render is bounded by the template budgets: a hostile template gets a 400 naming the
// budget, memory stays bounded (the server runs under prlimit --as) and /health keeps
// answering within a second while the render runs to its deadline.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from './lib/server.mjs';

const GiB = 1024 ** 3;
const model = 'stories260K';
const simple = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:";
const messages = [{ role: 'user', content: 'Once upon a time' }];

const untrusted = await startServer([], { memoryLimitBytes: 4 * GiB });
// A short deadline so that a render blocking the connection's I/O thread stays well under
// the one-second /health check (requests are still prepared on the I/O thread here).
const trusted = await startServer(['--trust-request-chat-template', '--chat-template-timeout-ms', '500'],
  { memoryLimitBytes: 4 * GiB });

after(async () => {
  for (const s of [untrusted, trusted]) {
    const r = await s.stop();
    assert.equal(r.code, 0, `exit status after SIGTERM: ${JSON.stringify(r)}\n${s.log}`);
  }
});

const post = (server, path, body) =>
  fetch(`${server.base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

async function expect400(r, pattern) {
  const text = await r.text();
  assert.equal(r.status, 400, text);
  const j = JSON.parse(text);
  assert.equal(j.error.type, 'BadRequestError', text);  // the project's (vLLM's) type for every 400 (api/errors.cpp)
  assert.equal(j.error.code, 400, text);
  assert.match(j.error.message, pattern, text);
  return j;
}

test('untrusted: a chat_template in the request is refused on every route', async () => {
  const refused = /--trust-request-chat-template/;
  const body = { model, messages, max_tokens: 2, chat_template: simple };
  const j = await expect400(await post(untrusted, '/v1/chat/completions', body), refused);
  assert.equal(j.error.param, 'chat_template');
  await expect400(await post(untrusted, '/invocations', body), refused);
  await expect400(await post(untrusted, '/v1/chat/completions', { ...body, stream: true }), refused);
  // Without one, the same request works; chat_template_kwargs stay allowed (data, not code).
  const { chat_template: _, ...plain } = body;
  let r = await post(untrusted, '/v1/chat/completions', { ...plain, chat_template_kwargs: { enable_thinking: false } });
  assert.equal(r.status, 200, await r.text());
  await untrusted.assertHealthy(1000);
});

test('trusted: a request template renders the prompt', async () => {
  const r = await post(trusted, '/v1/chat/completions', { model, messages, max_tokens: 2, chat_template: simple });
  const text = await r.text();
  assert.equal(r.status, 200, text);
  assert.equal(JSON.parse(text).choices.length, 1);
});

test('trusted: a hostile template ends at its budget while /health answers', async () => {
  // 2^25 macro calls: 16 s on the I/O thread before the budgets; now the deadline ends it.
  const slow = '{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(24) }}';
  const t0 = Date.now();
  const pending = post(trusted, '/v1/chat/completions', { model, messages, max_tokens: 2, chat_template: slow });
  await new Promise((r) => setTimeout(r, 100));
  const ms = await trusted.assertHealthy(1000, 'while a template renders');
  await expect400(await pending, /chat template exceeded its (step|time) budget/);
  assert.ok(Date.now() - t0 < 5000, `took ${Date.now() - t0} ms`);
  assert.ok(ms < 1000);
});

test('trusted: memory and nesting attacks get 400s and the server stays small', async () => {
  const attacks = [
    // 2^40 bytes by doubling; 16 x 2^60 overflowed the old size check of *
    ["{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}", /byte budget/],
    ["{{ ('x' * 16) * 1152921504606846976 }}", /byte budget/],
    ["{% set s = 'x' * 1000000 %}{{ s.replace('', s) }}", /byte budget/],
    ["{% set s = 'x' * 1000000 %}{% set l = [s] * 100000 %}{{ l }}", /byte budget/],
    // 1.5M nested lists crashed on destruction; a namespace containing itself crashed in str()
    ['{% set ns = namespace(x=[]) %}{% for i in range(1000) %}{% for j in range(1500) %}{% set ns.x = [ns.x] %}{% endfor %}{% endfor %}',
      /nested too deeply/],
    ['{% set ns = namespace() %}{% set ns.x = ns %}{{ ns }}', /nested too deeply/],
    ['{{ ' + 'not '.repeat(60000) + '1 }}', /nested too deeply/],
    // parsing is not budgeted: the source is capped (real templates are < 20 KB)
    ['{{ 1 }}' + ' '.repeat(300000), /longer than 262144 bytes/],
  ];
  for (const [tmpl, pattern] of attacks) {
    await expect400(await post(trusted, '/v1/chat/completions', { model, messages, max_tokens: 2, chat_template: tmpl }), pattern);
    await trusted.assertHealthy(1000, tmpl.slice(0, 60));
  }
  assert.ok(trusted.rssBytes() < 1.5 * GiB, `RSS ${trusted.rssBytes()}`);
  const r = await post(trusted, '/v1/chat/completions', { model, messages, max_tokens: 2, chat_template: simple });
  assert.equal(r.status, 200, await r.text());
});
