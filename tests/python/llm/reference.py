"""Plain-PyTorch references for the LLM tests: Hugging Face's LLaMA and
GPT-2 equations, recomputing the whole prefix (no cache), and random
weights under Hugging Face's parameter names."""
import math

import numpy as np
import torch


def llama_config(**over):
    cfg = {"model_type": "llama", "vocab_size": 96, "hidden_size": 64, "intermediate_size": 112,
           "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "rms_norm_eps": 1e-5,
           "rope_theta": 500.0, "max_position_embeddings": 96, "tie_word_embeddings": False}
    cfg.update(over)
    return cfg


def gpt2_config(**over):
    cfg = {"model_type": "gpt2", "vocab_size": 80, "n_embd": 48, "n_layer": 2, "n_head": 3, "n_positions": 96,
           "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new"}
    cfg.update(over)
    return cfg


def random_weights(cfg, seed=0, scale=0.15):
    """Random weights for every parameter the configuration names (norm
    weights around 1, biases small)."""
    from loom.llm import parse_config

    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in parse_config(cfg).parameters().items():
        if name.endswith("norm.weight") or ".ln_" in name and name.endswith(".weight") or "ln_f.weight" in name:
            out[name] = (1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
        else:
            s = 0.02 if name.endswith(".bias") else scale
            out[name] = (s * rng.standard_normal(shape)).astype(np.float32)
    return out


def _attend(q, k, v):
    # q (H, n, D), k and v (H, n, D): causal softmax attention.
    n, d = q.shape[1], q.shape[2]
    scores = q @ k.transpose(1, 2) / math.sqrt(d)
    mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    return torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1) @ v


def llama_logits(cfg, w, ids):
    t = {k: torch.from_numpy(v) for k, v in w.items()}
    heads, kv = cfg["num_attention_heads"], cfg.get("num_key_value_heads", cfg["num_attention_heads"])
    d = cfg.get("head_dim", cfg["hidden_size"] // heads)
    eps, n = cfg["rms_norm_eps"], len(ids)

    def rms(x, weight):
        return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))

    inv = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
    freqs = torch.outer(torch.arange(n, dtype=torch.float32), inv)
    emb = torch.cat([freqs, freqs], dim=-1)
    cos, sin = emb.cos(), emb.sin()

    def rope(x):  # (H, n, D)
        half = x.shape[-1] // 2
        return x * cos + torch.cat([-x[..., half:], x[..., :half]], dim=-1) * sin

    x = t["model.embed_tokens.weight"][torch.as_tensor(ids)]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms(x, t[p + "input_layernorm.weight"])
        q = (h @ t[p + "self_attn.q_proj.weight"].T).view(n, heads, d).transpose(0, 1)
        k = (h @ t[p + "self_attn.k_proj.weight"].T).view(n, kv, d).transpose(0, 1)
        v = (h @ t[p + "self_attn.v_proj.weight"].T).view(n, kv, d).transpose(0, 1)
        q, k = rope(q), rope(k)
        k, v = k.repeat_interleave(heads // kv, dim=0), v.repeat_interleave(heads // kv, dim=0)
        a = _attend(q, k, v).transpose(0, 1).reshape(n, heads * d)
        x = x + a @ t[p + "self_attn.o_proj.weight"].T
        h = rms(x, t[p + "post_attention_layernorm.weight"])
        gate = torch.nn.functional.silu(h @ t[p + "mlp.gate_proj.weight"].T)
        x = x + (gate * (h @ t[p + "mlp.up_proj.weight"].T)) @ t[p + "mlp.down_proj.weight"].T
    x = rms(x, t["model.norm.weight"])
    head = t["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else t["lm_head.weight"]
    return (x @ head.T).numpy()


def gpt2_logits(cfg, w, ids):
    t = {k: torch.from_numpy(v) for k, v in w.items()}
    heads, dm, n = cfg["n_head"], cfg["n_embd"], len(ids)
    d, eps = dm // heads, cfg["layer_norm_epsilon"]

    def ln(x, name):
        return torch.nn.functional.layer_norm(x, (dm,), t[name + ".weight"], t[name + ".bias"], eps)

    def gelu_new(x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))

    x = t["transformer.wte.weight"][torch.as_tensor(ids)] + t["transformer.wpe.weight"][:n]
    for i in range(cfg["n_layer"]):
        p = f"transformer.h.{i}."
        qkv = ln(x, p + "ln_1") @ t[p + "attn.c_attn.weight"] + t[p + "attn.c_attn.bias"]
        q, k, v = (qkv[:, j * dm:(j + 1) * dm].view(n, heads, d).transpose(0, 1) for j in range(3))
        a = _attend(q, k, v).transpose(0, 1).reshape(n, dm)
        x = x + a @ t[p + "attn.c_proj.weight"] + t[p + "attn.c_proj.bias"]
        f = gelu_new(ln(x, p + "ln_2") @ t[p + "mlp.c_fc.weight"] + t[p + "mlp.c_fc.bias"])
        x = x + f @ t[p + "mlp.c_proj.weight"] + t[p + "mlp.c_proj.bias"]
    return (ln(x, "transformer.ln_f") @ t["transformer.wte.weight"].T).numpy()


def logits(cfg, w, ids):
    with torch.no_grad():
        return (llama_logits if cfg["model_type"] == "llama" else gpt2_logits)(cfg, w, list(ids))


def greedy(cfg, w, ids, count):
    ids, out = list(ids), []
    for _ in range(count):
        token = int(np.argmax(logits(cfg, w, ids)[-1]))
        out.append(token)
        ids.append(token)
    return out
