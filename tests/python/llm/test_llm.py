"""loom.llm against plain-PyTorch references (docs/llm.md): logits of a
prompt, greedy generation, the KV cache path against recomputing the
prefix, several sequences in one step, fork and pop, export and load, and
the errors a user meets."""
import re
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

import loom
import loom.llm as llm

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reference as ref  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
HOST = str(ROOT / "configs" / "host.yaml")
PROMPT = [3, 17, 42, 5, 77, 8, 60, 1, 33, 90, 12, 64, 29]  # 13 tokens


def close(got, want):
    """Within 1e-4 of the output's scale."""
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * scale)


@pytest.fixture(scope="module", params=["llama", "gpt2"])
def model(request):
    cfg = ref.llama_config() if request.param == "llama" else ref.gpt2_config()
    weights = ref.random_weights(cfg, seed=1)
    return cfg, weights, llm.compile(cfg, weights, config=HOST)


def test_logits_of_a_prompt(model):
    cfg, w, engine = model
    ids = [t % cfg["vocab_size"] for t in PROMPT]
    got = engine.forward(ids)
    assert got.shape == (13, cfg["vocab_size"])
    close(got, ref.logits(cfg, w, ids))


def test_greedy_generation_matches_the_reference(model):
    cfg, w, engine = model
    ids = [t % cfg["vocab_size"] for t in PROMPT]
    streamed = []
    got = engine.generate(ids, max_new_tokens=32, callback=streamed.append)
    assert got == ref.greedy(cfg, w, ids, 32)
    assert streamed == got


def test_cache_path_gives_the_logits_of_recomputing(model):
    cfg, w, engine = model
    ids = [t % cfg["vocab_size"] for t in PROMPT]
    cache = engine.create_cache(capacity=32)
    cache.add(7)
    first = engine.step(cache, {7: ids[:6]})[7]
    close(first, ref.logits(cfg, w, ids[:6])[-1])
    for i in range(6, 13):  # decode one token at a time
        got = engine.step(cache, {7: [ids[i]]})[7]
        close(got, ref.logits(cfg, w, ids[:i + 1])[-1])
    assert cache.length(7) == 13


def test_several_sequences_in_one_step(model):
    cfg, w, engine = model
    v = cfg["vocab_size"]
    a, b, c = [5, 9, 2, 40], [7, 1, 30, 11, 6, 2, 50], [v - 1]
    cache = engine.create_cache(capacity=16, max_sequences=3)
    for s in (0, 1, 2):
        cache.add(s)
    got = engine.step(cache, {2: c, 0: a, 1: b}, all_logits=True)
    for s, ids in ((0, a), (1, b), (2, c)):
        close(got[s], ref.logits(cfg, w, ids))
    # then a decode step of all three at once
    got = engine.step(cache, {0: [3], 1: [4], 2: [5]})
    for s, ids in ((0, a + [3]), (1, b + [4]), (2, c + [5])):
        close(got[s], ref.logits(cfg, w, ids)[-1])


def test_fork_and_pop_give_the_results_of_recomputing(model):
    cfg, w, engine = model
    ids = [t % cfg["vocab_size"] for t in PROMPT]
    cache = engine.create_cache(capacity=24, max_sequences=2)
    cache.add(0)
    engine.step(cache, {0: ids[:9]})
    cache.fork(0, 1, length=5)  # 1 shares 0's first five tokens
    assert (cache.length(0), cache.length(1)) == (9, 5)
    np.testing.assert_array_equal(cache.read(1, 1, values=True), cache.read(0, 1, values=True)[:, :5])
    other = [4, 8, 15]
    got = engine.step(cache, {1: other, 0: [ids[9]]}, all_logits=True)
    close(got[1], ref.logits(cfg, w, ids[:5] + other)[5:])
    close(got[0], ref.logits(cfg, w, ids[:10])[-1:])
    cache.pop(0, 4)  # back to ids[:6]
    assert cache.length(0) == 6
    got = engine.step(cache, {0: [2, 3]}, all_logits=True)[0]
    close(got, ref.logits(cfg, w, ids[:6] + [2, 3])[-2:])
    cache.remove(1)
    assert cache.sequences() == [0]


