// Hostile structured-output constraints (issue #17) against the real binary, under an
// address-space limit: a regex whose nested repetitions explode, a regex of many big
// repetitions, and an ambiguous grammar whose stacks double with every token. Each gets a
// 400 or an error for that request alone; a plain request sent alongside completes,
// /health answers within a second throughout, and the server is still up at the end.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, parseSse } from './lib/server.mjs';

const server = await startServer([], { memoryLimitBytes: 8 * 1024 ** 3 });
after(async () => assert.equal((await server.stop()).code, 0));

const post = (route, body) => fetch(`${server.base}${route}`, {
  method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
});

// Runs `work` while probing /health every 100 ms; every probe must answer within 1 s.
async function whileHealthy(work) {
  let done = false;
  const probes = (async () => {
    let n = 0;
    while (!done) {
      await server.assertHealthy(1000, `probe ${n++}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    return n;
  })();
  try {
    return await work();
  } finally {
    done = true;
    assert.ok((await probes) >= 1);
  }
}

// A plain completion alongside the hostile one: it must complete normally.
async function plainCompletion() {
  const res = await post('/v1/completions', { prompt: 'Once upon a time', max_tokens: 16, temperature: 0 });
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.equal(body.choices[0].finish_reason, 'length');
  assert.ok(body.choices[0].text.length > 0);
}

async function expect400(extra, pattern) {
  const res = await post('/v1/completions', { prompt: 'Once upon a time', max_tokens: 16, ...extra });
  const body = await res.json();
  assert.equal(res.status, 400, JSON.stringify(body));
  assert.equal(body.error.type, 'BadRequestError');  // vLLM's type for a 400
  assert.equal(body.error.param, 'structured_outputs');
  assert.match(body.error.message, pattern);
}

test('nested repetitions ((a?){1000}){1000}: 400 naming the budget', async () => {
  await whileHealthy(() => Promise.all([
    expect400({ guided_regex: '((a?){1000}){1000}' }, /expands to over \d+ elements/),
    plainCompletion(),
  ]));
});

test('a{0,10000} repeated over 2 KB: 400 naming the element budget', async () => {
  await whileHealthy(() => Promise.all([
    expect400({ guided_regex: 'a{0,10000}'.repeat(200) }, /budget of \d+ rule elements/),
    plainCompletion(),
  ]));
});

test('groups nested 10^5 deep: 400', async () => {
  await expect400({ guided_regex: '('.repeat(100000) + 'a' + ')'.repeat(100000) }, /nested too deeply/);
});

// Only runs of "a" are allowed for 40 characters, and every "a" doubles the stacks.
const ambiguous = 'root ::= "a" root b | "a" root c | "a"{40} "x"\nb ::= "b"\nc ::= "c"\n';

test('an ambiguous grammar fails its request alone (not streamed)', async () => {
  await whileHealthy(() => Promise.all([
    (async () => {
      const res = await post('/v1/completions', {
        prompt: 'Once upon a time', max_tokens: 60, temperature: 0, guided_grammar: ambiguous,
      });
      const body = await res.json();
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.match(body.error.message, /too ambiguous: over \d+ live stacks/);
    })(),
    plainCompletion(),
  ]));
});

test('an ambiguous grammar fails its request alone (streamed)', async () => {
  await whileHealthy(() => Promise.all([
    (async () => {
      const res = await post('/v1/completions', {
        prompt: 'Once upon a time', max_tokens: 60, temperature: 0, stream: true, guided_grammar: ambiguous,
      });
      const events = parseSse(await res.text());
      const errors = events.filter((e) => e !== '[DONE]' && JSON.parse(e).error);
      assert.equal(errors.length, 1, JSON.stringify(events));
      assert.match(JSON.parse(errors[0]).error.message, /too ambiguous/);
    })(),
    plainCompletion(),
  ]));
});

test('the server is still up and serving', async () => {
  await server.assertHealthy(1000, 'at the end');
  await plainCompletion();
  assert.equal(server.proc.exitCode, null);
});
