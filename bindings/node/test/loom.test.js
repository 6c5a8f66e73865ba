'use strict';
// The Node binding against Loom itself: the MLP example exported for the
// CPU (loomc build), run from JavaScript and compared with a float64
// reference computed here; typed arrays; errors as Error with Loom's
// message; a scalar argument; eight worker_threads; dispose and reference
// counts.  LOOMC names loomc (default: the build tree's).
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');
const { Worker } = require('worker_threads');
const loom = require('..');

const ROOT = path.join(__dirname, '..', '..', '..');
const LOOMC = process.env.LOOMC || path.join(ROOT, 'build', 'bin', 'loomc');
const SHAPES = [[64, 784], [512, 784], [512], [512, 512], [512], [10, 512], [10]];
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'loom-node-'));

function build(source, name) {
  const out = path.join(dir, name);
  execFileSync(LOOMC, ['build', source, '--config', path.join(ROOT, 'configs', 'host.yaml'), '-o', out]);
  return out;
}
const MLP = build(path.join(ROOT, 'examples', 'mlp.loom'), 'mlp.so');

function inputs(seed) {
  let state = BigInt(seed);
  return SHAPES.map((s) => {
    const n = s.reduce((a, b) => a * b, 1);
    const d = new Float32Array(n);
    for (let k = 0; k < n; k++) {
      state = (state * 6364136223846793005n + 1442695040888963407n) & ((1n << 64n) - 1n);
      d[k] = (Number(state >> 40n) / (1 << 24) - 0.5) * 0.2;
    }
    return d;
  });
}

function reference(d) {
  const dense = (x, rows, w, b, out) => {
    const inner = x.length / rows;
    const y = new Float64Array(rows * out);
    for (let r = 0; r < rows; r++) {
      for (let o = 0; o < out; o++) {
        let s = b[o];
        for (let k = 0; k < inner; k++) s += x[r * inner + k] * w[o * inner + k];
        y[r * out + o] = s;
      }
    }
    return y;
  };
  const relu = (v) => v.map((x) => Math.max(x, 0));
  const h1 = relu(dense(Float64Array.from(d[0]), 64, d[1], d[2], 512));
  const h2 = relu(dense(h1, 64, d[3], d[4], 512));
  const z = dense(h2, 64, d[5], d[6], 10);
  const y = new Float64Array(z.length);
  for (let r = 0; r < 64; r++) {
    const row = z.subarray(r * 10, r * 10 + 10);
    const m = Math.max(...row);
    let s = 0;
    for (const v of row) s += Math.exp(v - m);
    for (let o = 0; o < 10; o++) y[r * 10 + o] = Math.exp(row[o] - m) / s;
  }
  return y;
}

test('the MLP matches a float64 reference', () => {
  const lib = loom.load(MLP);
  assert.ok(lib.functionNames().includes('main'));
  const d = inputs(11);
  const y = lib.function('main').call(...d.map((x, k) => loom.tensor(x, SHAPES[k])));
  assert.deepStrictEqual(y.shape, [64, 10]);
  assert.strictEqual(y.dtype, 'float32');
  const v = y.data();
  assert.ok(v instanceof Float32Array);
  const want = reference(d);
  let worst = 0;
  for (let k = 0; k < v.length; k++) worst = Math.max(worst, Math.abs(v[k] - want[k]));
  assert.ok(worst < 1e-5, `${worst} from the reference`);
});

test('errors are Errors with Loom\'s message', () => {
  assert.throws(() => loom.load('/nonexistent/model.so'), (e) => e instanceof Error && /\/nonexistent\/model\.so/.test(e.message));
  const lib = loom.load(MLP);
  assert.throws(() => lib.function('mian'), /main/);
  const main = lib.function('main');
  assert.throws(() => main.call(1), /7 arguments/);
  const d = inputs(13);
  const args = d.map((x, k) => loom.tensor(x, SHAPES[k]));
  args[0] = loom.tensor(d[0].subarray(0, 32 * 784), [32, 784]);
  assert.throws(() => main.call(...args), /32/);
  assert.throws(() => main.call({}), /not a Loom handle/);
  assert.throws(() => loom.tensor(new Float32Array(2), [3]), /as many elements/);
  assert.throws(() => loom.tensor([1, 2], [2]), /typed array/);
  assert.throws(() => loom.globalFunction('no.such.function'), /no global function/);
  const t = loom.tensor(new Float32Array([1]), [1]);
  t.dispose();
  assert.throws(() => t.shape, /disposed/);
});

test('a scalar argument', () => {
  const src = path.join(dir, 'scalar.loom');
  fs.writeFileSync(src, '@main = fn(%x: Tensor[(4), float32], %s: float32) -> Tensor[(4), float32] {\n  %x\n}\n');
  const f = loom.load(build(src, 'scalar.so')).function('main');
  const x = loom.tensor(new Float32Array([1, 2, 3, 4]), [4]);
  assert.deepStrictEqual(Array.from(f.call(x, 2.5).data()), [1, 2, 3, 4]);
  assert.throws(() => f.call(x, 'two'), Error);
});

test('typed arrays of other dtypes', () => {
  const t = loom.tensor(new Int32Array([1, 2, 3, 4, 5, 6]), [2, 3]);
  assert.strictEqual(t.dtype, 'int32');
  assert.deepStrictEqual(t.shape, [2, 3]);
  assert.deepStrictEqual(Array.from(t.data()), [1, 2, 3, 4, 5, 6]);
  const u = loom.tensor(new Float64Array([0.5]), [1]);
  assert.strictEqual(u.dtype, 'float64');
  assert.strictEqual(u.data()[0], 0.5);
});

test('eight worker threads calling one function agree with one', async () => {
  const d = inputs(14);
  const lib = loom.load(MLP);
  const want = Array.from(lib.function('main').call(...d.map((x, k) => loom.tensor(x, SHAPES[k]))).data());
  const code = `
    const { parentPort, workerData } = require('worker_threads');
    const loom = require(${JSON.stringify(path.join(__dirname, '..'))});
    const main = loom.load(workerData.lib).function('main');
    const results = [];
    for (let i = 0; i < 5; i++) {
      results.push(Array.from(main.call(...workerData.d.map((x, k) => loom.tensor(x, workerData.shapes[k]))).data()));
    }
    parentPort.postMessage(results);`;
  const runs = await Promise.all(Array.from({ length: 8 }, () => new Promise((resolve, reject) => {
    const w = new Worker(code, { eval: true, workerData: { lib: MLP, d, shapes: SHAPES } });
    w.once('message', resolve);
    w.once('error', reject);
  })));
  for (const results of runs) for (const r of results) assert.deepStrictEqual(r, want);
});

test('dispose and reference counts', () => {
  const t = loom.tensor(new Float32Array([1, 2]), [2]);
  assert.strictEqual(t.useCount, 1);
  t.dispose();
  t.dispose(); // a second dispose does nothing
});