def test_export_and_load(model, tmp_path):
    cfg, w, engine = model
    path = tmp_path / "model.so"
    engine.export(path)
    again = llm.load(path)
    assert again.config == engine.config
    ids = [t % cfg["vocab_size"] for t in PROMPT[:5]]
    assert again.generate(ids, 8) == engine.generate(ids, 8)
    # both functions share one copy of the weights
    weight_bytes = sum(a.nbytes for a in w.values())
    assert path.stat().st_size < 1.5 * weight_bytes + (4 << 20)


def test_sampling_is_reproducible_and_follows_top_p(model):
    cfg, w, engine = model
    ids = [t % cfg["vocab_size"] for t in PROMPT[:4]]
    a = engine.generate(ids, 10, do_sample=True, temperature=0.8, top_p=0.9, seed=3)
    assert a == engine.generate(ids, 10, do_sample=True, temperature=0.8, top_p=0.9, seed=3)
    assert all(0 <= t < cfg["vocab_size"] for t in a)
    # a tiny top_p keeps only the most likely token: greedy
    assert engine.generate(ids, 10, do_sample=True, top_p=1e-9, seed=5) == engine.generate(ids, 10)


def test_weights_from_safetensors(tmp_path):
    cfg = ref.llama_config(num_hidden_layers=1, num_key_value_heads=4, tie_word_embeddings=True)
    w = ref.random_weights(cfg, seed=4)
    path = tmp_path / "model.safetensors"
    llm.write_safetensors(path, w, {"format": "pt"})
    back = llm.read_safetensors(path)
    assert sorted(back) == sorted(w) and all(np.array_equal(back[k], w[k]) for k in w)
    engine = llm.compile(cfg, str(path), config=HOST)
    close(engine.forward([1, 2, 3, 4]), ref.logits(cfg, w, [1, 2, 3, 4]))


def test_bfloat16_safetensors_are_widened(tmp_path):
    import json
    values = np.array([1.0, -2.5, 3.140625], np.float32)
    bits = (values.view(np.uint32) >> 16).astype("<u2").tobytes()
    header = json.dumps({"x": {"dtype": "BF16", "shape": [3], "data_offsets": [0, 6]}}).encode()
    path = tmp_path / "bf16.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + bits)
    np.testing.assert_array_equal(llm.read_safetensors(path)["x"], values)


def _file(header, data):
    return struct.pack("<Q", len(header)) + header + data


@pytest.mark.parametrize("body, message", [
    (b"\x01", "fewer than the 8 of the header length"),
    (b"\xff" * 8 + b"{}", "exceeds the file"),
    (b"\x04\x00\x00\x00\x00\x00\x00\x00nope", "the header is not JSON"),
    (_file(b'{"x":{"dtype":"F32","shape":[4],"data_offsets":[0,8]}}', bytes(8)), "do not hold 4 F32 elements"),
    (_file(b'{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', bytes(4)), "inside the 4 bytes of data"),
    (_file(b'{"x":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}}', bytes(8)), "has dtype 'Q4'"),
    (_file(b'{"x":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}', bytes(8)), "malformed shape"),
    (_file(b'[1, 2]', b""), "not a JSON object"),
])
def test_a_malformed_safetensors_file_is_refused(tmp_path, body, message):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(body)
    with pytest.raises(ValueError, match=re.escape(message)):
        llm.read_safetensors(path)


