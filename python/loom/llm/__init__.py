"""Decoder LLMs: LLaMA and GPT-2 models from Hugging Face weights, a KV
cache in the runtime, generation (docs/llm.md).

    engine = loom.llm.compile(config, weights, config="configs/host.yaml")
    engine.forward(ids)                      # logits of every position
    engine.generate(ids, max_new_tokens=32)  # new token ids
    engine.export("model.so"); loom.llm.load("model.so")
"""
import json

import numpy as np

from .. import runtime as _runtime
from ._models import QUANTIZATIONS, Model, build_module, check_weights, dequantized, parse_config
from ._safetensors import read as read_safetensors, write as write_safetensors

__all__ = ["compile", "load", "Engine", "KVCache", "read_safetensors", "write_safetensors", "parse_config",
           "dequantized_weights"]


def _fn(name):
    return _runtime.get_global_func("runtime.kv_cache." + name)


class KVCache:
    """Keys and values of every layer for several sequences (docs/llm.md,
    "The KV cache"): contiguous per sequence, `capacity` tokens each."""

    def __init__(self, layers, kv_heads, head_dim, capacity, max_sequences=8):
        self.handle = _fn("create")(int(layers), int(kv_heads), int(head_dim), int(capacity), int(max_sequences))
        self.layers, self.kv_heads, self.head_dim = int(layers), int(kv_heads), int(head_dim)
        self.capacity, self.max_sequences = int(capacity), int(max_sequences)

    def add(self, seq):
        _fn("add_sequence")(self.handle, int(seq))

    def remove(self, seq):
        _fn("remove_sequence")(self.handle, int(seq))

    def fork(self, parent, child, length=None):
        """`child` starts as the first `length` tokens of `parent` (all by default)."""
        _fn("fork_sequence")(self.handle, int(parent), int(child), -1 if length is None else int(length))

    def pop(self, seq, n):
        """Drops the last `n` tokens of `seq`."""
        _fn("pop_tokens")(self.handle, int(seq), int(n))

    def length(self, seq):
        return _fn("sequence_length")(self.handle, int(seq))

    def sequences(self):
        return list(_fn("sequences")(self.handle))

    def read(self, seq, layer, values=False):
        """A copy of the keys (or values) `seq` holds in `layer`: (kv_heads, length, head_dim)."""
        return _fn("read")(self.handle, int(seq), int(layer), bool(values)).numpy()

    def begin_step(self, seqs, counts):
        _fn("begin_step")(self.handle, [int(s) for s in seqs], [int(c) for c in counts])

    def end_step(self):
        _fn("end_step")(self.handle)


def _ids(tokens, what):
    a = np.asarray(tokens)
    if a.ndim != 1 or a.size == 0 or not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"{what}: expected a non-empty 1-D sequence of token ids, got shape {a.shape} {a.dtype}")
    return a.astype(np.int64)


