"""Graph builders for decoder LLMs (docs/llm.md, "The compiled module").

A model configuration (Hugging Face's config.json keys) becomes a Model:
its architecture, sizes and the parameter shapes it expects under Hugging
Face's names.  build_module() makes the IRModule: `prefill(ids, positions,
rows, cache)`, `decode(ids, positions, cache)` and `metadata()`, over a
flat batch of n tokens (n symbolic), the weights as constants shared by
both functions, attention through runtime.kv_cache.attention."""
import json
import math

import numpy as np

from .. import graph, ir, op, tir

ARCHITECTURES = ("llama", "gpt2")
_LLAMA_ALIASES = {"llama": "llama", "mistral": "llama"}


class Model:
    """What a configuration says about a model's shape."""

    def __init__(self, arch, vocab, hidden, layers, heads, kv_heads, head_dim, inter, eps, max_positions,
                 rope_theta=10000.0, tie=False, activation="silu", attention_bias=False):
        self.arch, self.vocab, self.hidden, self.layers = arch, vocab, hidden, layers
        self.heads, self.kv_heads, self.head_dim, self.inter = heads, kv_heads, head_dim, inter
        self.eps, self.max_positions, self.rope_theta, self.tie = eps, max_positions, rope_theta, tie
        self.activation, self.attention_bias = activation, attention_bias

    def metadata(self):
        return {k: v for k, v in vars(self).items()}

    @staticmethod
    def from_metadata(meta):
        """(Model, quantize, weight bytes) from a compiled module's metadata."""
        meta = dict(meta)
        quantize, nbytes = meta.pop("quantize", None), meta.pop("weight_bytes", 0)
        return Model(**meta), quantize, nbytes

    def parameters(self):
        """{Hugging Face name: shape} of every parameter the model reads."""
        d, hd, out = self.hidden, self.head_dim, {}
        if self.arch == "llama":
            out["model.embed_tokens.weight"] = (self.vocab, d)
            for i in range(self.layers):
                p = f"model.layers.{i}."
                out[p + "input_layernorm.weight"] = (d,)
                out[p + "post_attention_layernorm.weight"] = (d,)
                for name, rows in (("q", self.heads * hd), ("k", self.kv_heads * hd), ("v", self.kv_heads * hd)):
                    out[p + f"self_attn.{name}_proj.weight"] = (rows, d)
                    if self.attention_bias:
                        out[p + f"self_attn.{name}_proj.bias"] = (rows,)
                out[p + "self_attn.o_proj.weight"] = (d, self.heads * hd)
                if self.attention_bias:
                    out[p + "self_attn.o_proj.bias"] = (d,)
                out[p + "mlp.gate_proj.weight"] = (self.inter, d)
                out[p + "mlp.up_proj.weight"] = (self.inter, d)
                out[p + "mlp.down_proj.weight"] = (d, self.inter)
            out["model.norm.weight"] = (d,)
            if not self.tie:
                out["lm_head.weight"] = (self.vocab, d)
        else:
            out["transformer.wte.weight"] = (self.vocab, d)
            out["transformer.wpe.weight"] = (self.max_positions, d)
            for i in range(self.layers):
                p = f"transformer.h.{i}."
                for ln in ("ln_1", "ln_2"):
                    out[p + ln + ".weight"] = (d,)
                    out[p + ln + ".bias"] = (d,)
                out[p + "attn.c_attn.weight"] = (d, 3 * d)
                out[p + "attn.c_attn.bias"] = (3 * d,)
                out[p + "attn.c_proj.weight"] = (d, d)
                out[p + "attn.c_proj.bias"] = (d,)
                out[p + "mlp.c_fc.weight"] = (d, self.inter)
                out[p + "mlp.c_fc.bias"] = (self.inter,)
                out[p + "mlp.c_proj.weight"] = (self.inter, d)
                out[p + "mlp.c_proj.bias"] = (d,)
            out["transformer.ln_f.weight"] = (d,)
            out["transformer.ln_f.bias"] = (d,)
        return out


def _need(cfg, key, kind=int, default=None):
    value = cfg.get(key, default)
    if value is None:
        raise ValueError(f"model configuration: {key!r} is missing")
    if kind is int and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
        raise ValueError(f"model configuration: {key!r} must be a positive int, got {value!r}")
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ValueError(f"model configuration: {key!r} must be a positive number, got {value!r}")
        value = float(value)
    return value


