'use strict';
// Loom from JavaScript (docs/languages.md): run libraries Loom exported,
// through its stable C API, with the runtime library alone.  The addon
// loom.node (src/loom_node.c) is built by CMake into build/lib; set
// LOOM_NODE_ADDON to use another.
//
//   const loom = require('loom');
//   const lib = loom.load('mlp.so');
//   const y = lib.function('main').call(loom.tensor(x, [64, 784]), ...);
//   y.shape; y.dtype; y.data();          // [64, 10], 'float32', Float32Array
//   y.dispose();                         // or let the collector do it
const path = require('path');

const addon = require(process.env.LOOM_NODE_ADDON || path.join(__dirname, '..', '..', 'build', 'lib', 'loom.node'));

// One counted reference to a Loom object; dispose() gives it back now, the
// collector gives it back otherwise.
class Handle {
  constructor(raw) {
    this._raw = raw;
  }
  dispose() {
    addon.dispose(this._raw);
  }
  get useCount() {
    return addon.useCount(this._raw);
  }
}

class Tensor extends Handle {
  get shape() {
    return addon.shape(this._raw);
  }
  get dtype() {
    return addon.dtype(this._raw);
  }
  // A typed array holding a copy of the elements.
  data() {
    return addon.data(this._raw);
  }
}

function wrapResult(value) {
  if (value === null || typeof value !== 'object') return value;
  switch (value.kind) {
    case 'tensor':
      return new Tensor(value);
    case 'function':
      return new LoomFunction(value);
    case 'module':
      return new Module(value);
    default:
      return new Handle(value);
  }
}

class LoomFunction extends Handle {
  // Arguments: Tensors (or other handles), numbers (an integer is an
  // int64, else a double), BigInts, booleans, strings, null.
  call(...args) {
    return wrapResult(addon.call(this._raw, args.map((a) => (a instanceof Handle ? a._raw : a))));
  }
}

class Module extends Handle {
  function(name) {
    return new LoomFunction(addon.getFunction(this._raw, name));
  }
  functionNames() {
    const text = addon.functionNames(this._raw);
    return text ? text.replace(/\n$/, '').split('\n') : [];
  }
}

// Loads an exported library, loading the runtime halves it names.
function load(file) {
  return new Module(addon.load(file));
}

// A CPU tensor holding a copy of a typed array (Float32Array, Float64Array,
// Int32Array, BigInt64Array, Uint8Array) of the given shape.
function tensor(typed, shape) {
  return new Tensor(addon.tensor(typed, shape));
}

function globalFunction(name) {
  const raw = addon.globalFunction(name);
  if (raw === null) throw new Error(`no global function named '${name}'`);
  return new LoomFunction(raw);
}

module.exports = { load, tensor, globalFunction, Handle, Tensor, Function: LoomFunction, Module };
