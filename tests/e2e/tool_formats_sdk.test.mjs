// More tool-call formats end to end through the official `openai` client (#24): for each
// family, vkserve runs with that family's chat template (--chat-template; the format is
// detected from it) and the bundled stories260K, forced by a regex constraint to write
// one call exactly as the family's models do (lib/tool_formats.mjs): harmony (gpt-oss),
// Mistral v13 with the model's [CALL_ID], pythonic (Llama 3.2 / 4 style), Functionary v3.2
// and v3.1, Hermes 3 and Llama 3.1's JSON calls; the other families are in tool_formats_sdk_more.test.mjs (each file stays within its
// e2e time limit). The shared templates come from VKS_SHARED (skipped, exit 77, without it).
import { runFamilies, sharedTemplate, repoTemplate, fixture } from './lib/tool_formats.mjs';

// Each family: its template, what its model writes for get_weather(Paris, 3), the id
// expected (the model's own where the format carries one).
const families = [
  { name: 'harmony (gpt-oss)', template: sharedTemplate('openai-gpt-oss-120b.jinja'),
    reply: '<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary '
      + 'to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris", "days": 3}<|call|>',
    reasoning: 'Need the weather.' },
  { name: 'Mistral v13 [CALL_ID]', template: sharedTemplate('Mistral-Small-3.2-24B-Instruct-2506.jinja'),
    reply: '[TOOL_CALLS]get_weather[CALL_ID]Ab3dE6gH9[ARGS]{"city": "Paris", "days": 3}', id: 'Ab3dE6gH9' },
  { name: 'pythonic', template: fixture('pythonic_tools.jinja'),
    reply: '[get_weather(city="Paris", days=3)]' },
  { name: 'Functionary v3.2', template: sharedTemplate('meetkai-functionary-medium-v3.2.jinja'),
    reply: 'get_weather\n{"city": "Paris", "days": 3}' },
  { name: 'Functionary v3.1', template: repoTemplate('meetkai-functionary-medium-v3.1.jinja'),
    reply: '<function=get_weather>{"city": "Paris", "days": 3}</function>' },
  { name: 'Hermes 3', template: sharedTemplate('NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja'),
    reply: '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call>' },
  { name: 'Llama 3.1 JSON', template: sharedTemplate('meta-llama-Llama-3.1-8B-Instruct.jinja'),
    reply: '{"name": "get_weather", "parameters": {"city": "Paris", "days": 3}}' },
];

runFamilies(families);
