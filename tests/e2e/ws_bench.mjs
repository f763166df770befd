// Benchmark (not a test): added latency of the WebSocket path against SSE on the same
// model and prompt. Starts build/vkserve (lib/server.mjs), then alternates the same
// streaming chat request over SSE (POST /v1/chat/completions) and over one WebSocket
// connection (/invocations-bidirectional-stream), one request at a time, and reports per
// transport the median TTFT (send -> first content chunk) and decode rate (content chunks
// after the first / time from the first to the last). Prints one JSON line at the end.
//   node tests/e2e/ws_bench.mjs [rounds=20] [max_tokens=256]
// Env: VKS_BUILD_ROOT / VKS_SOURCE_ROOT as for the e2e tests; VKS_BENCH_ARGS extra
// `vkserve serve` arguments (space-separated).
import { WebSocket } from 'ws';
import { startServer } from './lib/server.mjs';

const rounds = Number(process.argv[2] || 20);
const maxTokens = Number(process.argv[3] || 256);
const extra = (process.env.VKS_BENCH_ARGS || '').split(' ').filter(Boolean);
const server = await startServer(extra);
const body = {
  model: 'stories260K',
  messages: [{ role: 'user', content: 'Once upon a time' }],
  stream: true,
  max_tokens: maxTokens,
  ignore_eos: true,
  temperature: 0,
};

function summarize(t0, stamps) {
  const ttft = stamps[0] - t0;
  const decode = stamps.length > 1 ? (stamps.length - 1) / ((stamps.at(-1) - stamps[0]) / 1000) : 0;
  return { ttft_ms: ttft, tokens_per_s: decode, n: stamps.length };
}

async function viaSse() {
  const t0 = performance.now();
  const r = await fetch(`${server.base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const stamps = [];
  const dec = new TextDecoder();
  let buf = '';
  for await (const piece of r.body) {
    buf += dec.decode(piece, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const data = ev.slice(6);
      if (data === '[DONE]') return summarize(t0, stamps);
      const j = JSON.parse(data);
      if (j.choices?.[0]?.delta?.content) stamps.push(performance.now());
    }
  }
  return summarize(t0, stamps);
}

const ws = new WebSocket(`ws://127.0.0.1:${server.port}/invocations-bidirectional-stream`);
await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
function viaWs() {
  return new Promise((resolve) => {
    const stamps = [];
    const t0 = performance.now();
    const onMessage = (data) => {
      const text = data.toString();
      if (text === '[DONE]') {
        ws.off('message', onMessage);
        resolve(summarize(t0, stamps));
        return;
      }
      const j = JSON.parse(text);
      if (j.choices?.[0]?.delta?.content) stamps.push(performance.now());
    };
    ws.on('message', onMessage);
    ws.send(JSON.stringify(body));
  });
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

await viaSse();  // warm both paths
await viaWs();
const res = { sse: [], ws: [] };
for (let i = 0; i < rounds; ++i) {
  // Alternate the order so drift (thermal, other load) hits both transports alike.
  if (i % 2 === 0) {
    res.sse.push(await viaSse());
    res.ws.push(await viaWs());
  } else {
    res.ws.push(await viaWs());
    res.sse.push(await viaSse());
  }
}
ws.close();
await server.stop();

const out = {};
for (const k of ['sse', 'ws']) {
  out[k] = {
    ttft_ms: median(res[k].map((x) => x.ttft_ms)),
    tokens_per_s: median(res[k].map((x) => x.tokens_per_s)),
    content_chunks: median(res[k].map((x) => x.n)),
  };
}
out.ratio = {
  ttft_ws_over_sse: out.ws.ttft_ms / out.sse.ttft_ms,
  tokens_per_s_ws_over_sse: out.ws.tokens_per_s / out.sse.tokens_per_s,
};
console.log(`rounds ${rounds}, max_tokens ${maxTokens}`);
console.log(`SSE: TTFT ${out.sse.ttft_ms.toFixed(2)} ms, ${out.sse.tokens_per_s.toFixed(1)} tok/s`);
console.log(`WS:  TTFT ${out.ws.ttft_ms.toFixed(2)} ms, ${out.ws.tokens_per_s.toFixed(1)} tok/s`);
console.log(JSON.stringify(out));