@pytest.mark.parametrize("change, message", [
    ({"model_type": "bert"}, "model_type 'bert' is not supported"),
    ({"num_key_value_heads": 3}, "num_attention_heads 4 is not a multiple of num_key_value_heads 3"),
    ({"hidden_size": None}, "'hidden_size' is missing"),
    ({"rope_scaling": {"type": "linear", "factor": 2.0}}, "rope_scaling"),
])
def test_a_bad_configuration_names_the_key(change, message):
    cfg = ref.llama_config()
    cfg.update(change)
    if cfg["hidden_size"] is None:
        del cfg["hidden_size"]
    with pytest.raises(ValueError, match=re.escape(message)):
        llm.parse_config(cfg)


def test_bad_weights_name_the_parameter():
    cfg = ref.llama_config(num_hidden_layers=1)
    w = ref.random_weights(cfg)
    missing = dict(w)
    del missing["model.layers.0.mlp.up_proj.weight"]
    with pytest.raises(ValueError, match=re.escape("'model.layers.0.mlp.up_proj.weight' is missing (shape (112, 64))")):
        llm.compile(cfg, missing)
    wrong = dict(w, **{"model.norm.weight": np.ones(63, np.float32)})
    with pytest.raises(ValueError, match=re.escape("'model.norm.weight' has shape (63,); the configuration gives (64,)")):
        llm.compile(cfg, wrong)
    extra = dict(w, **{"model.layers.0.mlp.up_prj.weight": w["model.layers.0.mlp.up_proj.weight"]})
    with pytest.raises(ValueError, match=re.escape("such as 'model.layers.0.mlp.up_prj.weight'")):
        llm.compile(cfg, extra)


def test_errors_of_a_step(model):
    cfg, w, engine = model
    cache = engine.create_cache(capacity=6, max_sequences=1)
    cache.add(0)
    engine.step(cache, {0: [1, 2, 3, 4]})
    with pytest.raises(loom.LoomError, match=re.escape("KV cache: sequence 0 would hold 7 tokens; its capacity is 6")):
        engine.step(cache, {0: [1, 2, 3]})
    assert cache.length(0) == 4  # nothing was written
    with pytest.raises(loom.LoomError, match=re.escape("no sequence 5 (the cache holds 0)")):
        engine.step(cache, {5: [1]})
    with pytest.raises(ValueError, match=re.escape(f"token id {cfg['vocab_size']} is outside the vocabulary")):
        engine.step(cache, {0: [cfg["vocab_size"]]})
    with pytest.raises(loom.LoomError, match="cannot add sequence 1: the cache holds 1 sequences, its max_sequences"):
        cache.add(1)
    with pytest.raises(loom.LoomError, match="sequence 0 holds 4 tokens; cannot pop 5"):
        cache.pop(0, 5)
    with pytest.raises(ValueError, match="pass the model's 96 positions"):
        engine.generate([1, 2], 95)
    with pytest.raises(ValueError, match="step: expected a non-empty dict of sequence id -> token ids, got {}"):
        engine.step(cache, {})
    with pytest.raises(ValueError, match=re.escape("step: sequence 0: expected a non-empty 1-D sequence of token ids")):
        engine.step(cache, {0: []})
    assert cache.length(0) == 4


