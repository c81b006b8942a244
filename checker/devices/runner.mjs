// Run a device kit with onnxruntime-node: every graph on every case, as kit.json says, writing the folder
// `checker verify BUNDLE --device-outputs DIR` judges. Needs Node.js and onnxruntime-node (found beside the kit,
// or in --modules DIR, a node_modules folder).
//
//     node run.mjs --out DIR [--modules DIR] [--preprocess app.mjs] [--platform NAME]
//
// --preprocess names an ES module whose `preprocess(inputName, rawPath)` returns the tensor the application
// makes from a raw input, as { type, dims, data } or an onnxruntime Tensor; each is written to
// DIR/tensors/<case>/<input>.npy. The graphs still run on the kit's own tensors.
import { createRequire } from 'node:module';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseNpy, npyBytes, sessionOptions } from './worker.mjs';

const KIT = path.dirname(fileURLToPath(import.meta.url));

function option(name) {
  const at = process.argv.indexOf(name);
  return at > 0 ? process.argv[at + 1] : undefined;
}

async function write(file, type, dims, data) {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, npyBytes(type, dims, data));
}

async function main() {
  const out = option('--out');
  if (!out) throw new Error('run.mjs needs --out DIR');
  const modules = option('--modules');
  const require = createRequire(path.join(modules || KIT, 'index.js'));
  const ort = require('onnxruntime-node');
  const kit = JSON.parse(await readFile(path.join(KIT, 'kit.json'), 'utf-8'));
  const session = kit.session || {};
  const options = sessionOptions({ options: { ...session, free_dimension_overrides: session.dimension_overrides } }, 'cpu');
  for (const graph of kit.graphs) {
    const s = await ort.InferenceSession.create(path.join(KIT, graph.path), options);
    for (const c of kit.cases) {
      const feeds = {};
      for (const name of s.inputNames) {
        const array = parseNpy(new Uint8Array(await readFile(path.join(KIT, c.inputs[name].npy))));
        feeds[name] = new ort.Tensor(array.type, array.data, array.dims);
      }
      const results = await s.run(feeds);
      for (const entry of graph.outputs) {
        const t = results[entry.name];
        await write(path.join(out, 'outputs', graph.folder, c.folder, entry.file), t.type, t.dims, t.data);
      }
    }
  }
  const module = option('--preprocess');
  if (module) {
    const { preprocess } = await import(pathToFileURL(path.resolve(module)).href);
    for (const c of kit.cases) {
      for (const [name, raw] of Object.entries(c.raw || {})) {
        const t = await preprocess(name, path.join(KIT, raw.path));
        await write(path.join(out, 'tensors', c.folder, raw.file), t.type, t.dims, t.data);
      }
    }
  }
  const device = {
    runtime: 'onnxruntime-node',
    version: ort.env.versions.node || ort.env.versions.common,
    backend: 'cpu',
    device: process.env.KIT_DEVICE_NAME || os.hostname(),
    machine: os.machine ? os.machine() : process.arch,
    os: `${process.platform} ${os.release()}`,
    node: process.version,
    runner: 'run.mjs',
    release_digest: (kit.release || {}).digest || null,
  };
  if (option('--platform')) device.platform = option('--platform');
  await writeFile(path.join(out, 'device.json'), JSON.stringify(device, null, 2) + '\n');
}

main().catch((error) => { console.error(`run.mjs: ${error && error.stack || error}`); process.exitCode = 1; });
