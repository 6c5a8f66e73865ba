"""Generates text ids from a small LLaMA with random weights (docs/llm.md).

    PYTHONPATH=python /usr/bin/python3 examples/llm/generate.py [--tokens 48] [--threads 2]

Random weights make the tokens meaningless; the point is the path: a
Hugging Face configuration and weights under Hugging Face's names, one
compiled module, a KV cache, greedy decoding streamed token by token, and
the tokens per second of prefill and decode.
"""
import argparse
import time
from pathlib import Path

import numpy as np

import loom
import loom.llm as llm

ROOT = Path(__file__).resolve().parents[2]

CONFIG = {"model_type": "llama", "vocab_size": 2048, "hidden_size": 256, "intermediate_size": 688,
          "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 4, "rms_norm_eps": 1e-5,
          "rope_theta": 10000.0, "max_position_embeddings": 256, "tie_word_embeddings": True}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=48, help="new tokens to generate")
    ap.add_argument("--threads", type=int, default=0, help="runtime threads (0: one per core)")
    args = ap.parse_args()
    loom.runtime.set_num_threads(args.threads)

    rng = np.random.default_rng(0)
    weights = {name: (np.ones(shape) if name.endswith("norm.weight") else 0.05 * rng.standard_normal(shape))
               .astype(np.float32) for name, shape in llm.parse_config(CONFIG).parameters().items()}
    print(f"a LLaMA of {sum(w.size for w in weights.values()) / 1e6:.1f} M parameters, random weights")
    t = time.perf_counter()
    engine = llm.compile(CONFIG, weights, config=str(ROOT / "configs" / "host.yaml"))
    print(f"compiled in {time.perf_counter() - t:.1f} s")

    prompt = rng.integers(0, CONFIG["vocab_size"], 16)
    stamps = []

    def show(token):  # called with each token as it comes
        stamps.append(time.perf_counter())
        print(token, end=" ", flush=True)

    t = time.perf_counter()
    tokens = engine.generate(prompt, args.tokens, callback=show)
    print()
    print(f"prompt of {len(prompt)} tokens + first token: {(stamps[0] - t) * 1e3:.1f} ms")
    if len(tokens) > 1:
        print(f"decode: {(len(tokens) - 1) / (stamps[-1] - stamps[0]):.0f} tokens/s")


if __name__ == "__main__":
    main()
