'use strict';
// Runs an exported library's main on float32 .npy inputs and writes the
// output's elements (float32, C order, no header) to a file: the Node side
// of tests/bindings/agreement.sh, which compares six languages' runs bit by
// bit.
//
//   node bindings/node/example/run_npy.js LIB.so OUT.f32 INPUT.npy...
const fs = require('fs');
const loom = require('..');

// A C-ordered little-endian float32 .npy file as a tensor.
function readNpy(path) {
  const b = fs.readFileSync(path);
  if (b.length < 10 || b.readUInt8(0) !== 0x93 || b.toString('latin1', 1, 6) !== 'NUMPY') {
    throw new Error(`${path}: not a .npy file`);
  }
  const [n, start] = b[6] === 1 ? [b.readUInt16LE(8), 10] : [b.readUInt32LE(8), 12];
  const header = b.toString('latin1', start, start + n);
  if (!header.includes("'descr': '<f4'") || !header.includes("'fortran_order': False")) {
    throw new Error(`${path}: not a C-ordered little-endian float32 array`);
  }
  const shape = header.split("'shape': (")[1].split(')')[0].split(',').map((s) => s.trim()).filter((s) => s)
    .map(Number);
  const bytes = b.subarray(start + n);
  const data = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  return loom.tensor(data, shape);
}

try {
  const [lib, out, ...inputs] = process.argv.slice(2);
  const y = loom.load(lib).function('main').call(...inputs.map(readNpy));
  fs.writeFileSync(out, Buffer.from(y.data().buffer));
} catch (e) {
  console.error(`loom: ${e.message}`);
  process.exit(1);
}