def parse_config(cfg):
    """A Model from a config.json dict (or the path of one)."""
    if not isinstance(cfg, dict):
        with open(cfg) as f:
            cfg = json.load(f)
    model_type = cfg.get("model_type")
    if model_type in _LLAMA_ALIASES:
        if cfg.get("rope_scaling"):
            raise ValueError(f"model configuration: rope_scaling {cfg['rope_scaling']!r} is not supported "
                             "(plain rotary embeddings only)")
        act = cfg.get("hidden_act", "silu")
        if act != "silu":
            raise ValueError(f"model configuration: hidden_act {act!r} is not supported for llama (silu)")
        hidden, heads = _need(cfg, "hidden_size"), _need(cfg, "num_attention_heads")
        kv_heads = _need(cfg, "num_key_value_heads", default=heads)
        if hidden % heads and "head_dim" not in cfg:
            raise ValueError(f"model configuration: hidden_size {hidden} is not a multiple of "
                             f"num_attention_heads {heads}")
        if heads % kv_heads:
            raise ValueError(f"model configuration: num_attention_heads {heads} is not a multiple of "
                             f"num_key_value_heads {kv_heads}")
        head_dim = _need(cfg, "head_dim", default=hidden // heads)
        if head_dim % 2:
            raise ValueError(f"model configuration: the head dimension {head_dim} must be even (rotary embeddings)")
        return Model("llama", _need(cfg, "vocab_size"), hidden, _need(cfg, "num_hidden_layers"), heads, kv_heads,
                     head_dim, _need(cfg, "intermediate_size"), _need(cfg, "rms_norm_eps", float, 1e-6),
                     _need(cfg, "max_position_embeddings", default=2048), _need(cfg, "rope_theta", float, 10000.0),
                     bool(cfg.get("tie_word_embeddings", False)), "silu", bool(cfg.get("attention_bias", False)))
    if model_type == "gpt2":
        hidden, heads = _need(cfg, "n_embd"), _need(cfg, "n_head")
        if hidden % heads:
            raise ValueError(f"model configuration: n_embd {hidden} is not a multiple of n_head {heads}")
        act = cfg.get("activation_function", "gelu_new")
        if act not in ("gelu_new", "gelu", "gelu_pytorch_tanh"):
            raise ValueError(f"model configuration: activation_function {act!r} is not supported "
                             "(gelu_new, gelu_pytorch_tanh, gelu)")
        inter = cfg.get("n_inner") or 4 * hidden
        return Model("gpt2", _need(cfg, "vocab_size"), hidden, _need(cfg, "n_layer"), heads, heads, hidden // heads,
                     inter, _need(cfg, "layer_norm_epsilon", float, 1e-5), _need(cfg, "n_positions", default=1024),
                     tie=True, activation="gelu" if act == "gelu" else "gelu_tanh")
    raise ValueError(f"model configuration: model_type {model_type!r} is not supported "
                     f"(llama, mistral, gpt2)")


def _as_numpy(value, name):
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu().float().numpy()
    try:
        return np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError) as e:
        raise ValueError(f"weights: {name!r} is not an array of numbers: {e}") from None


_IGNORED = ("attn.bias", "attn.masked_bias", "rotary_emb.inv_freq")


def check_weights(model, weights):
    """{name: float32 array} of exactly the parameters the model reads."""
    if not isinstance(weights, dict):
        from . import _safetensors
        weights = _safetensors.read(weights)
    if model.arch == "gpt2" and not any(k.startswith("transformer.") for k in weights):
        weights = {"transformer." + k: v for k, v in weights.items()}  # GPT2Model's names
    want = model.parameters()
    out = {}
    for name, shape in want.items():
        if name not in weights:
            raise ValueError(f"weights: {name!r} is missing (shape {shape})")
        a = _as_numpy(weights[name], name)
        if a.shape != shape:
            raise ValueError(f"weights: {name!r} has shape {a.shape}; the configuration gives {shape}")
        if not np.isfinite(a).all():
            raise ValueError(f"weights: {name!r} holds NaN or infinite values")
        out[name] = a
    tied = ("lm_head.weight",) if model.tie else ()
    unused = sorted(k for k in weights if k not in want and k not in tied and not k.endswith(_IGNORED))
    if unused:
        raise ValueError(f"weights: {len(unused)} parameters the configuration does not use, such as "
                         f"{unused[0]!r} (a misspelt name, or a configuration of another model?)")
    return out


