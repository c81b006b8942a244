// The worker's requests answered by onnxruntime's JavaScript builds (onnxruntime-web in a page, onnxruntime-node):
// the same JSON requests as runtimes/worker.py answers in Python (open, run, close), with the tensors in the same
// .npz files (NumPy's uncompressed zip of .npy members), so the checker judges every platform by one path.
// `io` reads and writes those files: the file system in Node, the checker's loopback server in a page.

const DTYPES = {
  // .npy descr -> [onnxruntime-js type, typed array, onnx type name]
  '<f4': ['float32', Float32Array, 'float'],
  '<f8': ['float64', Float64Array, 'double'],
  '<f2': ['float16', Uint16Array, 'float16'],
  '<i8': ['int64', BigInt64Array, 'int64'],
  '<u8': ['uint64', BigUint64Array, 'uint64'],
  '<i4': ['int32', Int32Array, 'int32'],
  '<u4': ['uint32', Uint32Array, 'uint32'],
  '<i2': ['int16', Int16Array, 'int16'],
  '<u2': ['uint16', Uint16Array, 'uint16'],
  '|i1': ['int8', Int8Array, 'int8'],
  '|u1': ['uint8', Uint8Array, 'uint8'],
  '|b1': ['bool', Uint8Array, 'bool'],
};
const DESCR = Object.fromEntries(Object.entries(DTYPES).map(([descr, [type]]) => [type, descr]));
const ONNX_TYPE = Object.fromEntries(Object.values(DTYPES).map(([type, , onnx]) => [type, onnx]));
const MAX_ERROR = 2000;

export function firstLine(error) {
  const text = String((error && error.message) || error || 'error').trim();
  return text.length <= MAX_ERROR ? text : text.slice(0, MAX_ERROR) + '...';
}

// ---- .npy and .npz ---------------------------------------------------------------------------------------

export function parseNpy(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes[0] !== 0x93 || String.fromCharCode(...bytes.subarray(1, 6)) !== 'NUMPY') throw new Error('not a .npy file');
  const major = bytes[6];
  const headerLength = major === 1 ? view.getUint16(8, true) : view.getUint32(8, true);
  const start = major === 1 ? 10 : 12;
  const header = new TextDecoder('latin1').decode(bytes.subarray(start, start + headerLength));
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const fortran = /'fortran_order':\s*(True|False)/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shape) throw new Error('a .npy header without descr, fortran_order or shape');
  if (fortran[1] === 'True') throw new Error('a Fortran-ordered .npy array');
  const kind = DTYPES[descr[1]];
  if (!kind) throw new Error(`.npy dtype ${descr[1]} is not one this worker reads`);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s.length).map(Number);
  const count = dims.reduce((a, b) => a * b, 1);
  const offset = start + headerLength;
  const size = count * kind[1].BYTES_PER_ELEMENT;
  if (offset + size > bytes.byteLength) throw new Error('a .npy file shorter than its header says');
  // A copy: the members of a zip are not aligned to their element size.
  const data = new kind[1](bytes.slice(offset, offset + size).buffer);
  return { type: kind[0], dims, data };
}

export function npyBytes(type, dims, data) {
  const descr = DESCR[type];
  if (!descr) throw new Error(`an output of type ${type} cannot be written as .npy`);
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  const pad = 64 - ((10 + header.length + 1) % 64);
  header += ' '.repeat(pad % 64) + '\n';
  const body = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const out = new Uint8Array(10 + header.length + body.byteLength);
  out.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]);
  new DataView(out.buffer).setUint16(8, header.length, true);
  out.set(new TextEncoder().encode(header), 10);
  out.set(body, 10 + header.length);
  return out;
}

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