class Engine:
    """A compiled model: its library's `prefill` and `decode` functions and
    the KV caches they run over."""

    def __init__(self, library, model, quantize=None, weight_bytes=0):
        self.library, self.model = library, model
        self.quantize, self.weight_bytes = quantize, weight_bytes  # the weights' storage and its bytes
        self._prefill, self._decode = library["prefill"], library["decode"]

    @property
    def config(self):
        return dict(self.model.metadata(), quantize=self.quantize)

    def create_cache(self, capacity=None, max_sequences=8):
        """A KV cache for this model (capacity: tokens per sequence, default
        the model's maximum position)."""
        m = self.model
        capacity = m.max_positions if capacity is None else min(int(capacity), m.max_positions)
        return KVCache(m.layers, m.kv_heads, m.head_dim, capacity, max_sequences)

    def _check_tokens(self, ids, what):
        bad = (ids < 0) | (ids >= self.model.vocab)
        if bad.any():
            raise ValueError(f"{what}: token id {int(ids[bad][0])} is outside the vocabulary [0, {self.model.vocab})")

    def step(self, cache, tokens, all_logits=False):
        """Runs one step over several sequences: `tokens` maps each sequence
        id of `cache` to its new token ids.  Returns {seq: logits}, the last
        token's (vocab,) row, or every new token's (count, vocab) rows with
        all_logits."""
        if not isinstance(tokens, dict) or not tokens:
            raise ValueError(f"step: expected a non-empty dict of sequence id -> token ids, got {tokens!r}")
        seqs = list(tokens)
        chunks = [_ids(tokens[s], f"step: sequence {s}") for s in seqs]
        ids = np.concatenate(chunks)
        self._check_tokens(ids, "step")
        starts = [cache.length(s) for s in seqs]
        if max(st + len(c) for st, c in zip(starts, chunks)) > self.model.max_positions:
            raise ValueError(f"step: a sequence would pass the model's {self.model.max_positions} positions")
        positions = np.concatenate([np.arange(st, st + len(c), dtype=np.int64) for st, c in zip(starts, chunks)])
        ends = np.cumsum([len(c) for c in chunks])
        cache.begin_step(seqs, [len(c) for c in chunks])
        try:
            if all(len(c) == 1 for c in chunks) and not all_logits:
                logits = self._decode(ids, positions, cache.handle).numpy()
                rows = np.arange(len(seqs))
            else:
                rows = np.arange(len(ids)) if all_logits else ends - 1
                logits = self._prefill(ids, positions, rows.astype(np.int64), cache.handle).numpy()
        except BaseException:
            # The lengths stay as they were; the rows written past them are dead.
            cache.end_step()
            for s, c in zip(seqs, chunks):
                cache.pop(s, len(c))
            raise
        cache.end_step()
        if all_logits:
            return {s: logits[e - len(c):e] for s, c, e in zip(seqs, chunks, ends)}
        return {s: logits[i] for i, s in enumerate(seqs)}

    def forward(self, ids):
        """Logits (n, vocab) of every position of a prompt, from an empty cache."""
        ids = _ids(ids, "forward")
        cache = self.create_cache(capacity=len(ids), max_sequences=1)
        cache.add(0)
        return self.step(cache, {0: ids}, all_logits=True)[0]

    def generate(self, ids, max_new_tokens, do_sample=False, temperature=1.0, top_p=1.0, seed=0, callback=None,
                 eos_token_id=None):
        """New token ids after the prompt `ids` (greedy unless do_sample);
        `callback(token)` is called with each as it comes; a returned True
        stops generation."""
        ids = _ids(ids, "generate")
        max_new_tokens = int(max_new_tokens)
        if max_new_tokens < 0:
            raise ValueError(f"generate: max_new_tokens must not be negative, got {max_new_tokens}")
        if len(ids) + max_new_tokens > self.model.max_positions:
            raise ValueError(f"generate: {len(ids)} prompt tokens and {max_new_tokens} new ones pass the model's "
                             f"{self.model.max_positions} positions")
        if do_sample and not (temperature > 0 and 0 < top_p <= 1):
            raise ValueError(f"generate: sampling needs temperature > 0 and 0 < top_p <= 1, "
                             f"got {temperature} and {top_p}")
        rng = np.random.default_rng(seed)
        cache = self.create_cache(capacity=len(ids) + max_new_tokens, max_sequences=1)
        cache.add(0)
        out = []
        feed = ids
        for _ in range(max_new_tokens):
            logits = self.step(cache, {0: feed})[0]
            token = _sample(logits, do_sample, temperature, top_p, rng)
            out.append(token)
            if callback is not None and callback(token):
                break
            if eos_token_id is not None and token == eos_token_id:
                break
            feed = np.array([token], dtype=np.int64)
        return out

    def export(self, path):
        """Writes one library (code, weights, metadata) that load() and the C API run."""
        self.library.export_library(str(path))


def _sample(logits, do_sample, temperature, top_p, rng):
    if not do_sample:
        return int(np.argmax(logits))
    z = logits.astype(np.float64) / temperature
    p = np.exp(z - z.max())
    p /= p.sum()
    order = np.argsort(-p, kind="stable")
    keep = np.cumsum(p[order]) - p[order] < top_p  # the smallest prefix whose mass reaches top_p
    order = order[keep]
    q = p[order] / p[order].sum()
    return int(order[rng.choice(len(order), p=q)])


def compile(model_config, weights, config="configs/host.yaml", quantize=None):
    """Builds an Engine from a Hugging Face configuration (dict or
    config.json path) and weights (dict of arrays or torch tensors, or a
    .safetensors path)."""
    from .. import build

    if quantize not in QUANTIZATIONS:
        raise ValueError(f"quantize={quantize!r}: expected one of {', '.join(map(repr, QUANTIZATIONS))}")
    model = parse_config(model_config)
    weights = check_weights(model, weights)
    module, weight_bytes = build_module(model, weights, quantize)
    return Engine(build(module, config), model, quantize, weight_bytes)


def dequantized_weights(model_config, weights, quantize):
    """The float32 weights (Hugging Face names) that a model compiled with
    `quantize` computes with: each matrix quantized and dequantized, the
    rest as given (docs/llm.md, "Quantized weights")."""
    if quantize not in QUANTIZATIONS:
        raise ValueError(f"quantize={quantize!r}: expected one of {', '.join(map(repr, QUANTIZATIONS))}")
    model = parse_config(model_config)
    return dequantized(model, check_weights(model, weights), quantize)


def load(path):
    """An Engine from a library written by Engine.export."""
    library = _runtime.load_module(str(path))
    try:
        meta = json.loads(bytes(library["metadata"]().numpy()).decode("utf-8"))
    except Exception as e:
        raise ValueError(f"{path}: not a library written by loom.llm (its metadata: {e})") from None
    return Engine(library, *Model.from_metadata(meta))
