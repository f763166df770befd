// Structured output end to end (contracts checklist 44) with the official `openai` client
// against stories260K: response_format json_schema / json_object, structured_outputs and
// the legacy guided_* keys each give output that conforms, streamed and not; two kinds at
// once and constraints that do not compile are 400s in the OpenAI error shape; a structural
// tag's triggers start valid structures inside free text.
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
after(async () => assert.equal((await server.stop()).code, 0));

const schema = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 12 },
    age: { type: 'integer' },
    mood: { enum: ['happy', 'sad'] },
    tags: { type: 'array', items: { type: 'string', maxLength: 5 }, maxItems: 2 },
  },
  required: ['name', 'age', 'mood'],
};

// Checks a document against `schema` above (the keywords it uses), key order included.
function conforms(text) {
  const doc = JSON.parse(text);
  assert.equal(typeof doc, 'object');
  assert.ok(!Array.isArray(doc) && doc !== null);
  const keys = Object.keys(doc);
  const order = ['name', 'age', 'mood', 'tags'];
  assert.deepEqual(keys, order.filter((k) => k in doc), `keys ${keys}`);
  assert.equal(typeof doc.name, 'string');
  assert.ok([...doc.name].length <= 12);
  assert.ok(Number.isInteger(doc.age));
  assert.ok(['happy', 'sad'].includes(doc.mood));
  if ('tags' in doc) {
    assert.ok(Array.isArray(doc.tags) && doc.tags.length <= 2);
    for (const t of doc.tags) assert.ok(typeof t === 'string' && [...t].length <= 5);
  }
  return doc;
}

const post = (route, body) => fetch(`${server.base}${route}`, {
  method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
});

test('response_format json_schema: conforming JSON, streamed identically', async () => {
  const req = {
    model, messages, max_tokens: 200, temperature: 0,
    response_format: { type: 'json_schema', json_schema: { name: 'person', schema, strict: true } },
  };
  const r = await client.chat.completions.create(req);
  assert.equal(r.choices[0].finish_reason, 'stop');
  conforms(r.choices[0].message.content);

  const stream = await client.chat.completions.create({ ...req, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(text, r.choices[0].message.content);
});

test('structured_outputs.json and legacy guided_json, chat and completions, seeded sampling', async () => {
  for (const [route, body] of [
    ['/v1/chat/completions', { messages, structured_outputs: { json: schema } }],
    ['/v1/chat/completions', { messages, guided_json: schema }],
    ['/v1/completions', { prompt: 'Once upon a time', guided_json: JSON.stringify(schema) }],
    ['/invocations', { messages, response_format: { type: 'json_schema', json_schema: { name: 'p', schema } } }],
  ]) {
    const res = await post(route, { ...body, max_tokens: 200, temperature: 1.0, seed: 5, n: route === '/invocations' ? 1 : 2 });
    assert.equal(res.status, 200, route);
    const j = await res.json();
    for (const c of j.choices) {
      assert.equal(c.finish_reason, 'stop', `${route}: ${JSON.stringify(c)}`);
      conforms(c.message ? c.message.content : c.text);
    }
  }
});

test('json_object: any JSON object', async () => {
  const r = await client.chat.completions.create({
    model, messages, max_tokens: 200, temperature: 0, response_format: { type: 'json_object' },
  });
  const c = r.choices[0];
  if (c.finish_reason === 'stop') {
    const doc = JSON.parse(c.message.content);
    assert.ok(typeof doc === 'object' && !Array.isArray(doc) && doc !== null);
  } else {
    // Free members may run past max_tokens; what was written is still a JSON prefix.
    assert.equal(c.finish_reason, 'length');
    assert.match(c.message.content.trimStart(), /^\{/);
  }
});

test('choice, regex and grammar constrain the text', async () => {
  const choices = ['yes', 'no', 'a big dog'];
  for (const body of [{ guided_choice: choices }, { structured_outputs: { choice: choices } }]) {
    const r = await client.chat.completions.create({ model, messages, max_tokens: 20, temperature: 1, seed: 3, n: 3, ...body });
    for (const c of r.choices) assert.ok(choices.includes(c.message.content), c.message.content);
  }
  const re = await client.completions.create({
    model, prompt: 'Once upon a time', max_tokens: 40, temperature: 1, seed: 9,
    guided_regex: '[a-z]{2,6}@[a-z]{2,5}\\.(com|org)',
  });
  assert.match(re.choices[0].text, /^[a-z]{2,6}@[a-z]{2,5}\.(com|org)$/);
  const gr = await client.chat.completions.create({
    model, messages, max_tokens: 40, temperature: 1, seed: 4,
    structured_outputs: { grammar: 'root ::= "Tom is " num " years"\nnum ::= [1-9] [0-9]?' },
  });
  assert.match(gr.choices[0].message.content, /^Tom is [1-9][0-9]? years$/);

  // Streamed choice: the deltas add up to one of the choices.
  const p = parseSse(await (await post('/v1/chat/completions', {
    messages, max_tokens: 20, temperature: 0, stream: true, guided_choice: choices,
  })).text());
  assert.equal(p.at(-1), '[DONE]');
  const text = p.slice(0, -1).map((x) => JSON.parse(x).choices[0]?.delta?.content ?? '').join('');
  assert.ok(choices.includes(text), text);
});

test('two kinds at once, and constraints that do not compile, are 400s', async () => {
  for (const [body, param] of [
    [{ guided_regex: 'a+', guided_choice: ['a'] }, 'structured_outputs'],
    [{ response_format: { type: 'json_object' }, structured_outputs: { regex: 'a' } }, 'structured_outputs'],
    [{ guided_regex: '(a' }, 'structured_outputs'],
    [{ structured_outputs: { grammar: 'root ::= nowhere' } }, 'structured_outputs'],
    [{ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'strnig' } } } }, 'structured_outputs'],
    [{ guided_choice: [] }, 'guided_choice'],
  ]) {
    const res = await post('/v1/chat/completions', { messages, max_tokens: 5, ...body });
    assert.equal(res.status, 400, JSON.stringify(body));
    const j = await res.json();
    assert.equal(j.error.type, 'BadRequestError');
    assert.equal(j.error.param, param);
    assert.equal(typeof j.error.message, 'string');
  }
});

