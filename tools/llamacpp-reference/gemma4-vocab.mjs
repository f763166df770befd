#!/usr/bin/env node
// Writes a small hand-made Gemma 4 style vocabulary GGUF (tokenizer.ggml.model = "gemma4":
// control tokens, <0xNN> byte tokens, raw UTF-8 pieces with '▁' for spaces, merges, newline-run
// tokens without merges) and llama.cpp's token ids for it, as the outside reference of
// tests/text/tokenizer/test_gemma4.cpp. Writes OUT (the GGUF; general.architecture "llama"
// with just enough hyperparameters for llama.cpp's vocab-only load), OUT.inp/OUT.out
// (test-tokenizer-0 format: no BOS, no special parsing) and OUT.special.inp/.out (special
// tokens parsed), and prints llama.cpp's BOS/EOG facts. Never run by CI.
//   node gemma4-vocab.mjs OUT      (node-llama-cpp installed in this folder: npm ci)
import fs from "node:fs";
import { getLlama, LlamaLogLevel } from "node-llama-cpp";

const SP = "\u2581";
// Types as llama.cpp's converter writes Gemma 4 (conversion/gemma.py): specials control, the
// "visible" tool tokens user-defined (<|tool_response> is one; llama.cpp's EOG rule makes it
// control again), byte tokens byte.
const control = ["<pad>", "<eos>", "<bos>", "<unk>", "<|turn>", "<turn|>", "<|tool_response>", "</s>",
                 "<|tool_call>"];
const userDefined = new Set(["<|tool_response>", "<|tool_call>"]);
const normal = [SP, "h", "e", "l", "o", "w", "r", "d", "é", "\t", "\n", "\n\n", "\n\n\n\n",
                "he", "ll", "hell", "hello", SP + "w", "or", SP + "wor", "ld", SP + "world",
                SP + SP, SP + "h", SP + "hello", "é" + SP];
const merges = ["h e", "l l", "he ll", "hell o", SP + " w", "o r", SP + "w or", "l d", SP + "wor ld",
                SP + " " + SP, SP + " h", SP + " hello", "é " + SP];

const tokens = [], types = [];
for (const c of control) { tokens.push(c); types.push(c === "<unk>" ? 2 : userDefined.has(c) ? 4 : 3); }
for (let b = 0; b < 256; ++b) { tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`); types.push(6); }
for (const n of normal) { tokens.push(n); types.push(1); }

// GGUF v3 writer: metadata only (a vocab-only file has no tensors).
function gguf(kv) {
  const parts = [];
  const u32 = (v) => { const b = Buffer.alloc(4); b.writeUInt32LE(v); parts.push(b); };
  const u64 = (v) => { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(v)); parts.push(b); };
  const f32 = (v) => { const b = Buffer.alloc(4); b.writeFloatLE(v); parts.push(b); };
  const str = (s) => { const b = Buffer.from(s, "utf8"); u64(b.length); parts.push(b); };
  parts.push(Buffer.from("GGUF"));
  u32(3); u64(0); u64(kv.length);
  for (const [key, type, value] of kv) {
    str(key);
    if (type === "str") { u32(8); str(value); }
    else if (type === "u32") { u32(4); u32(value); }
    else if (type === "f32") { u32(6); f32(value); }
    else if (type === "bool") { u32(7); parts.push(Buffer.from([value ? 1 : 0])); }
    else if (type === "str[]") { u32(9); u32(8); u64(value.length); value.forEach(str); }
    else if (type === "i32[]") {
      u32(9); u32(5); u64(value.length);
      for (const v of value) { const b = Buffer.alloc(4); b.writeInt32LE(v); parts.push(b); }
    } else throw new Error(type);
  }
  return Buffer.concat(parts);
}

const out = process.argv[2];
if (!out) throw new Error("usage: gemma4-vocab.mjs OUT.gguf");
fs.writeFileSync(out, gguf([
  ["general.architecture", "str", "llama"],
  ["general.name", "gemma4-mini (hand-made tokenizer test vocabulary)"],
  ["llama.context_length", "u32", 64],
  ["llama.embedding_length", "u32", 8],
  ["llama.block_count", "u32", 1],
  ["llama.feed_forward_length", "u32", 16],
  ["llama.attention.head_count", "u32", 1],
  ["llama.attention.layer_norm_rms_epsilon", "f32", 1e-6],
  ["tokenizer.ggml.model", "str", "gemma4"],
  ["tokenizer.ggml.pre", "str", "gpt-2"],  // ignored: model gemma4 always uses pre gemma4
  ["tokenizer.ggml.tokens", "str[]", tokens],
  ["tokenizer.ggml.token_type", "i32[]", types],
  ["tokenizer.ggml.merges", "str[]", merges],
  ["tokenizer.ggml.bos_token_id", "u32", 2],
  ["tokenizer.ggml.eos_token_id", "u32", 1],
  ["tokenizer.ggml.unknown_token_id", "u32", 3],
  ["tokenizer.ggml.padding_token_id", "u32", 0],
  ["tokenizer.ggml.add_bos_token", "bool", false],  // llama.cpp turns it on for gemma4
].map((e) => e.length === 2 ? [e[0], "str", e[1]] : e)));

const plain = [
  "hello world", "hello  world", " hello", "  hello world ", "hello   world", "hello\nworld",
  "hello\n\nworld", "\n", "\n\n", "\n\n\n", "\n\n\n\n", "\n\n\n\n\n", "hello\n \nworld", "héllo", "hé world",
  "é é", "z", "日本", "🙂", "hello\tworld", "\t\t", "a\r\nb", "</s>", "<eos>", "<turn|>", " ", "  ",
  "\u2581hello", "hello world\n\n\n\nhello world", "<|tool_call>hello<|tool_response>",
];
const special = [
  "<|turn>hello<turn|>", "<bos>hello", "hello</s>", "<|tool_response>x", "<eos>\n\n<eos>",
  " <turn|> hello", "hello <|turn>\n\nworld", "<|tool_call>hello<|tool_response>",
];

const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
const model = await llama.loadModel({ modelPath: out, vocabOnly: true });
const sep = "\n__ggml_vocab_test__\n";
function write(suffix, inputs, parseSpecial) {
  fs.writeFileSync(out + suffix + ".inp", inputs.map((s) => s + sep).join(""));
  fs.writeFileSync(out + suffix + ".out", inputs.map((s) => model.tokenize(s, parseSpecial).join(" ") + "\n").join(""));
}
write("", plain, false);
write(".special", special, true);
const eog = tokens.map((_, i) => i).filter((i) => model.isEogToken(i));
console.log(JSON.stringify({ bos: model.tokens.bos, eos: model.tokens.eos,
                             shouldPrependBosToken: model.tokens.shouldPrependBosToken, eog }));
await model.dispose();
