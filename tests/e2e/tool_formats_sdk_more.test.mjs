// Tool-call formats end to end through the official `openai` client, continued (#24, see
// lib/tool_formats.mjs): DeepSeek V3.1 and R1, GLM 4.6, Kimi K2 (its own id), Granite 3.3,
// Gemma 4, MiniMax-M2, Seed-OSS and LFM2.5, each forced to write one call as its models do;
// and --strict-tools holding a pythonic call to the schema.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runFamilies, sharedTemplate, repoTemplate, fixture, OpenAI } from './lib/tool_formats.mjs';
import { startServer } from './lib/server.mjs';

const families = [
  { name: 'DeepSeek V3.1', template: sharedTemplate('deepseek-ai-DeepSeek-V3.1.jinja'),
    reply: '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris", "days": 3}'
      + '<｜tool▁call▁end｜><｜tool▁calls▁end｜>' },
  { name: 'DeepSeek R1', template: sharedTemplate('deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja'),
    reply: '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n'
      + '{"city": "Paris", "days": 3}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>' },
  { name: 'GLM 4.6', template: sharedTemplate('GLM-4.6.jinja'),
    reply: '<think>Need the weather.</think>\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n'
      + '<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>', reasoning: 'Need the weather.' },
  { name: 'Kimi K2', template: repoTemplate('moonshotai-Kimi-K2.jinja'),
    reply: '<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>'
      + '{"city": "Paris", "days": 3}<|tool_call_end|><|tool_calls_section_end|>', id: 'functions.get_weather:0' },
  { name: 'Granite 3.3', template: sharedTemplate('ibm-granite-granite-3.3-2B-Instruct.jinja'),
    reply: '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}]' },
  { name: 'Gemma 4', template: sharedTemplate('google-gemma-4-31B-it.jinja'),
    reply: '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>' },
  // MiniMax-M2's generation prompt opens <think>, and a constraint starts after the reasoning
  // ends, which a tiny model never writes: the server runs with --reasoning off.
  { name: 'MiniMax-M2', template: sharedTemplate('MiniMax-M2.jinja'), args: ['--reasoning', 'off'],
    reply: '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n'
      + '<parameter name="days">3</parameter>\n</invoke>\n</minimax:tool_call>' },
  { name: 'Seed-OSS', template: repoTemplate('ByteDance-Seed-OSS.jinja'),
    reply: '<seed:think>Need the weather.</seed:think><seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n'
      + '<parameter=days>3</parameter>\n</function>\n</seed:tool_call>', reasoning: 'Need the weather.' },
  { name: 'LFM2.5', template: repoTemplate('LFM2.5-8B-A1B.jinja'),
    reply: '<|tool_call_start|>[get_weather(city="Paris", days=3)]<|tool_call_end|>' },
];

runFamilies(families);

// --strict-tools in a format whose arguments are not JSON (pythonic: a whole-reply grammar):
// the first token pushed to "[" by logit_bias opens a call list, and from there the grammar
// holds the model to one call of get_weather with the schema's values (an enum city, an
// integer days), which the parser takes as the call.
test('--strict-tools: a pythonic call the model starts is held to the schema', async () => {
  const server = await startServer(['--chat-template', fixture('pythonic_tools.jinja'), '--strict-tools']);
  try {
    const tok = await (await fetch(`${server.base}/tokenize`, { method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'stories260K', prompt: '[', add_special_tokens: false }) })).json();
    const bracket = tok.tokens[tok.tokens.length - 1];
    const client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: 'unused', maxRetries: 0 });
    const strictTools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object',
      properties: { city: { type: 'string', enum: ['Paris', 'Lyon'] }, days: { type: 'integer' } }, required: ['city'] } } }];
    const j = await client.chat.completions.create({ model: 'stories260K', messages: [{ role: 'user', content: 'Weather?' }],
      tools: strictTools, parallel_tool_calls: false, max_tokens: 60, temperature: 0, logit_bias: { [bracket]: 100 } });
    const m = j.choices[0].message;
    assert.equal(m.tool_calls.length, 1, JSON.stringify(j));
    assert.equal(m.tool_calls[0].function.name, 'get_weather');
    const args = JSON.parse(m.tool_calls[0].function.arguments);
    assert.ok(['Paris', 'Lyon'].includes(args.city), m.tool_calls[0].function.arguments);
    if ('days' in args) assert.ok(Number.isInteger(args.days));
    assert.deepEqual(Object.keys(args).filter((k) => k !== 'city' && k !== 'days'), []);
  } finally {
    assert.equal((await server.stop()).code, 0, server.log);
  }
});
