// Peer for bench-tokenize: the same text encoded by the @huggingface/transformers npm
// tokenizer (transformers.js; JavaScript, single thread), timed the same way: one warm-up
// encode of the whole text, then --runs timed encodes (add_special_tokens=false), median.
// The BPE word cache is cleared before every timed run (vkserve keeps none), unless
// --keep-cache. Prints one JSON line like bench-tokenize:
//   {"tokenizer","bytes","tokens","best_s","median_s","mb_per_s"}  (MB = 1e6 bytes)
// transformers.js needs a tokenizer.json; it is written once from the source files under
// tools/bench-tokenize.d/models/<kind>/ (models are loaded from there only, no network):
//   --kind qwen2      --src DIR with vocab.json + merges.txt (Qwen2.5/Qwen3 byte-level BPE):
//                     NFC normalizer, Split(Qwen2 regex, Isolated) + ByteLevel(use_regex=false)
//                     pre-tokenizer, ByteLevel decoder, as Qwen2's published tokenizer.json.
//   --kind llama-spm  --src FILE.gguf (vocab-only GGUF: tokens, scores, token types): the
//                     Hugging Face Llama conversion of a SentencePiece BPE model (BPE with
//                     byte_fallback, merges ordered by the merged piece's score as
//                     transformers' SentencePieceExtractor does; normalizer Prepend "▁" +
//                     Replace " " -> "▁"; no pre-tokenizer).
// Usage: node tools/bench-tokenize-peer.mjs --kind qwen2|llama-spm --src PATH
//            [--text FILE] [--runs N] [--dump-ids FILE] [--keep-cache]
// Needs: npm install --prefix tools/bench-tokenize.d @huggingface/transformers
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const here = path.dirname(fileURLToPath(import.meta.url));
const depDir = path.join(here, 'bench-tokenize.d');
const require = createRequire(path.join(depDir, 'package.json'));
const { AutoTokenizer, env } = await import(require.resolve('@huggingface/transformers'));

function parseArgs(argv) {
  const a = { runs: 5, keepCache: false };
  for (let i = 0; i < argv.length; ++i) {
    const k = argv[i];
    const v = () => argv[++i];
    if (k === '--kind') a.kind = v();
    else if (k === '--src') a.src = v();
    else if (k === '--text') a.text = v();
    else if (k === '--runs') a.runs = parseInt(v(), 10);
    else if (k === '--dump-ids') a.dump = v();
    else if (k === '--keep-cache') a.keepCache = true;
    else throw new Error(`unknown argument ${k}`);
  }
  if (!a.kind || !a.src) throw new Error('need --kind qwen2|llama-spm and --src PATH');
  if (!a.text) a.text = path.join(process.env.VKS_SHARED ?? path.join(here, '..', '..', 'shared'),
                                  'models', 'corpora', 'war-and-peace.txt');
  return a;
}

// --- Qwen2 byte-level BPE from vocab.json + merges.txt ---------------------------------
const QWEN2_REGEX =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

function qwen2Json(dir) {
  const vocab = JSON.parse(fs.readFileSync(path.join(dir, 'vocab.json'), 'utf8'));
  const merges = fs.readFileSync(path.join(dir, 'merges.txt'), 'utf8').split('\n')
    .filter((l, i) => l.length > 0 && !(i === 0 && l.startsWith('#version')));
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false };
  return {
    tokenizer: {
      version: '1.0', truncation: null, padding: null, added_tokens: [],
      normalizer: { type: 'NFC' },
      pre_tokenizer: { type: 'Sequence', pretokenizers: [
        { type: 'Split', pattern: { Regex: QWEN2_REGEX }, behavior: 'Isolated', invert: false }, byteLevel] },
      post_processor: byteLevel,
      decoder: byteLevel,
      model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '',
               fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab, merges },
    },
    config: { tokenizer_class: 'Qwen2Tokenizer', model_max_length: 1e12, clean_up_tokenization_spaces: false },
  };
}

// --- Llama-2 SentencePiece from a vocab-only GGUF ----------------------------------------
function readGgufMeta(file) {
  const b = fs.readFileSync(file);
  let o = 0;
  const u32 = () => { const v = b.readUInt32LE(o); o += 4; return v; };
  const u64 = () => { const v = Number(b.readBigUInt64LE(o)); o += 8; return v; };
  const str = () => { const n = u64(); const s = b.toString('utf8', o, o + n); o += n; return s; };
  const scalar = (t) => {
    switch (t) {
      case 0: return b.readUInt8(o++);
      case 1: return b.readInt8(o++);
      case 2: { const v = b.readUInt16LE(o); o += 2; return v; }
      case 3: { const v = b.readInt16LE(o); o += 2; return v; }
      case 4: return u32();
      case 5: { const v = b.readInt32LE(o); o += 4; return v; }
      case 6: { const v = b.readFloatLE(o); o += 4; return v; }
      case 7: return b.readUInt8(o++) !== 0;
      case 8: return str();
      case 9: { const et = u32(); const n = u64(); const arr = new Array(n);
                for (let i = 0; i < n; ++i) arr[i] = scalar(et); return arr; }
      case 10: return u64();
      case 11: { const v = Number(b.readBigInt64LE(o)); o += 8; return v; }
      case 12: { const v = b.readDoubleLE(o); o += 8; return v; }
      default: throw new Error(`${file}: GGUF value type ${t}`);
    }
  };
  if (b.toString('latin1', 0, 4) !== 'GGUF') throw new Error(`${file}: not a GGUF file`);
  o = 4;
  const version = u32();
  if (version < 2) throw new Error(`${file}: GGUF v${version} unsupported`);
  u64();  // tensor count
  const nkv = u64();
  const kv = {};
  for (let i = 0; i < nkv; ++i) { const k = str(); kv[k] = scalar(u32()); }
  return kv;
}

