"""Decoder LLM speed: loom.llm against PyTorch eager (docs/llm.md, "Speed").

A LLaMA-shaped model with random weights (the configuration is printed),
at 1 and 2 threads, in one run: decode tokens per second (after a prompt
of --context tokens), prefill of --prefill tokens, and the decode roofline
(weight bytes read per token / the machine's measured copy bandwidth).
PyTorch runs the same equations with its own KV cache under
torch.no_grad(), at its best thread setting (bench/peers.py).  Rounds
alternate the sides; ratios are medians of per-round ratios.

    PYTHONPATH=python /usr/bin/python3 bench/llm.py [--small] [--threads 1 2] [--rounds 5]
"""
import argparse
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers  # noqa: E402

peers.blas_at_best()

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

CONFIGS = {
    # about 123 M parameters (24.6 M of them in each of the two embeddings)
    "base": {"model_type": "llama", "vocab_size": 32000, "hidden_size": 768, "intermediate_size": 2048,
             "num_hidden_layers": 12, "num_attention_heads": 12, "num_key_value_heads": 4, "rms_norm_eps": 1e-5,
             "rope_theta": 10000.0, "max_position_embeddings": 1024, "tie_word_embeddings": False},
    "small": {"model_type": "llama", "vocab_size": 4096, "hidden_size": 256, "intermediate_size": 704,
              "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 4, "rms_norm_eps": 1e-5,
              "rope_theta": 10000.0, "max_position_embeddings": 512, "tie_word_embeddings": False},
}


def random_weights(cfg, seed=0):
    from loom.llm import parse_config
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in parse_config(cfg).parameters().items():
        if name.endswith("norm.weight"):
            out[name] = np.ones(shape, np.float32)
        else:
            out[name] = (0.02 * rng.standard_normal(shape, dtype=np.float32)).astype(np.float32)
    return out


