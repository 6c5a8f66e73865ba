'use strict';
// The Node side of bench/languages.py: the time per call of @noop and
// @add1k of bench/languages/calls.loom (exported), the median of 7
// batches after a warm-up, as call_bench.c does in C; the arguments are
// tensors made once from typed arrays.  Prints "noop US" and "add1k US".
//
//   node bindings/node/bench/bench_calls.js LIB.so [CALLS]
const loom = require('..');

function medianUs(calls, f) {
  for (let k = 0; k < Math.floor(calls / 10) + 1; k++) f();
  const batches = [];
  for (let b = 0; b < 7; b++) {
    const start = process.hrtime.bigint();
    for (let k = 0; k < calls; k++) f();
    batches.push(Number(process.hrtime.bigint() - start) / 1e3 / calls);
  }
  batches.sort((a, b) => a - b);
  return batches[3];
}

const calls = Number(process.argv[3] || 20000);
const lib = loom.load(process.argv[2]);
const noop = lib.function('noop');
const add = lib.function('add1k');
const x = new Float32Array(1024).map((_, k) => k);
const y = new Float32Array(1024).fill(1);
const x1 = loom.tensor(x.subarray(0, 1), [1]);
const tx = loom.tensor(x, [1024]);
const ty = loom.tensor(y, [1024]);
const a = medianUs(calls, () => noop.call(x1).dispose());
const b = medianUs(calls, () => add.call(tx, ty).dispose());
console.log(`noop ${a.toFixed(3)}\nadd1k ${b.toFixed(3)}`);