// Structural tag: free text where each "Lily" starts a structure ' (' + {"mood": ...} + ')'.
// stories260K writes "Lily" within its first sentences, so the structure does occur.
const moodTag = {
  triggers: ['Lily'],
  structures: [{
    begin: 'Lily (',
    schema: { type: 'object', properties: { mood: { enum: ['happy', 'sad'] } }, required: ['mood'] },
    end: ')',
  }],
};

// Checks that every trigger in `text` is followed by a whole structure (the last one may
// be cut when the reply ran out of tokens); returns the number of structures.
function tagged(text, finish) {
  let n = 0;
  for (let at = text.indexOf('Lily'); at >= 0; at = text.indexOf('Lily', at)) {
    const rest = text.slice(at + 'Lily'.length);
    const close = rest.indexOf(')');
    if (!rest.startsWith(' (') || close < 0) {
      assert.equal(finish, 'length', `unfinished structure in ${JSON.stringify(text)}`);
      assert.ok(!rest.includes('Lily'));
      return n;
    }
    const doc = JSON.parse(rest.slice(2, close));
    assert.deepEqual(Object.keys(doc), ['mood']);
    assert.ok(['happy', 'sad'].includes(doc.mood), rest);
    n += 1;
    at += 'Lily'.length + close + 1;
  }
  return n;
}

