// The worker in onnxruntime-node: `node node.mjs MODULES`, where MODULES is the node_modules folder the checker
// installed onnxruntime-node into. One JSON request a line on stdin, one JSON answer a line on stdout, as
// runtimes/worker.py does; the first line says it is ready and what it runs.
import { createRequire } from 'node:module';
import { readFile, writeFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import os from 'node:os';
import path from 'node:path';
import { Worker, firstLine } from './worker.mjs';

function answer(message) {
  process.stdout.write(JSON.stringify(message) + '\n');
}

async function main() {
  const modules = process.argv[2];
  let ort;
  try {
    ort = createRequire(path.join(modules, 'index.js'))('onnxruntime-node');
  } catch (error) {
    answer({ ready: false, error: `${(error && error.name) || 'Error'}: ${firstLine(error)}` });
    return 1;
  }
  ort.env.logLevel = 'error';
  const io = {
    model: async (file) => file,  // onnxruntime-node reads the graph, and its external data beside it, itself
    read: async (file) => new Uint8Array(await readFile(file)),
    write: async (file, bytes) => writeFile(file, bytes),
  };
  answer({
    ready: true,
    version: ort.env.versions.node || ort.env.versions.common,
    numpy: null,
    providers: ['cpu'],
    machine: os.machine ? os.machine() : process.arch,
    cpu_features: [],
    fingerprint: {
      engine: 'node',
      package: 'onnxruntime-node',
      package_version: ort.env.versions.node || ort.env.versions.common,
      backend: 'cpu',
      node: process.version,
      os: `${process.platform} ${os.release()}`,
      cpu: (os.cpus()[0] || {}).model || '',
    },
  });
  const worker = new Worker(ort, io, 'cpu');
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (!line.trim()) continue;
    let request;
    try {
      request = JSON.parse(line);
    } catch (error) {
      answer({ ok: false, error: `a request that is not JSON: ${firstLine(error)}` });
      continue;
    }
    if (request.op === 'quit') break;
    answer(await worker.handle(request));
  }
  return 0;
}

process.exitCode = await main();
