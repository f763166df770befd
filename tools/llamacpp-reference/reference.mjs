#!/usr/bin/env node
// llama.cpp's next-token distributions for a GGUF file, as the outside reference of vkserve's
// weight-type tests (tests/model/llamacpp_reference.cpp). Loads MODEL with node-llama-cpp's
// prebuilt CPU build of llama.cpp (getLlama({gpu: false, build: "never"}): nothing is
// compiled), evaluates TOKENS teacher-forced in one controlledEvaluate call with the raw
// logits requested at every position, and greedily continues for GEN tokens one at a time.
// Writes JSON: per position the top-1 id, the gap between the two best logprobs and the TOP
// best (id, logprob) pairs (log-softmax of llama.cpp's raw logits, computed here in f64);
// then the greedy continuation ids (and llama.cpp's top-2 gap at each). --spec embeds the
// JSON object that says how MODEL was made, so the test can regenerate it. --kv-type q8_0
// sets llama.cpp's K and V cache types (experimentalKvCacheKeyType/ValueType, flash
// attention on: llama.cpp needs it for a quantized V cache); default f16.
//   node reference.mjs MODEL --tokens 1,2,3 [--top 20] [--gen 16] [--threads N] [--spec JSON]
//                            [--kv-type f16|q8_0]
// Install the dependency first (tools/llamacpp-reference/regen does): npm ci in this folder.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { getLlama, LlamaLogLevel } from "node-llama-cpp";

const here = path.dirname(fileURLToPath(import.meta.url));
const nodeLlamaCppVersion = JSON.parse(
  fs.readFileSync(path.join(here, "node_modules/node-llama-cpp/package.json"), "utf8")).version;

function parseArgs(argv) {
  const o = { model: null, tokens: null, top: 20, gen: 16, threads: 1, spec: null, kvType: "f16" };
  for (let i = 2; i < argv.length; ++i) {
    const a = argv[i];
    if (a === "--tokens") o.tokens = argv[++i].split(",").map(Number);
    else if (a === "--top") o.top = Number(argv[++i]);
    else if (a === "--gen") o.gen = Number(argv[++i]);
    else if (a === "--threads") o.threads = Number(argv[++i]);
    else if (a === "--spec") o.spec = JSON.parse(argv[++i]);
    else if (a === "--kv-type") o.kvType = argv[++i];
    else if (!o.model) o.model = a;
    else throw new Error(`unexpected argument ${a}`);
  }
  if (!o.model || !o.tokens || o.tokens.some((t) => !Number.isInteger(t) || t < 0))
    throw new Error("usage: reference.mjs MODEL --tokens ID,ID,... [--top N] [--gen N] [--threads N] [--spec JSON] " +
                    "[--kv-type f16|q8_0]");
  if (o.kvType !== "f16" && o.kvType !== "q8_0") throw new Error(`--kv-type must be f16 or q8_0, not ${o.kvType}`);
  return o;
}

// The log-softmax of a full logits map: the TOP best tokens (ties by lower id) and the
// logprob gap between the best two.
function summarize(logits, top) {
  const entries = [...logits.entries()];
  let max = -Infinity;
  for (const [, v] of entries) max = Math.max(max, v);
  let sum = 0;
  for (const [, v] of entries) sum += Math.exp(v - max);
  const lse = max + Math.log(sum);
  entries.sort((a, b) => b[1] - a[1] || a[0] - b[0]);
  const best = entries.slice(0, top).map(([id, v]) => [id, Number((v - lse).toFixed(6))]);
  return { n: entries.length, top1: entries[0][0], gap: Number((entries[0][1] - entries[1][1]).toFixed(6)), top: best };
}

const o = parseArgs(process.argv);
const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
const model = await llama.loadModel({ modelPath: path.resolve(o.model) });
const n = o.tokens.length + o.gen + 1;
const kv = o.kvType === "q8_0"
  ? { experimentalKvCacheKeyType: "Q8_0", experimentalKvCacheValueType: "Q8_0", flashAttention: true } : {};
const context = await model.createContext({ contextSize: Math.max(256, n), batchSize: Math.max(256, n),
  threads: o.threads, sequences: 1, ...kv });
const seq = context.getSequence();
const want = { generateNext: { logits: true } };
const out = await seq.controlledEvaluate(o.tokens.map((t) => [t, want]));
const positions = out.map((r, i) => {
  if (!r?.next?.logits) throw new Error(`no logits at position ${i}`);
  return summarize(r.next.logits, o.top);
});
// Greedy continuation: argmax of each step's logits (the lowest id among equal maxima).
// greedy_gap[i]: llama.cpp's logprob gap between the best two candidates for greedy[i].
const greedy = [], greedyGap = [];
let last = positions[positions.length - 1];
for (let i = 0; i < o.gen; ++i) {
  greedy.push(last.top1);
  greedyGap.push(last.gap);
  if (i + 1 === o.gen) break;
  const [r] = await seq.controlledEvaluate([[last.top1, want]]);
  last = summarize(r.next.logits, 1);
}
const result = {
  generator: `llama.cpp via node-llama-cpp ${nodeLlamaCppVersion} (prebuilt CPU build)` +
    (o.kvType === "f16" ? "" : `, ${o.kvType} K and V cache, flash attention`),
  spec: o.spec,
  model: path.basename(o.model),
  n_vocab: positions[0].n,
  tokens: o.tokens,
  positions: positions.map(({ n, ...p }) => p),
  greedy,
  greedy_gap: greedyGap,
};
process.stdout.write(JSON.stringify(result) + "\n");
await context.dispose();
await model.dispose();
await llama.dispose();