test('structural_tag: free text whose triggers start valid structures, streamed identically', async () => {
  const req = { model, messages, max_tokens: 200, temperature: 0, response_format: { type: 'structural_tag', ...moodTag } };
  const r = await client.chat.completions.create(req);
  const c = r.choices[0];
  assert.ok(tagged(c.message.content, c.finish_reason) >= 1, c.message.content);

  const stream = await client.chat.completions.create({ ...req, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(text, c.message.content);

  // structured_outputs.structural_tag as vLLM takes it (a JSON string), completions, n=2.
  const res = await post('/v1/completions', {
    prompt: 'Once upon a time', max_tokens: 120, temperature: 1, seed: 3, n: 2,
    structured_outputs: { structural_tag: JSON.stringify(moodTag) },
  });
  assert.equal(res.status, 200);
  let n = 0;
  for (const ch of (await res.json()).choices) n += tagged(ch.text, ch.finish_reason);
  assert.ok(n >= 1);
});

test('structural_tag: malformed tags are 400s naming the member, the format form a 501', async () => {
  for (const [tag, param] of [
    [{ ...moodTag, triggers: ['Li', 'Lily'] }, 'response_format.triggers[0]'],
    [{ ...moodTag, triggers: ['Tom'] }, 'response_format.structures[0].begin'],
    [{ triggers: ['Lily'], structures: [{ begin: 'Lily', end: ')' }] }, 'response_format.structures[0].schema'],
  ]) {
    const res = await post('/v1/chat/completions', { messages, max_tokens: 5, response_format: { type: 'structural_tag', ...tag } });
    assert.equal(res.status, 400, JSON.stringify(tag));
    const j = await res.json();
    assert.equal(j.error.type, 'BadRequestError');
    assert.equal(j.error.param, param);
  }
  const res = await post('/v1/chat/completions', {
    messages, max_tokens: 5, response_format: { type: 'structural_tag', format: { type: 'any_text' } },
  });
  assert.equal(res.status, 501);
  assert.equal((await res.json()).error.param, 'response_format');
});

const tools = [
  { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 10 } }, required: ['city'] } } },
  { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { enum: ['UTC', 'CET'] } }, required: ['zone'] } } },
];

test('named tool_choice forces that function (checklist 43), streamed the same', async () => {
  const req = { model, messages, tools, max_tokens: 60, temperature: 0, tool_choice: { type: 'function', function: { name: 'get_time' } } };
  const r = await client.chat.completions.create(req);
  const c = r.choices[0];
  assert.equal(c.finish_reason, 'stop');
  assert.equal(c.message.content, null);
  assert.equal(c.message.tool_calls.length, 1);
  const call = c.message.tool_calls[0];
  assert.equal(call.type, 'function');
  assert.equal(call.function.name, 'get_time');
  assert.match(call.id, /^chatcmpl-tool-[0-9a-f]{32}$/);
  const args = JSON.parse(call.function.arguments);
  assert.ok(['UTC', 'CET'].includes(args.zone));

  const p = parseSse(await (await post('/v1/chat/completions', { ...req, stream: true })).text());
  assert.equal(p.at(-1), '[DONE]');
  const deltas = p.slice(0, -1).map((x) => JSON.parse(x).choices[0]).filter(Boolean);
  const calls = deltas.flatMap((d) => d.delta?.tool_calls ?? []);
  assert.ok(calls.length >= 1);
  assert.equal(calls[0].index, 0);
  assert.equal(calls[0].function.name, 'get_time');
  assert.equal(calls.map((x) => x.function.arguments).join(''), call.function.arguments);
  assert.equal(deltas.at(-1).finish_reason, 'stop');
});

// stories260K, once in a list, tends to add items until max_tokens: the test asks for one
// call (parallel_tool_calls false); the list form is unit-tested (tests/api).
test('tool_choice required: a call of one of the offered functions', async () => {
  for (const seed of [1, 2, 3]) {
    const r = await client.chat.completions.create({
      model, messages, tools, max_tokens: 120, temperature: 1, seed, tool_choice: 'required', parallel_tool_calls: false,
    });
    const c = r.choices[0];
    assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(c));
    assert.equal(c.message.content, null);
    assert.equal(c.message.tool_calls.length, 1);
    for (const call of c.message.tool_calls) {
      const args = JSON.parse(call.function.arguments);
      if (call.function.name === 'get_weather') assert.equal(typeof args.city, 'string');
      else {
        assert.equal(call.function.name, 'get_time');
        assert.ok(['UTC', 'CET'].includes(args.zone));
      }
    }
  }
  const bad = await post('/v1/chat/completions', { messages, tools, tool_choice: 'required', guided_regex: 'a' });
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).error.param, 'tool_choice');
});