def _rms_norm(x, w, eps):
    var = op.mean(op.multiply(x, x), axis=[-1], keepdims=True)
    return op.multiply(op.multiply(x, op.rsqrt(op.add(var, graph.Constant(np.float32(eps))))), w)


def _rotate(x, cos, sin, half):
    # x (n, heads, d) * cos + rotate_half(x) * sin, with cos and sin (n, 1, d).
    first = op.slice(x, begin=[0], end=[half], axes=[2])
    second = op.slice(x, begin=[half], end=[2 * half], axes=[2])
    rotated = op.concat(op.neg(second), first, axis=2)
    return op.add(op.multiply(x, cos), op.multiply(rotated, sin))


def _gelu_tanh(x):
    c = graph.Constant(np.float32(math.sqrt(2.0 / math.pi)))
    inner = op.multiply(c, op.add(x, op.multiply(graph.Constant(np.float32(0.044715)), op.multiply(x, op.multiply(x, x)))))
    return op.multiply(op.multiply(graph.Constant(np.float32(0.5)), x),
                       op.add(graph.Constant(np.float32(1.0)), op.tanh(inner)))


def _cols(x, begin, end):
    return op.slice(x, begin=[begin], end=[end], axes=[1])


QUANTIZATIONS = (None, "int8", "int4")
GROUP = 32  # int4: elements along K per scale