def test_kv_cache_attention_against_numpy():
    # The registry function alone: two sequences, grouped-query heads.
    rng = np.random.default_rng(2)
    heads, kv, d = 6, 2, 16
    cache = llm.KVCache(layers=2, kv_heads=kv, head_dim=d, capacity=12, max_sequences=2)
    attention = loom.runtime.get_global_func("runtime.kv_cache.attention")
    cache.add(0)
    cache.add(1)
    history = {0: ([], []), 1: ([], [])}
    for counts in ((3, 5), (1, 1), (4, 2)):
        n = sum(counts)
        q = rng.standard_normal((n, heads, d)).astype(np.float32)
        k = rng.standard_normal((n, kv, d)).astype(np.float32)
        v = rng.standard_normal((n, kv, d)).astype(np.float32)
        cache.begin_step([0, 1], counts)
        got = attention(cache.handle, 1, q, k, v, 0.25).numpy()
        cache.end_step()
        start = 0
        for s, c in zip((0, 1), counts):
            keys, values = history[s]
            keys.extend(k[start:start + c])
            values.extend(v[start:start + c])
            K, V = np.stack(keys), np.stack(values)  # (len, kv, d)
            for t in range(c):
                pos = len(keys) - c + t
                for h in range(heads):
                    g = h // (heads // kv)
                    sc = K[:pos + 1, g] @ q[start + t, h] * 0.25
                    p = np.exp(sc - sc.max())
                    np.testing.assert_allclose(got[start + t, h], (p / p.sum()) @ V[:pos + 1, g], rtol=1e-5,
                                               atol=1e-5)
            start += c
    np.testing.assert_array_equal(cache.read(1, 1), np.stack(history[1][0]).transpose(1, 0, 2))
    with pytest.raises(loom.LoomError, match=re.escape("the step has 2 tokens (sequences 0: 1, 1: 1); q has 3 rows")):
        cache.begin_step([0, 1], [1, 1])
        try:
            attention(cache.handle, 0, np.zeros((3, heads, d), np.float32), np.zeros((2, kv, d), np.float32),
                      np.zeros((2, kv, d), np.float32), 1.0)
        finally:
            cache.end_step()
    with pytest.raises(loom.LoomError, match=re.escape("k has shape (1, 3, 16); expected (1, 2, 16)")):
        cache.begin_step([0], [1])
        try:
            attention(cache.handle, 0, np.zeros((1, heads, d), np.float32), np.zeros((1, 3, d), np.float32),
                      np.zeros((1, kv, d), np.float32), 1.0)
        finally:
            cache.end_step()


def test_the_example_runs():
    import subprocess
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "llm" / "generate.py"), "--tokens", "5"],
                         capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr
    assert re.search(r"decode: \d+ tokens/s", out.stdout), out.stdout
    assert len(out.stdout.splitlines()[2].split()) == 5


@pytest.mark.parametrize("arch, quantize", [("llama", "int8"), ("llama", "int4"), ("gpt2", "int8"), ("gpt2", "int4")])
def test_quantized_weights_compute_exactly_with_their_dequantized_values(arch, quantize, tmp_path):
    # The kernels are exact for their format: the logits agree with the
    # float reference run on the dequantized weights, not merely with the
    # float model (random weights make that agreement a weak measure).
    cfg = ref.llama_config(intermediate_size=128) if arch == "llama" else ref.gpt2_config(n_embd=64, n_head=4)
    w = ref.random_weights(cfg, seed=6)
    engine = llm.compile(cfg, w, config=HOST, quantize=quantize)
    ids = [t % cfg["vocab_size"] for t in PROMPT]
    want = ref.logits(cfg, llm.dequantized_weights(cfg, w, quantize), ids)
    close(engine.forward(ids), want)
    assert not np.allclose(want, ref.logits(cfg, w, ids), atol=1e-3)  # the format did change the weights
    # decode steps over the cache too, and the library keeps its format
    cache = engine.create_cache(capacity=16)
    cache.add(0)
    engine.step(cache, {0: ids[:10]})
    for i in range(10, 13):
        close(engine.step(cache, {0: [ids[i]]})[0], want[i])
    path = tmp_path / "q.so"
    engine.export(path)
    again = llm.load(path)
    assert again.quantize == quantize and again.weight_bytes == engine.weight_bytes
    close(again.forward(ids[:4]), want[:4])


def int4_reference(x, packed, scales, group):
    """dense_int4 in NumPy (float64): byte c of group g holds elements
    g * G + c (low nibble) and g * G + c + G / 2 (high), each minus 8,
    times the group's scale."""
    n, half = packed.shape[0], group // 2
    g = packed.reshape(n, -1, half).astype(np.int64)
    q = np.concatenate([g & 15, g >> 4], axis=2) - 8  # (n, groups, G)
    w = (q * scales[:, :, None].astype(np.float64)).reshape(n, -1)
    return x.astype(np.float64) @ w.T


