// The forced tool-call families of tool_formats_sdk*.test.mjs (#24): each family's server
// (--chat-template; the format is detected from it) serving the bundled stories260K, forced
// by a regex constraint to write one get_weather(Paris, 3) call exactly as the family's
// models do; the reply must come back through the official openai client as the same
// OpenAI tool call streamed and not, with finish_reason tool_calls.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, skip } from './server.mjs';

export let OpenAI;
try {
  ({ default: OpenAI } = await import('openai'));
} catch (e) {
  skip(`the openai npm package is not installed (npm ci in tests/e2e): ${e.message}`);
}

const here = path.dirname(fileURLToPath(import.meta.url));
const shared = process.env.VKS_SHARED ? path.join(process.env.VKS_SHARED, 'models', 'chat-templates') : '';
// A shared chat template (skipped, exit 77, without VKS_SHARED).
export const sharedTemplate = (name) => {
  const p = path.join(shared, name);
  if (!shared || !existsSync(p)) skip(`shared chat template ${name} is not available (VKS_SHARED)`);
  return p;
};
// One of the repository's templates (tests/text/jinja/templates).
export const repoTemplate = (name) => path.join(here, '..', '..', 'text', 'jinja', 'templates', name);
export const fixture = (name) => path.join(here, '..', 'fixtures', name);
export const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// Streams `body` through the openai client; returns the concatenated content and
// reasoning_content deltas, the tool-call deltas, the finish_reason and the usage.
export async function collectStream(client, body) {
  const out = { content: '', reasoning: '', calls: [], finish: null, usage: null };
  const stream = await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
  for await (const chunk of stream) {
    if (chunk.usage) out.usage = chunk.usage;
    const ch = chunk.choices[0];
    if (!ch) continue;
    out.content += ch.delta?.content ?? '';
    out.reasoning += ch.delta?.reasoning_content ?? '';
    out.calls.push(...(ch.delta?.tool_calls ?? []));
    out.finish = ch.finish_reason ?? out.finish;
  }
  return out;
}

const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather of a city.', parameters: { type: 'object',
  properties: { city: { type: 'string' }, days: { type: 'integer' } }, required: ['city'] } } }];
// families: { name, template, reply (what the model writes), id (the model's own, when the
// format carries one), reasoning (expected reasoning_content), args (more server options) }.
export function runFamilies(families) {
  const servers = [];
  after(async () => {
    for (const s of servers) assert.equal((await s.stop()).code, 0, s.log);
  });

  for (const f of families) {
    test(`${f.name}: a forced call comes back as the same tool call, streamed and not`, async () => {
      const server = await startServer(['--chat-template', f.template, ...(f.args ?? [])]);
      servers.push(server);
      const client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: 'unused', maxRetries: 0 });
      const body = { model: 'stories260K', messages: [{ role: 'user', content: 'Weather in Paris for 3 days?' }], tools,
        max_tokens: 300, temperature: 0, guided_regex: escape(f.reply) };

      const j = await client.chat.completions.create(body);
      const c = j.choices[0];
      assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(j));
      assert.equal(c.message.content, null);
      assert.equal(c.message.tool_calls.length, 1);
      const t = c.message.tool_calls[0];
      assert.equal(t.type, 'function');
      assert.equal(t.function.name, 'get_weather');
      assert.equal(t.function.arguments, '{"city":"Paris","days":3}');
      if (f.id) assert.equal(t.id, f.id);
      else assert.match(t.id, /^chatcmpl-tool-[0-9a-f]{32}$/);
      if (f.reasoning) assert.equal(c.message.reasoning_content, f.reasoning);

      const stream = await client.chat.completions.create({ ...body, stream: true });
      const calls = [];
      let content = '';
      let finish = null;
      for await (const chunk of stream) {
        const ch = chunk.choices[0];
        if (!ch) continue;
        calls.push(...(ch.delta?.tool_calls ?? []));
        content += ch.delta?.content ?? '';
        finish = ch.finish_reason ?? finish;
      }
      assert.equal(calls.length, 1);
      if (f.id) assert.equal(calls[0].id, f.id);
      else assert.match(calls[0].id, /^chatcmpl-tool-[0-9a-f]{32}$/);
      assert.equal(calls[0].function.name, 'get_weather');
      assert.equal(calls[0].function.arguments, t.function.arguments);
      assert.equal(content.trim(), '');
      assert.equal(finish, 'tool_calls');
      assert.equal((await server.stop()).code, 0, server.log);
    });
  }
}
