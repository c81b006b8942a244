// The worker in a page of headless Chromium, served by the checker's loopback server (platforms/browser.py):
// it loads onnxruntime-web's build for its backend, says it is ready and what it runs, then asks the server for
// one request at a time and posts each answer back. Tensors and graphs are fetched from, and outputs put to, the
// server's URLs for the files the request names.
import { Worker, firstLine } from './worker.mjs';

const base = location.pathname.replace(/\/[^/]*$/, '');
const params = new URLSearchParams(location.search);
const backend = params.get('backend');  // wasm | webgpu
const build = params.get('build');  // ort.wasm.min.mjs | ort.webgpu.min.mjs
const threads = Number(params.get('threads') || 0);
const MAX_LINES = 20000;

async function post(where, message) {
  await fetch(`${base}/${where}`, { method: 'POST', body: JSON.stringify(message), headers: { 'Content-Type': 'application/json' } });
}

// onnxruntime-web logs through the console; while a session is created its lines are kept (the node placements).
let lines = [];
let capturing = false;
for (const level of ['log', 'info', 'warn', 'error', 'debug']) {
  const original = console[level].bind(console);
  console[level] = (...args) => {
    if (!capturing) return original(...args);
    if (lines.length < MAX_LINES) lines.push(args.map(String).join(' '));
  };
}

async function browserVersion() {
  try {
    const data = await navigator.userAgentData.getHighEntropyValues(['fullVersionList']);
    const found = data.fullVersionList.find((b) => /Chrom/.test(b.brand));
    if (found) return `${found.brand} ${found.version}`;
  } catch (error) { /* an older browser: the user agent says enough */ }
  return navigator.userAgent;
}

async function adapterInfo() {
  if (!navigator.gpu) return { available: false, reason: 'navigator.gpu is absent (WebGPU is not enabled)' };
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) return { available: false, reason: 'navigator.gpu.requestAdapter() found no adapter' };
  const info = adapter.info || (adapter.requestAdapterInfo ? await adapter.requestAdapterInfo() : {});
  return {
    available: true,
    vendor: info.vendor || '',
    architecture: info.architecture || '',
    device: info.device || '',
    description: info.description || '',
    fallback: Boolean(info.isFallbackAdapter || adapter.isFallbackAdapter),
  };
}

async function main() {
  let ort;
  try {
    ort = await import(`${base}/ort/${build}`);
  } catch (error) {
    await post('hello', { ready: false, error: `onnxruntime-web did not load: ${firstLine(error)}` });
    return;
  }
  ort.env.logLevel = 'error';
  ort.env.wasm.wasmPaths = `${base}/ort/`;
  ort.env.wasm.numThreads = threads > 0 ? threads : Math.min(4, Math.ceil((navigator.hardwareConcurrency || 1) / 2));
  const version = ort.env.versions.web || ort.env.versions.common;
  const fingerprint = {
    engine: `browser-${backend}`,
    package: 'onnxruntime-web',
    package_version: version,
    package_build: build,
    backend,
    browser: await browserVersion(),
    user_agent: navigator.userAgent,
    cross_origin_isolated: Boolean(self.crossOriginIsolated),
    wasm_threads: self.crossOriginIsolated ? ort.env.wasm.numThreads : 1,
    hardware_concurrency: navigator.hardwareConcurrency || 0,
  };
  if (backend === 'webgpu') {
    fingerprint.adapter = await adapterInfo();
    if (!fingerprint.adapter.available) {
      await post('hello', { ready: false, error: `WebGPU cannot run here: ${fingerprint.adapter.reason}`, fingerprint });
      return;
    }
  }
  const io = {
    model: async (url) => url,
    read: async (url) => new Uint8Array(await (await fetch(url)).arrayBuffer()),
    write: async (url, bytes) => {
      const done = await fetch(url, { method: 'PUT', body: bytes });
      if (!done.ok) throw new Error(`the checker refused the output file (${done.status})`);
    },
  };
  // Only WebGPU places nodes on more than one provider: its session's log says which fell back to the CPU.
  const hooks = backend === 'webgpu'
    ? { capture: (on) => { capturing = on; if (on) lines = []; }, captured: () => lines }
    : {};
  const worker = new Worker(ort, io, backend, hooks);
  await post('hello', {
    ready: true, version, numpy: null, providers: [backend], machine: 'wasm32', cpu_features: [], fingerprint,
  });
  for (;;) {
    let request;
    try {
      request = await (await fetch(`${base}/next`)).json();
    } catch (error) {
      return;  // the checker has gone
    }
    if (request.op === 'wait') continue;
    if (request.op === 'quit') return;
    await post('answer', await worker.handle(request));
  }
}

main().catch((error) => post('hello', { ready: false, error: `the page failed: ${firstLine(error)}` }));