class TorchLlama:
    """Hugging Face's LLaMA equations in PyTorch eager with a KV cache."""

    def __init__(self, cfg, weights):
        import torch
        self.torch = torch
        self.w = {k: torch.from_numpy(v) for k, v in weights.items()}
        self.heads, self.kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
        self.d = cfg["hidden_size"] // self.heads
        self.layers, self.eps = cfg["num_hidden_layers"], cfg["rms_norm_eps"]
        inv = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, self.d, 2).float() / self.d))
        freqs = torch.outer(torch.arange(cfg["max_position_embeddings"]).float(), inv)
        emb = torch.cat([freqs, freqs], dim=-1)
        self.cos, self.sin = emb.cos(), emb.sin()
        self.wqkv = [torch.cat([self.w[f"model.layers.{i}.self_attn.{n}_proj.weight"] for n in "qkv"])
                     for i in range(self.layers)]

    def rms(self, x, w):
        return w * (x * self.torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))

    def rope(self, x, cos, sin):
        half = x.shape[-1] // 2
        return x * cos + self.torch.cat([-x[..., half:], x[..., :half]], dim=-1) * sin

    def step(self, ids, cache):
        """Logits of the last token; `cache` is a list of (k, v) per layer, grown in place."""
        torch, w = self.torch, self.w
        with torch.no_grad():
            n, start = len(ids), cache[0][0].shape[1] if cache else 0
            cos, sin = self.cos[start:start + n], self.sin[start:start + n]
            x = w["model.embed_tokens.weight"][ids]
            qd, kd = self.heads * self.d, self.kv * self.d
            for i in range(self.layers):
                p = f"model.layers.{i}."
                h = self.rms(x, w[p + "input_layernorm.weight"])
                qkv = h @ self.wqkv[i].T
                q = self.rope(qkv[:, :qd].view(n, self.heads, self.d).transpose(0, 1), cos, sin)
                k = self.rope(qkv[:, qd:qd + kd].view(n, self.kv, self.d).transpose(0, 1), cos, sin)
                v = qkv[:, qd + kd:].view(n, self.kv, self.d).transpose(0, 1)
                if len(cache) > i:
                    k = torch.cat([cache[i][0], k], dim=1)
                    v = torch.cat([cache[i][1], v], dim=1)
                    cache[i] = (k, v)
                else:
                    cache.append((k, v))
                g = self.heads // self.kv
                kk, vv = k.repeat_interleave(g, dim=0), v.repeat_interleave(g, dim=0)
                a = self._attend(q, kk, vv, start)
                x = x + a.transpose(0, 1).reshape(n, qd) @ w[p + "self_attn.o_proj.weight"].T
                h = self.rms(x, w[p + "post_attention_layernorm.weight"])
                gate = torch.nn.functional.silu(h @ w[p + "mlp.gate_proj.weight"].T)
                x = x + (gate * (h @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
            x = self.rms(x[-1:], w["model.norm.weight"])
            return (x @ w["lm_head.weight"].T)[0]

    def _attend(self, q, k, v, start):
        torch = self.torch
        n, total = q.shape[1], k.shape[1]
        scores = q @ k.transpose(1, 2) / math.sqrt(self.d)
        if n > 1:
            mask = torch.arange(total)[None, :] > (start + torch.arange(n))[:, None]
            scores = scores.masked_fill(mask, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v


def copy_bandwidth():
    """Bytes per second moved (read + written) by a large copy (NumPy's, one
    thread), the best of 5."""
    a = np.ones(64 << 20, np.float32)  # 256 MB
    b = np.empty_like(a)
    best = math.inf
    for _ in range(5):
        t = time.perf_counter()
        np.copyto(b, a)
        best = min(best, time.perf_counter() - t)
    return 2 * a.nbytes / best


def read_bandwidth():
    """Bytes per second one thread reads (NumPy's sum of a large array, the
    best of 5): what a decode step, which only reads its weights, can get
    from memory on one core.  Where one core cannot read at the copy's
    rate (an Intel Xeon here: 14 GB/s read, 23 GB/s copied) the copy's
    roofline is out of reach at one thread; both are printed."""
    a = np.ones(64 << 20, np.float32)
    best = math.inf
    for _ in range(5):
        t = time.perf_counter()
        a.sum()
        best = min(best, time.perf_counter() - t)
    return a.nbytes / best


def weight_bytes_per_token(cfg):
    """Bytes of the weights one decode step reads (an embedding row only)."""
    from loom.llm import parse_config
    total = 0
    for name, shape in parse_config(cfg).parameters().items():
        n = int(np.prod(shape)) * 4
        total += cfg["hidden_size"] * 4 if name == "model.embed_tokens.weight" else n
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="a small model (a quick check, not the figure)")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--context", type=int, default=32, help="prompt tokens before timing decode")
    ap.add_argument("--decode", type=int, default=16, help="decode steps per round")
    ap.add_argument("--prefill", type=int, default=128)
    ap.add_argument("--quantize", nargs="+", default=["float32", "int8", "int4"],
                    choices=["float32", "int8", "int4"], help="Loom's weight formats (float32 always runs)")
    args = ap.parse_args()

    import loom
    import loom.llm as llm
    import torch

    if "float32" not in args.quantize:
        args.quantize.insert(0, "float32")
    cfg = CONFIGS["small" if args.small else "base"]
    weights = random_weights(cfg)
    params = sum(a.size for a in weights.values())
    print(f"model: {cfg}")
    print(f"parameters: {params / 1e6:.1f} M; BLAS: {peers.blas_kernel()}; torch {torch.__version__}")
    engines = {}
    for q in args.quantize:
        t = time.perf_counter()
        engines[q] = llm.compile(cfg, weights, config=str(ROOT / "configs" / "host.yaml"),
                                 quantize=None if q == "float32" else q)
        print(f"loom compile, {q}: {time.perf_counter() - t:.1f} s; weights {engines[q].weight_bytes / 1e6:.0f} MB")
    engine = engines["float32"]
    peer = TorchLlama(cfg, weights)
    rng = np.random.default_rng(0)
    prompt = rng.integers(0, cfg["vocab_size"], args.context)
    long_prompt = rng.integers(0, cfg["vocab_size"], args.prefill)
    wbytes = weight_bytes_per_token(cfg)
    top1 = engine.forward(long_prompt).argmax(axis=1)
    for q, e in engines.items():
        if q != "float32":
            agree = float((e.forward(long_prompt).argmax(axis=1) == top1).mean())
            print(f"top-1 agreement of {q} with float32 over {args.prefill} tokens: {agree:.1%} "
                  f"(random weights: a weak measure)")

    def decode_ms(e):
        cache = e.create_cache(capacity=args.context + args.decode + 1, max_sequences=1)
        cache.add(0)
        e.step(cache, {0: prompt})
        times, tok = [], [1]
        for _ in range(args.decode):
            s = time.perf_counter()
            tok = [int(np.argmax(e.step(cache, {0: tok})[0]))]
            times.append((time.perf_counter() - s) * 1e3)
        return statistics.median(times)

    for threads in args.threads:
        loom.runtime.set_num_threads(threads)
        setting, _ = peers.best_setting(lambda: peer.step(torch.as_tensor(long_prompt), []),
                                        peers.torch_settings(threads), lambda s: peers.torch_threads(*s), calls=2)
        bw, read_bw = copy_bandwidth(), read_bandwidth()

        def torch_decode():
            with peers.torch_threads(*setting):
                cache = []
                peer.step(torch.as_tensor(prompt), cache)
                times, tok = [], torch.tensor([1])
                for _ in range(args.decode):
                    s = time.perf_counter()
                    tok = torch.argmax(peer.step(tok, cache)).reshape(1)
                    times.append((time.perf_counter() - s) * 1e3)
                return statistics.median(times)

        def loom_prefill():
            cache = engine.create_cache(capacity=args.prefill, max_sequences=1)
            cache.add(0)
            s = time.perf_counter()
            engine.step(cache, {0: long_prompt})
            return (time.perf_counter() - s) * 1e3

        def torch_prefill():
            with peers.torch_threads(*setting):
                s = time.perf_counter()
                peer.step(torch.as_tensor(long_prompt), [])
                return (time.perf_counter() - s) * 1e3

        sides = {f"decode {q}": (lambda e=e: decode_ms(e)) for q, e in engines.items()}
        sides.update({"decode torch": torch_decode, "prefill loom": loom_prefill, "prefill torch": torch_prefill})
        for f in sides.values():
            f()  # warm up
        # One call per side and round (a side times its own decode steps),
        # the order rotating, a pause before each (peers.alternate).
        times = peers.alternate({name: (lambda k, f=f: [f() for _ in range(k)]) for name, f in sides.items()},
                                args.rounds, 1)

        def ratio(a, b):  # the median of per-round ratios b / a
            return statistics.median(y / x for x, y in zip(times[a], times[b]))

        med = {name: statistics.median(t) for name, t in times.items()}
        print(f"\nthreads {threads} (PyTorch intra-op, OpenBLAS: {setting}); copy bandwidth {bw / 1e9:.1f} GB/s")
        print(f"  decode torch: {med['decode torch']:7.2f} ms/token ({1e3 / med['decode torch']:6.1f} tok/s)")
        for q, e in engines.items():
            name = f"decode {q}"
            per_token = wbytes * e.weight_bytes / engine.weight_bytes  # the matrices shrink alike
            roof = per_token / bw * 1e3
            extra = "" if q == "float32" else f"; {ratio(name, 'decode float32'):.2f}x float32 Loom"
            print(f"  decode loom {q:7s}: {med[name]:7.2f} ms/token ({1e3 / med[name]:6.1f} tok/s); "
                  f"{ratio(name, 'decode torch'):.2f}x PyTorch{extra}; roofline {roof:.1f} ms "
                  f"({per_token / 1e6:.0f} MB/token): {roof / med[name]:.0%}"
                  + (f" (of one thread's read bandwidth, {read_bw / 1e9:.1f} GB/s: "
                     f"{per_token / read_bw * 1e3 / med[name]:.0%})" if threads == 1 else ""))
        print(f"  prefill {args.prefill}: loom {med['prefill loom']:7.1f} ms, torch {med['prefill torch']:7.1f} ms; "
              f"loom speed-up {ratio('prefill loom', 'prefill torch'):.2f}x")

if __name__ == "__main__":
    main()