@pytest.mark.parametrize("group, n, k", [(32, 64, 96), (2, 20, 6), (10, 16, 40), (64, 40, 128), (160, 16, 320),
                                         (256, 24, 512), (32, 256, 768)])
def test_the_int4_dense_matches_numpy_over_any_row_count(group, n, k):
    # Rows as a constant 1 (a batch of one: its own tile), a constant 3,
    # and a symbolic count run at 1, 5 and 37 (blocks of rows and a tail
    # over the same panels); x of rank 1 and of rank 3 with two symbolic
    # leading dimensions; column counts that are not whole vectors;
    # groups whose half is not a power of two or longer than a step.
    from loom import graph, op, tir
    rng = np.random.default_rng(group + n)
    packed = rng.integers(0, 256, (n, k // 2), dtype=np.uint8)
    scales = rng.uniform(0.5, 2, (n, k // group)).astype(np.float32)
    b, s = tir.Var("b"), tir.Var("s")
    for shape, runs in [((1, k), [(1, k)]), ((3, k), [(3, k)]), ((tir.Var("r"), k), [(1, k), (5, k), (37, k)]),
                        ((k,), [(k,)]), ((b, s, k), [(2, 3, k), (1, 1, k)])]:
        x = graph.Var("x", shape=shape)
        y = op.dense_int4(x, graph.Constant(packed), graph.Constant(scales), group_size=group)
        f = loom.build(loom.IRModule({"main": graph.Function([x], y)}), HOST)["main"]
        for run in runs:
            xv = rng.standard_normal(run).astype(np.float32)
            want = int4_reference(xv.reshape(-1, k), packed, scales, group).reshape(run[:-1] + (n,))
            close(f(xv).numpy(), want)


def test_quantized_weights_are_smaller():
    cfg = ref.llama_config(intermediate_size=256, hidden_size=128, vocab_size=512, num_hidden_layers=1)
    w = ref.random_weights(cfg)
    sizes = {q: llm.compile(cfg, w, config=HOST, quantize=q).weight_bytes for q in (None, "int8", "int4")}
    assert sizes[None] / sizes["int8"] > 3.0
    assert sizes[None] / sizes["int4"] > 3.5


def test_a_quantization_that_does_not_fit_is_refused():
    cfg = ref.gpt2_config()  # n_embd 48: not whole groups of 32
    with pytest.raises(ValueError, match=re.escape("quantize='int4': transformer.wte.weight (80, 48) has 48 columns "
                                                   "(its input dimension), not a multiple of the group size 32")):
        llm.compile(cfg, ref.random_weights(cfg), config=HOST, quantize="int4")
    with pytest.raises(ValueError, match="quantize='int3': expected one of None, 'int8', 'int4'"):
        llm.compile(cfg, ref.random_weights(cfg), config=HOST, quantize="int3")


def test_the_c_api_generates_what_python_does(model, tmp_path):
    # examples/llm/generate.c: the exported library, run from C99 through
    # the C API and the runtime's KV cache, gives the same greedy tokens.
    import os
    import subprocess
    cfg, w, engine = model
    exe = Path(os.environ.get("LOOM_BUILD_DIR", ROOT / "build")) / "bin" / "generate_llm"
    if not exe.exists():
        pytest.skip(f"{exe} is not built")
    path = tmp_path / "model.so"
    engine.export(path)
    ids = [t % cfg["vocab_size"] for t in PROMPT[:6]]
    out = subprocess.run([str(exe), str(path), "12", *map(str, ids)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert [int(t) for t in out.stdout.split()] == engine.generate(ids, 12)
    bad = subprocess.run([str(exe), str(tmp_path / "missing.so"), "2", "1"], capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 1 and "missing.so" in bad.stderr
