#!/usr/bin/env node
// llama.cpp's side of tools/bench-decode (the peer of tests/model/bench_decode.cpp), via
// node-llama-cpp's prebuilt llama.cpp (installed by tools/bench-decode into
// tools/bench-decode.d/). Loads MODEL fully offloaded on the Vulkan build (or on the CPU
// build with --cpu), warms up (one full untimed run: pipelines compiled, buffers
// allocated), then times one prefill of N_PROMPT fixed token ids (evaluated together,
// logits of the last one sampled greedily) and N_GEN greedy decode steps (one token each).
// Prints one JSON line in bench_decode's shape.
//   node tools/bench-decode-peer.mjs MODEL [N_PROMPT=128] [N_GEN=64] [--cpu] [--threads N]
//        [--streams 1,4,16,64]
// (--threads: llama.cpp's CPU threads; default one per core.)
// --streams: aggregate decode tokens/s of S sequences decoding together, as bench_decode's
// --streams measures it: one context of S sequences, each prefilled with the same 16 ids
// bench_decode gives that stream (untimed, concurrently), a warm-up of max(2, N_GEN/4)
// steps, then N_GEN timed steps in which every sequence evaluates one greedy token; the S
// evaluations of a step are issued together, so node-llama-cpp's batching puts them in one
// llama_decode batch. tok/s = S * N_GEN / time.
// Recent llama.cpp skips CPU-type Vulkan devices (lavapipe) unless GGML_VK_VISIBLE_DEVICES
// is set; this script sets it to 0 when unset so lavapipe is used on a machine without GPU.
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const depsDir = process.env.BENCH_DECODE_DEPS ?? path.join(here, "bench-decode.d");

const args = [];
let cpu = false;
let threads = 0;
let streams = [];
for (let i = 2; i < process.argv.length; ++i) {
  const a = process.argv[i];
  if (a === "--cpu") cpu = true;
  else if (a === "--threads") threads = Number(process.argv[++i]);
  else if (a === "--streams") streams = process.argv[++i].split(",").map((n) => Math.max(1, Number(n) | 0));
  else args.push(a);
}
if (args.length < 1) {
  console.error("usage: bench-decode-peer.mjs MODEL [N_PROMPT=128] [N_GEN=64] [--cpu] [--threads N]");
  process.exit(2);
}
const modelPath = path.resolve(args[0]);
const nPrompt = args.length > 1 ? Number(args[1]) : 128;
const nGen = args.length > 2 ? Number(args[2]) : 64;
if (!cpu && process.env.GGML_VK_VISIBLE_DEVICES === undefined) process.env.GGML_VK_VISIBLE_DEVICES = "0";

const require = createRequire(path.join(depsDir, "package.json"));
const { getLlama, LlamaLogLevel } = await import(pathToFileURL(require.resolve("node-llama-cpp")).href);

// Same id sequence as tests/model/bench_decode.cpp's prompt_ids().
function promptIds(n, vocab) {
  const ids = [];
  for (let i = 0; i < n; ++i) ids.push(3 + ((i * 7919 + 13) % (vocab - 3)));
  return ids;
}

const llama = await getLlama({
  gpu: cpu ? false : "vulkan",
  build: "never", // prebuilt binaries only: never fall back to compiling llama.cpp
  logLevel: LlamaLogLevel.warn,
  progressLogs: false,
});
if (!cpu && llama.gpu !== "vulkan") throw new Error(`node-llama-cpp loaded gpu=${llama.gpu}, not vulkan`);
const deviceNames = cpu ? [] : await llama.getGpuDeviceNames();
if (!cpu && deviceNames.length === 0) throw new Error("llama.cpp reports no Vulkan device");

const model = await llama.loadModel({ modelPath, gpuLayers: cpu ? 0 : "max" });
// n_vocab as bench_decode sees it: the token embedding's row count.
const embd = model.fileInfo.tensorInfo?.find((t) => t.name === "token_embd.weight");
const vocab = Number(embd?.dimensions?.[1] ?? model.fileInfo.metadata?.tokenizer?.ggml?.tokens?.length);
if (!(vocab > 3)) throw new Error("cannot determine n_vocab from the GGUF file");
const context = await model.createContext({
  contextSize: Math.max(256, nPrompt + nGen + 16),
  batchSize: Math.max(nPrompt, 1),
  sequences: 1,
  // One thread per core (node-llama-cpp's default may exceed the core count, which makes
  // llama.cpp's spinning CPU threads fight each other on a 2-core machine).
  threads: threads > 0 ? threads : os.availableParallelism(),
});
const seq = context.getSequence();
const ids = promptIds(nPrompt, vocab);

