// Starts build/vkserve on a free port (--port 0; the port is read from the "listening on"
// log line) with the bundled stories260K model, waits until GET /ping says 200, and stops
// it with SIGTERM (checking the exit status). Exits 77 (Meson: skipped) when the server
// cannot run here (no binary, no Vulkan device) -- only before any server of this test file
// has started: after one has, an unmet precondition is a failure, never a skip that would
// hide the results of the tests that ran.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

export const buildRoot = process.env.VKS_BUILD_ROOT || path.resolve('build');
export const sourceRoot = process.env.VKS_SOURCE_ROOT || path.resolve('.');
export const modelPath = path.join(sourceRoot, 'models', 'stories260K.gguf');

let anyStarted = false;  // a server of this process reached /ping 200

export function skip(why) {
  if (anyStarted) throw new Error(`precondition lost after a server ran: ${why}`);
  console.log(`SKIP: ${why}`);
  process.exit(77);
}

export class Server {
  constructor(proc, port) {
    this.proc = proc;
    this.port = port;
    this.base = `http://127.0.0.1:${port}`;
    this.log = '';
    this.exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  }

  // SIGTERM -> drain -> exit; resolves to {code, signal}.
  async stop(timeoutMs = 30000) {
    if (this.proc.exitCode !== null) return { code: this.proc.exitCode, signal: null };
    this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), timeoutMs);
    const r = await this.exited;
    clearTimeout(timer);
    return r;
  }

  async metrics() {
    const r = await fetch(`${this.base}/metrics`);
    const text = await r.text();
    const out = {};
    for (const line of text.split('\n')) {
      if (!line || line.startsWith('#')) continue;
      const m = line.match(/^([^\s{]+)(\{[^}]*\})?\s+(\S+)$/);
      if (m) out[m[1]] = (out[m[1]] || 0) + Number(m[3]);
    }
    return out;
  }

  // Resident set size of the server process in bytes (Linux /proc), for memory-bound checks.
  rssBytes() {
    const m = readFileSync(`/proc/${this.proc.pid}/status`, 'utf8').match(/VmRSS:\s+(\d+) kB/);
    return m ? Number(m[1]) * 1024 : 0;
  }

  // Throws unless GET /health answers 200 within `ms` (the hostile-input tests' liveness check:
  // whatever one request does, the server keeps answering its probes).
  async assertHealthy(ms = 1000, what = '') {
    const t0 = Date.now();
    const r = await fetch(`${this.base}/health`, { signal: AbortSignal.timeout(ms) });
    if (r.status !== 200) throw new Error(`/health answered ${r.status}${what ? ` (${what})` : ''}`);
    return Date.now() - t0;
  }
}

// Starts a server; extra CLI args are appended. Resolves once /ping is 200.
// `memoryLimitBytes`: run it under `prlimit --as` so that a memory regression fails the test
// (allocation failure) instead of exhausting the machine.
// `model` / `name`: another model file and its served name (default: stories260K).
export async function startServer(extraArgs = [], { readyTimeoutMs = 120000, env = {}, memoryLimitBytes = 0,
                                                    model = modelPath, name = 'stories260K' } = {}) {
  const bin = path.join(buildRoot, 'vkserve');
  if (!existsSync(bin)) skip(`${bin} is not built`);
  if (!existsSync(model)) skip(`${model} is missing`);
  // --bidi-port 0: the dedicated WebSocket port (default 8081) must not collide with other
  // servers running at the same time on this machine.
  const bidi = extraArgs.includes('--bidi-port') ? [] : ['--bidi-port', '0'];
  const args = ['serve', '--port', '0', '--model', model, '--served-model-name', name, ...bidi, ...extraArgs];
  const [cmd, argv] = memoryLimitBytes > 0
    ? ['prlimit', [`--as=${memoryLimitBytes}`, '--', bin, ...args]]  // prlimit execs: same pid
    : [bin, args];
  const proc = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let log = '';
  const port = await new Promise((resolve, reject) => {
    const onData = (d) => {
      log += d.toString();
      const m = log.match(/listening on http:\/\/[^:]+:(\d+)/);
      if (m) resolve(Number(m[1]));
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', onData);
    proc.on('exit', (code) => reject(new Error(`vkserve exited (${code}) before listening:\n${log}`)));
    setTimeout(() => reject(new Error(`vkserve did not listen in time:\n${log}`)), 30000).unref();
  });
  const server = new Server(proc, port);
  const keep = (d) => { server.log += d.toString(); if (process.env.VKS_E2E_VERBOSE) process.stderr.write(d); };
  proc.stdout.on('data', keep);
  proc.stderr.on('data', keep);
  server.log = log;
  const deadline = Date.now() + readyTimeoutMs;
  for (;;) {
    if (proc.exitCode !== null) {
      if (/vulkan|no (suitable )?device|VK_ERROR/i.test(server.log)) skip(`no Vulkan device:\n${server.log}`);
      throw new Error(`vkserve exited (${proc.exitCode}) while loading:\n${server.log}`);
    }
    try {
      const r = await fetch(`${server.base}/ping`);
      if (r.status === 200) break;
    } catch { /* not yet */ }
    if (Date.now() > deadline) throw new Error(`vkserve not ready in ${readyTimeoutMs} ms:\n${server.log}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  anyStarted = true;
  return server;
}

// Reads an SSE body into its `data:` payloads (raw strings), checking the framing.
export function parseSse(text) {
  const events = text.split('\n\n');
  const last = events.pop();
  if (last !== '') throw new Error(`SSE body does not end with a blank line: ${JSON.stringify(last)}`);
  return events.map((e) => {
    if (!e.startsWith('data: ')) throw new Error(`SSE event is not "data: ...": ${JSON.stringify(e)}`);
    return e.slice(6);
  });
}
