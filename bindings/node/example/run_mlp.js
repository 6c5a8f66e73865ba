'use strict';
// Runs the MLP example built for the CPU and prints its output:
//
//   build/bin/loomc build examples/mlp.loom --config configs/host.yaml -o /tmp/mlp.so
//   node bindings/node/example/run_mlp.js /tmp/mlp.so
//
// The inputs are seeded pseudo-random numbers (the same in every run).
const loom = require('..');

const shapes = [[64, 784], [512, 784], [512], [512, 512], [512], [10, 512], [10]];
let state = 1n;
const args = shapes.map((s) => {
  const n = s.reduce((a, b) => a * b, 1);
  const d = new Float32Array(n);
  for (let k = 0; k < n; k++) {
    state = (state * 6364136223846793005n + 1442695040888963407n) & ((1n << 64n) - 1n);
    d[k] = (Number(state >> 40n) / (1 << 24) - 0.5) * 0.1;
  }
  return loom.tensor(d, s);
});
try {
  const y = loom.load(process.argv[2] || 'mlp.so').function('main').call(...args);
  console.log(`output: ${y.dtype} [${y.shape}]`);
  console.log(`row 0: ${Array.from(y.data().slice(0, 10)).join(', ')}`);
} catch (e) {
  console.error(`loom: ${e.message}`);
  process.exit(1);
}