function llamaSpmJson(gguf) {
  const kv = readGgufMeta(gguf);
  const tokens = kv['tokenizer.ggml.tokens'], scores = kv['tokenizer.ggml.scores'];
  const types = kv['tokenizer.ggml.token_type'] ?? [];
  if (kv['tokenizer.ggml.model'] !== 'llama' || !tokens || !scores) throw new Error(`${gguf}: not a SentencePiece vocab`);
  const vocab = {};
  tokens.forEach((t, i) => { vocab[t] = i; });
  // transformers' SentencePieceExtractor.extract(vocab_scores): for every piece, each split
  // into two pieces of the vocab (ordered by their ids), then all merges stably sorted by
  // the merged piece's score, highest first.
  const merges = [];
  tokens.forEach((piece, id) => {
    const cps = Array.from(piece);
    const local = [];
    for (let k = 1; k < cps.length; ++k) {
      const l = cps.slice(0, k).join(''), r = cps.slice(k).join('');
      if (l in vocab && r in vocab) local.push([l, r, scores[id]]);
    }
    local.sort((x, y) => (vocab[x[0]] - vocab[y[0]]) || (vocab[x[1]] - vocab[y[1]]));
    merges.push(...local);
  });
  merges.sort((x, y) => y[2] - x[2]);  // Array.prototype.sort is stable
  const id = (k, d) => kv[`tokenizer.ggml.${k}_token_id`] ?? d;
  const special = new Set([id('unknown', 0), id('bos', 1), id('eos', 2)]);
  const added = [];
  tokens.forEach((t, i) => {
    if (types[i] === 3 || special.has(i))  // control tokens
      added.push({ id: i, content: t, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  });
  return {
    tokenizer: {
      version: '1.0', truncation: null, padding: null, added_tokens: added,
      normalizer: { type: 'Sequence', normalizers: [
        { type: 'Prepend', prepend: '\u2581' },
        { type: 'Replace', pattern: { String: ' ' }, content: '\u2581' }] },
      pre_tokenizer: null,
      post_processor: null,
      decoder: { type: 'Sequence', decoders: [
        { type: 'Replace', pattern: { String: '\u2581' }, content: ' ' },
        { type: 'ByteFallback' }, { type: 'Fuse' }, { type: 'Strip', content: ' ', start: 1, stop: 0 }] },
      model: { type: 'BPE', dropout: null, unk_token: tokens[id('unknown', 0)], continuing_subword_prefix: null,
               end_of_word_suffix: null, fuse_unk: true, byte_fallback: true, ignore_merges: false,
               vocab, merges: merges.map(([l, r]) => [l, r]) },
    },
    config: { tokenizer_class: 'LlamaTokenizer', model_max_length: 1e12, clean_up_tokenization_spaces: false,
              legacy: true, add_bos_token: false, add_eos_token: false,
              bos_token: tokens[id('bos', 1)], eos_token: tokens[id('eos', 2)], unk_token: tokens[id('unknown', 0)] },
  };
}

// Writes models/<kind>/tokenizer.json (+ tokenizer_config.json) unless already there and
// newer than the source.
function prepare(kind, src) {
  const out = path.join(depDir, 'models', kind);
  const tj = path.join(out, 'tokenizer.json');
  const srcTime = fs.statSync(kind === 'qwen2' ? path.join(src, 'vocab.json') : src).mtimeMs;
  if (fs.existsSync(tj) && fs.statSync(tj).mtimeMs >= srcTime && fs.statSync(tj).mtimeMs >= fs.statSync(fileURLToPath(import.meta.url)).mtimeMs)
    return kind;
  const j = kind === 'qwen2' ? qwen2Json(src) : kind === 'llama-spm' ? llamaSpmJson(src) : null;
  if (!j) throw new Error(`unknown --kind ${kind}`);
  fs.mkdirSync(out, { recursive: true });
  fs.writeFileSync(path.join(out, 'tokenizer_config.json'), JSON.stringify(j.config));
  fs.writeFileSync(tj, JSON.stringify(j.tokenizer));
  return kind;
}

const a = parseArgs(process.argv.slice(2));
const name = prepare(a.kind, a.src);
env.allowRemoteModels = false;
env.allowLocalModels = true;
env.localModelPath = path.join(depDir, 'models') + '/';
const tok = await AutoTokenizer.from_pretrained(name, { local_files_only: true });
const bpe = tok._tokenizer?.model;

const buf = fs.readFileSync(a.text);
const text = buf.toString('utf8');
const encode = () => tok.encode(text, { add_special_tokens: false });

const ids = encode();  // warm-up (JIT); these ids are dumped
const secs = [];
for (let r = 0; r < a.runs; ++r) {
  if (!a.keepCache && bpe?.clear_cache) bpe.clear_cache();
  const t0 = process.hrtime.bigint();
  const out = encode();
  const t1 = process.hrtime.bigint();
  if (out.length !== ids.length) throw new Error(`run ${r}: ${out.length} tokens, warm-up ${ids.length}`);
  secs.push(Number(t1 - t0) / 1e9);
}
secs.sort((x, y) => x - y);
const n = secs.length;
const median = n % 2 ? secs[n >> 1] : (secs[n / 2 - 1] + secs[n / 2]) / 2;
if (a.dump) fs.writeFileSync(a.dump, ids.join('\n') + '\n');
console.log(JSON.stringify({
  tokenizer: `transformers.js:${a.kind}`, bytes: buf.length, tokens: ids.length,
  best_s: +secs[0].toFixed(6), median_s: +median.toFixed(6), mb_per_s: +(buf.length / median / 1e6).toFixed(3),
  cache: a.keepCache ? 'kept' : 'cleared',
}));