const greedy = { generateNext: { token: true, options: { temperature: 0 } } };

async function runOnce() {
  await seq.clearHistory();
  const t0 = performance.now();
  // Prefill: all n_prompt ids in one batch, logits only for the last; greedy next token.
  const out = await seq.controlledEvaluate(
    ids.map((id, i) => (i === ids.length - 1 ? [id, greedy] : id)),
  );
  let next = out[ids.length - 1]?.next?.token;
  if (next == null) throw new Error("prefill produced no token");
  const t1 = performance.now();
  const gen = [];
  for (let i = 0; i < nGen; ++i) {
    const o = await seq.controlledEvaluate([[next, greedy]]);
    next = o[0]?.next?.token;
    if (next == null) throw new Error(`decode step ${i} produced no token`);
    gen.push(next);
  }
  const t2 = performance.now();
  return { prefill_s: (t1 - t0) / 1e3, decode_s: (t2 - t1) / 1e3, gen };
}

await runOnce(); // warm-up
const t = await runOnce();
const result = {
  engine: cpu ? "llama.cpp-cpu" : "llama.cpp-vulkan",
  device: cpu ? "cpu" : deviceNames.join(", "),
  n_vocab: vocab,
  n_prompt: nPrompt,
  n_gen: nGen,
  prefill_tok_s: Number((nPrompt / t.prefill_s).toFixed(3)),
  decode_tok_s: Number((nGen / t.decode_s).toFixed(3)),
  threads: context.currentThreads,
  gpu_layers: model.gpuLayers,
  llama_cpp: llama.llamaCppRelease.release,
};
if (process.env.BENCH_DECODE_TOKENS) result.tokens = t.gen;
await context.dispose();

// Aggregate decode of S concurrent sequences (see --streams above).
const kStreamPrompt = 16;
async function streamsTokS(pool, S, steps) {
  const seqs = pool.slice(0, S);
  await Promise.all(seqs.map((q) => q.clearHistory()));
  const prompt = (s) => {
    const out = [];
    for (let i = 0; i < kStreamPrompt; ++i) out.push(3 + ((s * 131 + i * 7919 + 13) % (vocab - 3)));
    return out;
  };
  const prefilled = await Promise.all(
    seqs.map((q, s) => q.controlledEvaluate(prompt(s).map((id, i) => (i === kStreamPrompt - 1 ? [id, greedy] : id)))),
  );
  const next = prefilled.map((o) => o[kStreamPrompt - 1]?.next?.token);
  if (next.some((x) => x == null)) throw new Error("stream prefill produced no token");
  const t0 = performance.now();
  for (let i = 0; i < steps; ++i) {
    const outs = await Promise.all(seqs.map((q, s) => q.controlledEvaluate([[next[s], greedy]])));
    outs.forEach((o, s) => {
      next[s] = o[0]?.next?.token;
      if (next[s] == null) throw new Error(`stream ${s} step ${i} produced no token`);
    });
  }
  const dt = (performance.now() - t0) / 1e3;
  return (S * steps) / dt;
}
if (streams.length > 0) {
  const maxS = Math.max(...streams);
  const sctx = await model.createContext({
    contextSize: kStreamPrompt + nGen + 16,
    batchSize: Math.max(maxS * kStreamPrompt, 16),
    sequences: maxS,
    threads: threads > 0 ? threads : os.availableParallelism(),
  });
  const pool = [];
  for (let s = 0; s < maxS; ++s) pool.push(sctx.getSequence());
  result.streams = [];
  for (const S of streams) {
    await streamsTokS(pool, S, Math.max(2, Math.floor(nGen / 4))); // warm-up: this batch shape
    result.streams.push({ n: S, tok_s: Number((await streamsTokS(pool, S, nGen)).toFixed(3)) });
  }
  await sctx.dispose();
}
console.log(JSON.stringify(result));
await model.dispose();
await llama.dispose();