def quantize_matrix(w, mode, name="a weight"):
    """A float (N, K) weight in `mode`'s storage: int8 (N, K) with a float
    scale per row (max |w| / 127), or int4: groups of GROUP along K, each
    with a float scale (max |w| / 7) and nibbles q + 8 (q in [-8, 7]),
    byte b of a group holding element b (low) and b + GROUP/2 (high)."""
    w = np.asarray(w, dtype=np.float32)
    if mode == "int8":
        scale = np.abs(w).max(axis=1) / 127.0
        scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
        return np.clip(np.rint(w / scale[:, None]), -127, 127).astype(np.int8), scale
    n, k = w.shape
    if k % GROUP:
        raise ValueError(f"quantize='int4': {name} {w.shape} has {k} columns (its input dimension), not a "
                         f"multiple of the group size {GROUP}")
    g = w.reshape(n, k // GROUP, GROUP)
    scale = np.abs(g).max(axis=2) / 7.0
    scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
    q = (np.clip(np.rint(g / scale[..., None]), -8, 7).astype(np.int16) + 8).astype(np.uint8)
    half = GROUP // 2
    packed = q[..., :half] | (q[..., half:] << 4)
    return packed.reshape(n, k // 2), scale


def dequantize_matrix(stored, mode):
    """The float weight a quantized one stands for (what the kernels compute with)."""
    if mode == "int8":
        q, scale = stored
        return q.astype(np.float32) * scale[:, None]
    packed, scale = stored
    n = packed.shape[0]
    g = packed.reshape(n, -1, GROUP // 2)
    q = np.concatenate([g & 15, g >> 4], axis=2).astype(np.float32) - 8.0
    return (q * scale[..., None]).reshape(n, -1)


def dequantized(model, weights, mode):
    """{name: float32 array}: `weights` (checked) with every matrix the
    model multiplies by replaced by its dequantized `mode` form."""
    out = dict(weights)
    if mode is None:
        return out
    for name, a in weights.items():
        if a.ndim == 2 and name != "transformer.wpe.weight":
            conv1d = model.arch == "gpt2" and not name.startswith("transformer.wte")
            m = a.T if conv1d else a
            d = dequantize_matrix(quantize_matrix(m, mode), mode)
            out[name] = np.ascontiguousarray(d.T if conv1d else d)
    return out


class _Matrix:
    """A weight (N, K) as the graph reads it: float32, or int8/int4 with
    its scales, applied by dense() (x @ W^T) and, for an embedding table,
    rows()."""

    def __init__(self, w, mode, name):
        self.mode = mode
        if mode is None:
            self.w = graph.Constant(np.ascontiguousarray(w, dtype=np.float32))
            self.nbytes = w.size * 4
        else:
            stored = quantize_matrix(w, mode, name)
            self.w, self.scale = graph.Constant(stored[0]), graph.Constant(stored[1])
            self.nbytes = stored[0].nbytes + stored[1].nbytes

    def dense(self, x):
        if self.mode is None:
            return op.dense(x, self.w)
        if self.mode == "int8":
            return op.multiply(op.dense_int8(x, self.w), self.scale)
        return op.dense_int4(x, self.w, self.scale, group_size=GROUP)

    def rows(self, ids, width):
        """The rows at `ids`, as float32 (n, width); only those rows are dequantized."""
        if self.mode is None:
            return op.take(self.w, ids, axis=0)
        q, scale = op.take(self.w, ids, axis=0), op.take(self.scale, ids, axis=0)
        if self.mode == "int8":
            return op.multiply(op.cast(q, dtype="float32"), op.expand_dims(scale, axis=1))
        half = GROUP // 2
        low = op.reshape(op.bitwise_and(q, graph.Constant(np.uint8(15))), shape=[-1, width // GROUP, half])
        high = op.reshape(op.right_shift(q, graph.Constant(np.uint8(4))), shape=[-1, width // GROUP, half])
        nibbles = op.subtract(op.cast(op.concat(low, high, axis=2), dtype="float32"), graph.Constant(np.float32(8)))
        return op.reshape(op.multiply(nibbles, op.expand_dims(scale, axis=2)), shape=[-1, width])


class _Builder:
    """The weights as graph constants, made once so that both functions
    share them."""

    def __init__(self, model, w, quantize=None):
        self.m, c = model, {}
        const = lambda a: graph.Constant(np.ascontiguousarray(a, dtype=np.float32))
        mat = lambda name, a=None: _Matrix(w[name] if a is None else a, quantize, name)
        if model.arch == "llama":
            c["embed"] = mat("model.embed_tokens.weight")
            for i in range(model.layers):
                p = f"model.layers.{i}."
                c[i, "ln1"] = const(w[p + "input_layernorm.weight"])
                c[i, "ln2"] = const(w[p + "post_attention_layernorm.weight"])
                c[i, "qkv"] = mat(p + "self_attn.q_proj.weight",
                                  np.concatenate([w[p + f"self_attn.{n}_proj.weight"] for n in "qkv"]))
                if model.attention_bias:
                    c[i, "qkv_b"] = const(np.concatenate([w[p + f"self_attn.{n}_proj.bias"] for n in "qkv"]))
                    c[i, "o_b"] = const(w[p + "self_attn.o_proj.bias"])
                c[i, "o"] = mat(p + "self_attn.o_proj.weight")
                c[i, "gate_up"] = mat(p + "mlp.gate_proj.weight",
                                      np.concatenate([w[p + "mlp.gate_proj.weight"], w[p + "mlp.up_proj.weight"]]))
                c[i, "down"] = mat(p + "mlp.down_proj.weight")
            c["norm"] = const(w["model.norm.weight"])
            c["head"] = c["embed"] if model.tie else mat("lm_head.weight")
            half = model.head_dim // 2
            inv = 1.0 / (model.rope_theta ** (np.arange(0, 2 * half, 2, dtype=np.float64) / (2 * half)))
            freqs = np.outer(np.arange(model.max_positions, dtype=np.float64), inv)
            angles = np.concatenate([freqs, freqs], axis=1)
            c["cos"], c["sin"] = const(np.cos(angles)), const(np.sin(angles))
        else:
            c["embed"] = mat("transformer.wte.weight")
            c["pos"] = const(w["transformer.wpe.weight"])
            for i in range(model.layers):
                p = f"transformer.h.{i}."
                for ln in ("ln_1", "ln_2"):
                    c[i, ln] = const(w[p + ln + ".weight"])
                    c[i, ln + "_b"] = const(w[p + ln + ".bias"])
                for name in ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"):
                    c[i, name] = mat(p + name + ".weight", w[p + name + ".weight"].T)  # Conv1D stores (in, out)
                    c[i, name + "_b"] = const(w[p + name + ".bias"])
            c["norm"], c["norm_b"] = const(w["transformer.ln_f.weight"]), const(w["transformer.ln_f.bias"])
            c["head"] = c["embed"]
        self.c = c
        self.nbytes = sum(v.nbytes if isinstance(v, _Matrix) else v.data.numpy().nbytes for v in
                          {id(v): v for v in c.values()}.values())
        self.scale = graph.Constant(np.float64(1.0 / math.sqrt(model.head_dim)))
        self.layer_ids = [graph.Constant(np.int64(i)) for i in range(model.layers)]

    def attention(self, cache, layer, q, k, v, n):
        m = self.m
        out = ir.TensorType((n, m.heads, m.head_dim), "float32")
        a = graph.call_packed("runtime.kv_cache.attention", [cache, self.layer_ids[layer], q, k, v, self.scale], out)
        return op.reshape(a, shape=[-1, m.heads * m.head_dim])

    def hidden(self, ids, positions, cache, n):
        """The final hidden states (n, hidden) of a flat batch of tokens."""
        m, c = self.m, self.c
        hd, qd, kd = m.head_dim, m.heads * m.head_dim, m.kv_heads * m.head_dim
        h = c["embed"].rows(ids, m.hidden)
        if m.arch == "llama":
            cos = op.expand_dims(op.take(c["cos"], positions, axis=0), axis=1)
            sin = op.expand_dims(op.take(c["sin"], positions, axis=0), axis=1)
            for i in range(m.layers):
                x = _rms_norm(h, c[i, "ln1"], m.eps)
                qkv = c[i, "qkv"].dense(x)
                if m.attention_bias:
                    qkv = op.add(qkv, c[i, "qkv_b"])
                q = _rotate(op.reshape(_cols(qkv, 0, qd), shape=[-1, m.heads, hd]), cos, sin, hd // 2)
                k = _rotate(op.reshape(_cols(qkv, qd, qd + kd), shape=[-1, m.kv_heads, hd]), cos, sin, hd // 2)
                v = op.reshape(_cols(qkv, qd + kd, qd + 2 * kd), shape=[-1, m.kv_heads, hd])
                o = c[i, "o"].dense(self.attention(cache, i, q, k, v, n))
                if m.attention_bias:
                    o = op.add(o, c[i, "o_b"])
                h = op.add(h, o)
                x = _rms_norm(h, c[i, "ln2"], m.eps)
                gate_up = c[i, "gate_up"].dense(x)
                act = op.multiply(op.silu(_cols(gate_up, 0, m.inter)), _cols(gate_up, m.inter, 2 * m.inter))
                h = op.add(h, c[i, "down"].dense(act))
            return _rms_norm(h, c["norm"], m.eps)
        h = op.add(h, op.take(c["pos"], positions, axis=0))
        act = op.gelu if m.activation == "gelu" else _gelu_tanh
        d = m.hidden
        for i in range(m.layers):
            x = op.layer_norm(h, c[i, "ln_1"], c[i, "ln_1_b"], epsilon=m.eps)
            qkv = op.add(c[i, "attn.c_attn"].dense(x), c[i, "attn.c_attn_b"])
            q, k, v = (op.reshape(_cols(qkv, j * d, (j + 1) * d), shape=[-1, m.heads, hd]) for j in range(3))
            a = self.attention(cache, i, q, k, v, n)
            h = op.add(h, op.add(c[i, "attn.c_proj"].dense(a), c[i, "attn.c_proj_b"]))
            x = op.layer_norm(h, c[i, "ln_2"], c[i, "ln_2_b"], epsilon=m.eps)
            f = act(op.add(c[i, "mlp.c_fc"].dense(x), c[i, "mlp.c_fc_b"]))
            h = op.add(h, op.add(c[i, "mlp.c_proj"].dense(f), c[i, "mlp.c_proj_b"]))
        return op.layer_norm(h, c["norm"], c["norm_b"], epsilon=m.eps)


def build_module(model, weights, quantize=None):
    """The module, and the bytes of the weights it holds."""
    b = _Builder(model, weights, quantize)

    def inputs(size):
        ids = graph.Var("ids", shape=(size,), dtype="int64")
        positions = graph.Var("positions", shape=(size,), dtype="int64")
        return ids, positions, graph.Var("cache", ir.OpaqueType("kv_cache"))

    n, r = tir.Var("n"), tir.Var("r")
    ids, positions, cache = inputs(n)
    rows = graph.Var("rows", shape=(r,), dtype="int64")
    last = op.take(b.hidden(ids, positions, cache, n), rows, axis=0)
    prefill = graph.Function([ids, positions, rows, cache], b.c["head"].dense(last))
    nb = tir.Var("b")
    ids, positions, cache = inputs(nb)
    decode = graph.Function([ids, positions, cache], b.c["head"].dense(b.hidden(ids, positions, cache, nb)))
    info = dict(model.metadata(), quantize=quantize, weight_bytes=int(b.nbytes))
    meta = np.frombuffer(json.dumps(info).encode("utf-8"), dtype=np.uint8).copy()
    metadata = graph.Function([], graph.Constant(meta))
    return ir.IRModule({"prefill": prefill, "decode": decode, "metadata": metadata}), b.nbytes