function crc32(bytes) {
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = CRC_TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

// The members of an uncompressed zip (what numpy.savez writes, with its zip64 extra fields): name -> bytes.
export function readZip(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let end = -1;
  for (let i = bytes.byteLength - 22; i >= Math.max(0, bytes.byteLength - 65557); i--) {
    if (view.getUint32(i, true) === 0x06054b50) { end = i; break; }
  }
  if (end < 0) throw new Error('not a zip file');
  let count = view.getUint16(end + 10, true);
  let at = view.getUint32(end + 16, true);
  if (at === 0xffffffff || count === 0xffff) {
    const locator = end - 20;
    if (locator < 0 || view.getUint32(locator, true) !== 0x07064b50) throw new Error('a zip64 file without its locator');
    const record = Number(view.getBigUint64(locator + 8, true));
    count = Number(view.getBigUint64(record + 32, true));
    at = Number(view.getBigUint64(record + 48, true));
  }
  const members = {};
  for (let n = 0; n < count; n++) {
    if (view.getUint32(at, true) !== 0x02014b50) throw new Error('a broken zip directory');
    const method = view.getUint16(at + 10, true);
    let size = view.getUint32(at + 20, true);
    const nameLength = view.getUint16(at + 28, true);
    const extraLength = view.getUint16(at + 30, true);
    const commentLength = view.getUint16(at + 32, true);
    let local = view.getUint32(at + 42, true);
    const name = new TextDecoder().decode(bytes.subarray(at + 46, at + 46 + nameLength));
    let extra = at + 46 + nameLength;
    const extraEnd = extra + extraLength;
    while (extra + 4 <= extraEnd) {
      const id = view.getUint16(extra, true);
      const length = view.getUint16(extra + 2, true);
      if (id === 0x0001) {
        let field = extra + 4;
        if (view.getUint32(at + 24, true) === 0xffffffff) field += 8;  // uncompressed size first
        if (size === 0xffffffff) { size = Number(view.getBigUint64(field, true)); field += 8; }
        if (local === 0xffffffff) local = Number(view.getBigUint64(field, true));
      }
      extra += 4 + length;
    }
    if (method !== 0) throw new Error(`zip member ${name} is compressed`);
    const data = local + 30 + view.getUint16(local + 26, true) + view.getUint16(local + 28, true);
    members[name] = bytes.subarray(data, data + size);
    at += 46 + nameLength + extraLength + commentLength;
  }
  return members;
}

// An uncompressed zip of `members` (name -> bytes), as numpy.load reads it.
export function zipBytes(members) {
  const encoder = new TextEncoder();
  const parts = [];
  const directory = [];
  let offset = 0;
  for (const [name, data] of Object.entries(members)) {
    const nameBytes = encoder.encode(name);
    const crc = crc32(data);
    const local = new Uint8Array(30 + nameBytes.length);
    const lv = new DataView(local.buffer);
    lv.setUint32(0, 0x04034b50, true);
    lv.setUint16(4, 20, true);
    lv.setUint32(14, crc, true);
    lv.setUint32(18, data.byteLength, true);
    lv.setUint32(22, data.byteLength, true);
    lv.setUint16(26, nameBytes.length, true);
    local.set(nameBytes, 30);
    const central = new Uint8Array(46 + nameBytes.length);
    const cv = new DataView(central.buffer);
    cv.setUint32(0, 0x02014b50, true);
    cv.setUint16(4, 20, true);
    cv.setUint16(6, 20, true);
    cv.setUint32(16, crc, true);
    cv.setUint32(20, data.byteLength, true);
    cv.setUint32(24, data.byteLength, true);
    cv.setUint16(28, nameBytes.length, true);
    cv.setUint32(42, offset, true);
    central.set(nameBytes, 46);
    parts.push(local, data);
    directory.push(central);
    offset += local.byteLength + data.byteLength;
  }
  const directorySize = directory.reduce((a, b) => a + b.byteLength, 0);
  const end = new Uint8Array(22);
  const ev = new DataView(end.buffer);
  ev.setUint32(0, 0x06054b50, true);
  ev.setUint16(8, directory.length, true);
  ev.setUint16(10, directory.length, true);
  ev.setUint32(12, directorySize, true);
  ev.setUint32(16, offset, true);
  const out = new Uint8Array(offset + directorySize + 22);
  let at = 0;
  for (const part of [...parts, ...directory, end]) { out.set(part, at); at += part.byteLength; }
  return out;
}

// ---- sessions ------------------------------------------------------------------------------------------

const LEVELS = { disabled: 'disabled', basic: 'basic', extended: 'extended', all: 'all' };

// The checker's session options (compare.session) in onnxruntime-js's words.
export function sessionOptions(request, backend) {
  const options = request.options || {};
  const out = { executionProviders: [backend], graphOptimizationLevel: LEVELS[options.graph_optimization_level] || 'all' };
  if (options.execution_mode === 'parallel' || options.execution_mode === 'sequential') out.executionMode = options.execution_mode;
  if (options.intra_op_num_threads) out.intraOpNumThreads = options.intra_op_num_threads;
  if (options.inter_op_num_threads) out.interOpNumThreads = options.inter_op_num_threads;
  if (options.free_dimension_overrides) out.freeDimensionOverrides = options.free_dimension_overrides;
  const entries = { ...(options.config_entries || {}) };
  if (request.lean) entries['session.disable_prepacking'] = '1';
  const extra = {};
  for (const [key, value] of Object.entries(entries)) {
    const parts = String(key).split('.');
    let place = extra;
    for (const part of parts.slice(0, -1)) place = place[part] = place[part] || {};
    place[parts[parts.length - 1]] = String(value);
  }
  if (Object.keys(extra).length) out.extra = extra;
  return out;
}

function metadata(list, names) {
  // [name, onnx type, shape] as the Python worker's NodeArg answers give them
  return names.map((name, i) => {
    const m = (list || [])[i] || {};
    const type = m.isTensor === false ? 'seq' : `tensor(${ONNX_TYPE[m.type] || m.type || 'float'})`;
    const shape = Array.isArray(m.shape) ? m.shape.map((d) => (typeof d === 'number' || typeof d === 'string' ? d : null)) : [];
    return [name, type, shape];
  });
}

// Where onnxruntime placed each node, from its verbose log of session_state.cc ("Node placements"): pairs of
// [execution provider, [[op type, node name], ...]]; Memcpy nodes are the providers' own and left out.
export function placements(lines) {
  const out = [];
  let current = null;
  for (const raw of lines) {
    const line = raw.replace(/\x1b\[[0-9;]*m/g, '');
    const text = line.includes('VerifyEachNodeIsAssignedToAnEp]') ? line.split('VerifyEachNodeIsAssignedToAnEp]')[1] : null;
    if (text === null) continue;
    const all = /All nodes placed on \[(\w+)\]\. Number of nodes: (\d+)/.exec(text);
    const some = /Node\(s\) placed on \[(\w+)\]\. Number of nodes: (\d+)/.exec(text);
    if (all) { out.push([all[1], [], Number(all[2])]); current = null; continue; }
    if (some) { current = [some[1], [], Number(some[2])]; out.push(current); continue; }
    const node = /^\s+(\S+) \((.*)\)\s*$/.exec(text);
    if (node && current && !node[1].startsWith('Memcpy')) current[1].push([node[1], node[2]]);
  }
  return out;
}

export class Worker {
  constructor(ort, io, backend, hooks = {}) {
    this.ort = ort;
    this.io = io;
    this.backend = backend;
    this.hooks = hooks;  // capture(on): start or stop keeping onnxruntime's log lines; captured(): the lines
    this.sessions = new Map();
    this.nextId = 1;
  }

  async open(request) {
    const ort = this.ort;
    const options = sessionOptions(request, this.backend);
    if (request.external) options.externalData = request.external.map((e) => ({ path: e.path, data: e.data }));
    const log = Boolean(this.hooks.capture);
    if (log) { options.logSeverityLevel = 0; options.logVerbosityLevel = 0; this.hooks.capture(true); }
    let session;
    try {
      session = await ort.InferenceSession.create(await this.io.model(request.path), options);
    } catch (error) {
      return { ok: false, error: firstLine(error) };
    } finally {
      if (log) this.hooks.capture(false);
    }
    const id = this.nextId++;
    this.sessions.set(id, session);
    const answer = {
      ok: true,
      session: id,
      inputs: metadata(session.inputMetadata, session.inputNames),
      outputs: metadata(session.outputMetadata, session.outputNames),
      providers: [this.backend],
    };
    if (log) answer.placement = placements(this.hooks.captured());
    return answer;
  }

  async run(request) {
    const ort = this.ort;
    const session = this.sessions.get(Number(request.session));
    if (!session) return { ok: false, error: `no session ${request.session}` };
    const members = readZip(await this.io.read(request.feed));
    const feeds = {};
    request.names.forEach((name, i) => {
      const array = parseNpy(members[`arr_${i}.npy`]);
      feeds[name] = new ort.Tensor(array.type, array.data, array.dims);
    });
    let results;
    try {
      results = await session.run(feeds, { logSeverityLevel: 3 });
    } catch (error) {
      return { ok: false, error: firstLine(error) };
    }
    const written = {};
    for (const [i, name] of session.outputNames.entries()) {
      const tensor = results[name];
      if (tensor.location && tensor.location !== 'cpu') await tensor.getData(true);
      written[`o${i}.npy`] = npyBytes(tensor.type, tensor.dims, tensor.data);
    }
    await this.io.write(request.out, zipBytes(written));
    return { ok: true, count: session.outputNames.length };
  }

  async close(request) {
    const session = this.sessions.get(Number(request.session));
    this.sessions.delete(Number(request.session));
    if (session && session.release) await session.release();
    return { ok: true };
  }

  async handle(request) {
    const handler = { open: this.open, run: this.run, close: this.close }[request.op];
    if (!handler) return { ok: false, error: `unknown request '${request.op}'` };
    try {
      return await handler.call(this, request);
    } catch (error) {
      return { ok: false, error: `${(error && error.name) || 'Error'}: ${firstLine(error)}` };
    }
  }
}
