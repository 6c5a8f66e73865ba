// ONNX Runtime's side of bench/ort.py: one inference session over one
// .onnx file, driven by bench/ort.py through stdin and stdout, one JSON
// object per line each way.
//
//   node bench/ort_worker.js SPEC.json
//
// SPEC: {"model": PATH, "threads": N, "inputs": [{"name", "dtype",
// "shape", "file"}]} where each file holds the input's raw bytes.
// Requests:  {"run": N}            -> {"ms": [N per-call times]}
//            {"outputs": PREFIX}   -> {"outputs": [{"name", "dtype", "shape", "file"}]}
//            {"quit": true}        -> exits
// A call is timed around `await session.run(feeds)` with
// process.hrtime.bigint(), as bench/ort.py times Loom's call around the
// Python call with time.perf_counter().
'use strict';
const fs = require('fs');
const readline = require('readline');

let ort;
try {
  ort = require('onnxruntime-node');
} catch (e) {
  process.stdout.write(JSON.stringify({error: `onnxruntime-node: ${e.message.split('\n')[0]}`}) + '\n');
  process.exit(3);
}

const ARRAYS = {float32: Float32Array, int64: BigInt64Array, int32: Int32Array, float64: Float64Array};

function tensor(input) {
  const bytes = fs.readFileSync(input.file);
  const Type = ARRAYS[input.dtype];
  if (!Type) throw new Error(`input ${input.name}: dtype ${input.dtype} is not handled here`);
  // A copy into an array of its own: the Buffer's offset need not be aligned.
  const data = new Type(bytes.byteLength / Type.BYTES_PER_ELEMENT);
  new Uint8Array(data.buffer).set(bytes);
  return new ort.Tensor(input.dtype, data, input.shape);
}

async function main() {
  const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const session = await ort.InferenceSession.create(spec.model, {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    intraOpNumThreads: spec.threads,
    interOpNumThreads: 1,
  });
  const feeds = {};
  for (const input of spec.inputs) feeds[input.name] = tensor(input);
  const version = require('onnxruntime-node/package.json').version;
  const reply = (object) => process.stdout.write(JSON.stringify(object) + '\n');
  reply({ready: true, version});
  const lines = readline.createInterface({input: process.stdin});
  for await (const line of lines) {
    const request = JSON.parse(line);
    if (request.quit) break;
    if (request.run !== undefined) {
      const ms = [];
      for (let i = 0; i < request.run; i++) {
        const start = process.hrtime.bigint();
        await session.run(feeds);
        ms.push(Number(process.hrtime.bigint() - start) / 1e6);
      }
      reply({ms});
    } else if (request.outputs !== undefined) {
      const results = await session.run(feeds);
      const outputs = [];
      for (const name of session.outputNames) {
        const t = results[name];
        const file = `${request.outputs}.${outputs.length}.bin`;
        fs.writeFileSync(file, Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
        outputs.push({name, dtype: t.type, shape: t.dims, file});
      }
      reply({outputs});
    } else {
      reply({error: `unknown request ${line}`});
    }
  }
  process.exit(0);
}

main().catch((e) => {
  process.stdout.write(JSON.stringify({error: String(e && e.message || e)}) + '\n');
  process.exit(2);
});
