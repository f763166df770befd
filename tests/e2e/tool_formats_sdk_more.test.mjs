// Tool-call formats end to end through the official `openai` client, continued (#24, see
// lib/tool_formats.mjs): DeepSeek V3.1 and R1, GLM 4.6, Kimi K2 (its own id), Granite 3.3,
// Gemma 4, MiniMax-M2, Seed-OSS and LFM2.5, each forced to write one call as its models do.
import { runFamilies, sharedTemplate, repoTemplate } from './lib/tool_formats.mjs';

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
