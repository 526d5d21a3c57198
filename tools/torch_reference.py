#!/usr/bin/env python3
"""tools/torch_reference.py — PyTorch twin of fsdpx's model, AdamW and LR schedule, to check the CPU
reference trainer against PyTorch (same initial weights and token batches, exchanged as safetensors)
and to time PyTorch eager vs torch.compile on the same model and batch (--bench). Developer tooling:
fsdpx and its tests never need PyTorch. Runs the global batch on one device (FSDP sharding does not
change the math); leaves out dropout and ignore-index tokens, as fsdpx does, and refuses Llama 3.1's RoPE
scaling (YaRN is applied). Mixture-of-experts models of Mixtral's kind (softmax router, top-k, dropless
SwiGLU experts, the load-balancing loss) run as transformers' MixtralSparseMoeBlock and load_balancing_loss_func, per micro-batch of the plan; DeepSeek-V3's
kind (sigmoid router scoring) as transformers' DeepseekV3TopkRouter and DeepseekV3MoE (models/deepseek_v3/
modeling_deepseek_v3.py: correction bias for selection only, group-limited top-k, renormalised weights x
routed_scaling_factor, shared experts, dense leading layers) with DeepSeek-V3's sequence-wise balance loss
(arXiv:2412.19437 §2.1.2, eq. 17-20; its bias update is left out, as fsdpx does), and multi-head latent
attention as DeepseekV3Attention (rope_interleave; YaRN's frequencies and cos/sin scale as transformers'
modeling_rope_utils.py _compute_yarn_parameters, its softmax factor as yarn_apply_mscale). A plan with a
"lora" section trains LoRA adapters on the frozen base as fsdpx does (docs/lora.md): W x + (alpha/r) B A x
on the targets, AdamW, clipping and the gradient norm over the adapters only.

Replay a fsdpx run (docs/executor.md "Checking against PyTorch"):
  fsdpx run --plan p.json --steps 20 --save-init-weights init.safetensors --dump-batches b.safetensors \
      --format json > fsdpx.json
  python3 tools/torch_reference.py --plan p.json --weights init.safetensors --batches b.safetensors \
      --compare fsdpx.json
LoRA plans also exchange the initial adapters: fsdpx run ... --save-init-adapters a.safetensors, then
  python3 tools/torch_reference.py ... --adapters a.safetensors
Benchmark (random init, synthetic tokens): --plan p.json --bench --device cuda --dtype bf16 [--compile]
"""
import argparse
import json
import math
import struct
import sys
import time

import torch
import torch.nn.functional as F
try:
    from safetensors.torch import load_file, save_file
except ImportError:  # the GPU machine has PyTorch but maybe not safetensors: the format is small
    _DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16, "I32": torch.int32}

    def load_file(path):
        with open(path, "rb") as f:
            raw = f.read()
        (n,) = struct.unpack("<Q", raw[:8])
        header, data = json.loads(raw[8:8 + n]), raw[8 + n:]
        out = {}
        for name, t in header.items():
            if name == "__metadata__":
                continue
            begin, end = t["data_offsets"]
            dtype = _DTYPES[t["dtype"]]
            flat = torch.frombuffer(bytearray(data[begin:end]), dtype=dtype) if end > begin else torch.empty(0, dtype=dtype)
            out[name] = flat.reshape(t["shape"]).clone()
        return out

    def save_file(tensors, path, metadata=None):
        names = {v: k for k, v in _DTYPES.items()}
        header, blobs, offset = {}, [], 0
        for name, t in tensors.items():
            b = t.detach().contiguous().cpu().view(torch.uint8).numpy().tobytes()
            header[name] = dict(dtype=names[t.dtype], shape=list(t.shape), data_offsets=[offset, offset + len(b)])
            blobs.append(b)
            offset += len(b)
        if metadata:
            header["__metadata__"] = metadata
        text = json.dumps(header, separators=(",", ":")).encode()
        text += b" " * (-len(text) % 8)
        with open(path, "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))

# fsdpx's defaults where a file leaves a value out: core/plan.h OptimizerSettings, core/model_spec.h
# (rope_theta 10000 and norm_eps 1e-5, for plans written before the model carried them).
OPTIMIZER_DEFAULTS = dict(lr=3e-4, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.1, grad_clip_norm=1.0,
                          warmup_steps=10, total_steps=1000, min_lr_ratio=0.1)
INIT_STD = 0.02  # executor/model/init.cpp kInitStd


def model_spec(j):
    """fsdpx model JSON (a plan's "model" or configs/models/*.json) with core/model_spec.cpp defaults."""
    s = {k: j[k] for k in ("name", "arch", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "ffn_kind",
                           "vocab", "max_seq", "tied_embeddings")}
    s["head_dim"] = j.get("head_dim", s["hidden"] // s["heads"])
    s["bias"] = j.get("bias", "all" if s["arch"] == "gpt" else "none")
    s["rope_theta"] = j.get("rope_theta", 10000.0)  # llama only; gpt has learned positions
    s["norm_eps"] = j.get("norm_eps", 1e-5)
    moe = j.get("moe")
    if moe:  # Mixtral's and DeepSeek-V3's kinds, as fsdpx's CPU backend (core/backend_capabilities.cpp)
        s["moe"] = dict(experts=moe["experts"], top_k=moe["top_k"], ffn=moe["expert_ffn_hidden"],
                        norm_topk=moe.get("norm_topk_prob", False), aux_coef=moe.get("aux_loss_coef", 0.0),
                        sigmoid=moe.get("scoring", "softmax") == "sigmoid",
                        bias=moe.get("score_correction_bias", False), groups=moe.get("groups", 1),
                        topk_groups=moe.get("topk_groups", 1), scaling=moe.get("routed_scaling", 1.0),
                        shared=moe.get("shared_experts", 0) * moe.get("shared_ffn_hidden", 0),
                        dense_layers=moe.get("dense_layers", 0))
        other = {k: v for k, v in moe.items() if k in ("capacity_factor", "shared_expert_gate") and v}
        if other or (s["moe"]["groups"] > 1 and not s["moe"]["sigmoid"]):
            sys.exit(f"torch_reference.py: model {s['name']}: this reference runs Mixtral's and DeepSeek-V3's MoE "
                     f"only ({other})")
    if "mla" in j:  # DeepseekV3Attention's sizes
        a = j["mla"]
        s["mla"] = dict(q_rank=a.get("q_lora_rank", 0), kv_rank=a["kv_lora_rank"], nope=a["qk_nope_head_dim"],
                        rope=a["qk_rope_head_dim"], v=a["v_head_dim"])
    if j.get("qk_norm"):
        sys.exit(f"torch_reference.py: model {s['name']}: q/k norms are not in this reference")
    r = j.get("rope_scaling")
    if r and r.get("type") not in ("yarn", "llama3"):  # refused: this reference applies plain RoPE, Llama 3's or YaRN
        sys.exit(f"torch_reference.py: model {s['name']} has rope_scaling {r.get('type')}, which this reference "
                 "does not apply")
    if r and r["type"] == "llama3":  # transformers' defaults where a key is absent
        s["llama3"] = dict(factor=r["factor"], original=r["original_max_seq"], low=r.get("low_freq_factor", 1.0),
                           high=r.get("high_freq_factor", 4.0))
    elif r:  # fsdpx's schema (core/rope_scaling_json.h), transformers' defaults where a key is absent
        s["yarn"] = dict(factor=r["factor"], original=r["original_max_seq"], beta_fast=r.get("beta_fast", 32.0),
                         beta_slow=r.get("beta_slow", 1.0), mscale=r.get("mscale", 0.0),
                         mscale_all_dim=r.get("mscale_all_dim", 0.0), attention_factor=r.get("attention_factor", 0.0),
                         truncate=r.get("truncate", True))
    return s


def param_specs(s):
    """name -> (shape, init kind), as executor/model/param_layout.cpp and checkpoint/param_tensors.cpp."""
    c, q, kv, f = s["hidden"], s["heads"] * s["head_dim"], s["kv_heads"] * s["head_dim"], s["ffn_hidden"]
    out = {"embedding.tok.weight": ((s["vocab"], c), "normal")}
    if s["arch"] == "gpt":
        out["embedding.pos.weight"] = ((s["max_seq"], c), "normal")

    def norm(name):
        out[name + ".weight"] = ((c,), "ones")
        if s["arch"] == "gpt":
            out[name + ".bias"] = ((c,), "zeros")

    def linear(name, rows, cols, bias, init):
        out[name + ".weight"] = ((rows, cols), init)
        if bias:
            out[name + ".bias"] = ((rows,), "zeros")

    up = 2 * f if s["ffn_kind"] == "swiglu" else f
    for i in range(s["layers"]):
        b = f"block.{i}."
        norm(b + "attn_norm")
        if "mla" in s:  # DeepseekV3Attention: q_a, q_a_norm, q_b (or q), kv_a, kv_a_norm, kv_b, then o_proj
            a = s["mla"]
            qk = a["nope"] + a["rope"]
            if a["q_rank"]:
                linear(b + "attn.q_a", a["q_rank"], c, False, "normal")
                out[b + "attn.q_a_norm.weight"] = ((a["q_rank"],), "ones")
                linear(b + "attn.q_b", s["heads"] * qk, a["q_rank"], False, "normal")
            else:
                linear(b + "attn.q", s["heads"] * qk, c, False, "normal")
            linear(b + "attn.kv_a", a["kv_rank"] + a["rope"], c, False, "normal")
            out[b + "attn.kv_a_norm.weight"] = ((a["kv_rank"],), "ones")
            linear(b + "attn.kv_b", s["heads"] * (a["nope"] + a["v"]), a["kv_rank"], False, "normal")
            linear(b + "attn_out", c, s["heads"] * a["v"], False, "residual")
        else:
            linear(b + "qkv", q + 2 * kv, c, s["bias"] != "none", "normal")
            linear(b + "attn_out", c, q, s["bias"] == "all", "residual")
        norm(b + "mlp_norm")
        if "moe" in s and i >= s["moe"]["dense_layers"]:  # router, then every expert's [gate | up] and down rows
            e, ef = s["moe"]["experts"], s["moe"]["ffn"]
            linear(b + "router", e, c, False, "normal")
            if s["moe"]["bias"]:
                out[b + "router.e_score_correction_bias"] = ((e,), "zeros")
            linear(b + "experts.mlp_up", e * 2 * ef, c, False, "normal")
            linear(b + "experts.mlp_down", e * c, ef, False, "residual")
            if s["moe"]["shared"]:
                linear(b + "shared.mlp_up", 2 * s["moe"]["shared"], c, False, "normal")
                linear(b + "shared.mlp_down", c, s["moe"]["shared"], False, "residual")
            continue
        linear(b + "mlp_up", up, c, s["bias"] == "all", "normal")
        linear(b + "mlp_down", c, f, s["bias"] == "all", "residual")
    norm("final_norm")
    if not s["tied_embeddings"]:
        out["head.weight"] = ((s["vocab"], c), "normal")
    return out


def lora_slots(s, lora):
    """target -> (projection, in, out, first output column): executor/model/lora.cpp make_lora_layout."""
    c, q, kv, f = s["hidden"], s["heads"] * s["head_dim"], s["kv_heads"] * s["head_dim"], s["ffn_hidden"]
    slots = dict(q=("qkv", c, q, 0), k=("qkv", c, kv, q), v=("qkv", c, kv, q + kv), o=("attn_out", q, c, 0),
                 gate=("mlp_up", c, f, 0), up=("mlp_up", c, f, f if s["ffn_kind"] == "swiglu" else 0),
                 down=("mlp_down", f, c, 0))
    return {t: slots[t] for t in lora["targets"]}


def adapter_specs(s, lora):
    """name -> shape of the adapters, as fsdpx run --save-init-adapters names them (executor/session/full_weights.h)."""
    r, out = lora["rank"], {}
    for i in range(s["layers"]):
        for t, (_, fan_in, fan_out, _) in lora_slots(s, lora).items():
            out[f"block.{i}.{t}.lora_A"], out[f"block.{i}.{t}.lora_B"] = (r, fan_in), (fan_out, r)
    return out


def merge_adapters(s, lora, params, adapters):
    """W + (alpha / r) B A on each target's rows (fsdpx merge_lora), as new tensors."""
    merged = {n: p.detach().clone() for n, p in params.items()}
    for i in range(s["layers"]):
        for t, (proj, _, fan_out, col) in lora_slots(s, lora).items():
            a, b = adapters[f"block.{i}.{t}.lora_A"], adapters[f"block.{i}.{t}.lora_B"]
            merged[f"block.{i}.{proj}.weight"][col:col + fan_out] += lora["alpha"] / lora["rank"] * (b @ a).detach()
    return merged


def model_flops_per_token(s, seq):
    """PaLM 6N + 12·L·H·Q·T, N without the input embedding: cost_models/params.cpp model_flops_per_token."""
    n = sum(math.prod(shape) for shape, _ in param_specs(s).values())
    n -= s["vocab"] * s["hidden"] + (s["max_seq"] * s["hidden"] if s["arch"] == "gpt" else 0)
    if s["tied_embeddings"]:
        n += s["vocab"] * s["hidden"]
    return 6.0 * n + 12.0 * s["layers"] * s["heads"] * s["head_dim"] * seq


def yarn_get_mscale(factor, mscale):
    """modeling_deepseek_v3.py yarn_get_mscale / _compute_yarn_parameters get_mscale."""
    return 1.0 if factor <= 1 else 0.1 * mscale * math.log(factor) + 1.0


def yarn_inv_freq(head_dim, theta, y):
    """transformers' _compute_yarn_parameters in float64 (Peng et al. 2023, arXiv:2309.00071 §3.2): the
    frequencies blended with themselves / factor by a ramp over the pairs between beta_fast and beta_slow
    turns in the original context; returns (inv_freq [head_dim/2], the cos/sin scale)."""
    def correction_dim(turns):  # find_correction_dim
        return head_dim * math.log(y["original"] / (turns * 2 * math.pi)) / (2 * math.log(theta))
    low, high = correction_dim(y["beta_fast"]), correction_dim(y["beta_slow"])
    if y["truncate"]:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, head_dim - 1)
    if low == high:
        high += 0.001
    ramp = ((torch.arange(head_dim // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
    plain = theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    inv_freq = plain / y["factor"] * ramp + plain * (1 - ramp)
    if y["attention_factor"]:
        scale = y["attention_factor"]
    elif y["mscale"] and y["mscale_all_dim"]:
        scale = yarn_get_mscale(y["factor"], y["mscale"]) / yarn_get_mscale(y["factor"], y["mscale_all_dim"])
    else:
        scale = yarn_get_mscale(y["factor"], 1.0)
    return inv_freq, scale


def llama3_inv_freq(head_dim, theta, l):
    """Llama 3.1's frequencies in float64 (meta-llama/llama-models models/llama3/reference_impl/model.py
    apply_scaling; transformers _compute_llama3_parameters): wavelengths above original / low_freq_factor
    divided by factor, below original / high_freq_factor kept, a linear blend in original / wavelength between."""
    plain = theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    wavelen = 2 * math.pi / plain
    smooth = (l["original"] / wavelen - l["low"]) / (l["high"] - l["low"])
    blended = (1 - smooth) * plain / l["factor"] + smooth * plain
    return torch.where(wavelen < l["original"] / l["high"], plain,
                       torch.where(wavelen > l["original"] / l["low"], plain / l["factor"], blended))


def rope_tables(seq, head_dim, theta, device, yarn=None, llama3=None):
    """cos, sin [T, head_dim/2], angle t·theta^(-2i/d) (YaRN's frequencies, and its scale on both, with
    `yarn`; Llama 3.1's with `llama3`) in float64 as executor/model/rope_table.cpp."""
    i = torch.arange(head_dim // 2, dtype=torch.float64)
    inv_freq, scale = yarn_inv_freq(head_dim, theta, yarn) if yarn else (theta ** (-2.0 * i / head_dim), 1.0)
    if llama3:
        inv_freq = llama3_inv_freq(head_dim, theta, llama3)
    angle = torch.arange(seq, dtype=torch.float64)[:, None] * inv_freq
    return (scale * angle.cos()).float().to(device), (scale * angle.sin()).float().to(device)


def fp8_round(x, dtype):
    """torchao's tensorwise dynamic cast read back in fp32 (torchao/float8/float8_utils.py amax_to_scale,
    float8_scaling_utils.py hp_tensor_to_float8_dynamic): s = fp8 max / max(amax, 1e-12) in fp32, x·s
    saturated and cast by torch to `dtype`, then / s. fsdpx: executor/model/fp8_linear.cpp."""
    fmax = torch.finfo(dtype).max
    scale = (fmax / torch.clamp(x.abs().max().double(), min=1e-12)).float()
    return (x.float() * scale).clamp(-fmax, fmax).to(dtype).float() / scale


class Fp8Matmul(torch.autograd.Function):
    """x Wᵀ as torchao's Float8Linear with its default (tensorwise) config computes it: input and weight
    in E4M3, the output gradient in E5M2, each with its own dynamic scale, for all three GEMMs
    (torchao/float8/config.py Float8LinearConfig, float8_linear.py matmul_with_hp_or_float8_args)."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return fp8_round(x, torch.float8_e4m3fn) @ fp8_round(w, torch.float8_e4m3fn).t()

    @staticmethod
    def backward(ctx, dy):
        x, w = ctx.saved_tensors
        g = fp8_round(dy, torch.float8_e5m2)
        dx = g @ fp8_round(w, torch.float8_e4m3fn)
        dw = g.reshape(-1, g.shape[-1]).t() @ fp8_round(x, torch.float8_e4m3fn).reshape(-1, x.shape[-1])
        return dx, dw


def make_loss_fn(s, seq, device, lora=None, fp8=None):
    """loss(params, tokens [B, T], targets [B, T]) -> mean cross-entropy: executor/model/*.cpp. With `lora`
    (a plan's lora section), params also holds the adapters (adapter_specs) and each target's rows of its
    projection's output gain (alpha / r) (x Aᵀ) Bᵀ (executor/model/lora.cpp lora_forward). With `fp8` (a
    plan's fp8 section, tensorwise) the blocks' projections run Fp8Matmul, the bias added after in fp32;
    the head stays fp32 (torchtitan's float8 converter skips "output")."""
    nh, nkv, hd, theta, eps = s["heads"], s["kv_heads"], s["head_dim"], s["rope_theta"], s["norm_eps"]
    llama = s["arch"] == "llama"
    rope_dim = s["mla"]["rope"] if "mla" in s else hd  # latent attention rotates its rope part only
    cos, sin = rope_tables(seq, rope_dim, theta, device, s.get("yarn"), s.get("llama3")) if llama else (None, None)
    # DeepseekV3Attention: softmax scale (nope + rope)^-1/2 times yarn_apply_mscale's mscale^2.
    y = s.get("yarn")
    softmax_factor = yarn_get_mscale(y["factor"], y["mscale_all_dim"]) ** 2 if y and y["mscale_all_dim"] else 1.0
    slots = lora_slots(s, lora) if lora else {}

    def norm(x, p, name):
        if llama:  # RMSNorm: x / sqrt(mean(x²) + eps) · w
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * p[name + ".weight"]
        return F.layer_norm(x, (x.shape[-1],), p[name + ".weight"], p[name + ".bias"], eps)

    if fp8 and fp8.get("scaling") != "tensorwise":
        sys.exit(f"/fp8/scaling: this reference emulates torchao's tensorwise recipe only (got {fp8.get('scaling')})")

    def linear(x, p, name):
        if fp8:
            y = Fp8Matmul.apply(x, p[name + ".weight"])
            y = y + p[name + ".bias"] if name + ".bias" in p else y
        else:
            y = F.linear(x, p[name + ".weight"], p.get(name + ".bias"))
        block, proj = name.rsplit(".", 1)
        for t, (target_proj, _, fan_out, col) in slots.items():
            if target_proj == proj:
                delta = F.linear(F.linear(x, p[f"{block}.{t}.lora_A"]), p[f"{block}.{t}.lora_B"])
                y = y + F.pad(lora["alpha"] / lora["rank"] * delta, (col, y.shape[-1] - col - fan_out))
        return y

    def rope(x):  # x [B, T, H, HD]; rotate_half pairing: i with i + HD/2
        x0, x1 = x[..., : hd // 2], x[..., hd // 2:]
        c, sn = cos[: x.shape[1], None, :], sin[: x.shape[1], None, :]
        return torch.cat((x0 * c - x1 * sn, x1 * c + x0 * sn), dim=-1)

    def rope_interleave(x):  # x [B, H, T, D]: transformers' apply_rotary_pos_emb_interleave on one tensor
        bsz, h, t, d = x.shape
        x = x.view(bsz, h, t, d // 2, 2).transpose(4, 3).reshape(bsz, h, t, d)
        x0, x1 = x[..., : d // 2], x[..., d // 2:]
        c, sn = cos[:t], sin[:t]
        return torch.cat((x0 * c - x1 * sn, x1 * c + x0 * sn), dim=-1)

    def mla_attention(x, p, b):
        """transformers' DeepseekV3Attention.forward (rope_interleave, causal, scaled by (nope + rope)^-1/2 and
        YaRN's softmax factor)."""
        a = s["mla"]
        bsz, t, _ = x.shape
        h = norm(x, p, b + "attn_norm")
        if a["q_rank"]:
            q = linear(norm(linear(h, p, b + "attn.q_a"), p, b + "attn.q_a_norm"), p, b + "attn.q_b")
        else:
            q = linear(h, p, b + "attn.q")
        q = q.view(bsz, t, nh, a["nope"] + a["rope"]).transpose(1, 2)
        q_pass, q_rot = q.split([a["nope"], a["rope"]], dim=-1)
        k_pass, k_rot = linear(h, p, b + "attn.kv_a").split([a["kv_rank"], a["rope"]], dim=-1)
        k_pass = linear(norm(k_pass, p, b + "attn.kv_a_norm"), p, b + "attn.kv_b")
        k_pass = k_pass.view(bsz, t, nh, a["nope"] + a["v"]).transpose(1, 2)
        k_pass, value = k_pass.split([a["nope"], a["v"]], dim=-1)
        q_rot, k_rot = rope_interleave(q_rot), rope_interleave(k_rot.view(bsz, 1, t, a["rope"]))
        key = torch.cat((k_pass, k_rot.expand(*k_pass.shape[:-1], -1)), dim=-1)
        y = F.scaled_dot_product_attention(torch.cat((q_pass, q_rot), dim=-1), key, value, is_causal=True,
                                           scale=softmax_factor / math.sqrt(a["nope"] + a["rope"]))
        return linear(y.transpose(1, 2).reshape(bsz, t, nh * a["v"]), p, b + "attn_out")

    def attention(x, p, b):
        if "mla" in s:
            return mla_attention(x, p, b)
        bsz, t, _ = x.shape
        qkv = linear(norm(x, p, b + "attn_norm"), p, b + "qkv")  # [B, T, (NH + 2·NKV)·HD]
        q, k, v = qkv.split([nh * hd, nkv * hd, nkv * hd], dim=-1)
        q, k, v = q.view(bsz, t, nh, hd), k.view(bsz, t, nkv, hd), v.view(bsz, t, nkv, hd)
        if llama:
            q, k = rope(q), rope(k)
        # GQA: query head h reads kv head h // (NH / NKV); scores scaled by 1/sqrt(HD), causal.
        k, v = (z.repeat_interleave(nh // nkv, dim=2) for z in (k, v))
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        return linear(y.transpose(1, 2).reshape(bsz, t, nh * hd), p, b + "attn_out")

    def mlp(x, p, b):
        h = linear(norm(x, p, b + "mlp_norm"), p, b + "mlp_up")
        if s["ffn_kind"] == "swiglu":  # rows [gate | up]
            gate, up = h.chunk(2, dim=-1)
            h = F.silu(gate) * up
        elif s["ffn_kind"] == "gelu":
            h = F.gelu(h, approximate="tanh")
        else:
            h = F.relu(h).square()
        return linear(h, p, b + "mlp_down")

    def routed_experts(h, p, b, selected, weights):
        """Σ_slot weight · expert(h) per token, summed in expert order (MixtralSparseMoeBlock's index_add_ loop)."""
        e, ef = s["moe"]["experts"], s["moe"]["ffn"]
        up = p[b + "experts.mlp_up.weight"].view(e, 2 * ef, -1)
        down = p[b + "experts.mlp_down.weight"].view(e, h.shape[-1], ef)
        out = torch.zeros_like(h)
        for ex in range(e):
            token, slot = torch.where(selected == ex)
            if token.numel() == 0:
                continue
            gate, u = F.linear(h[token], up[ex]).chunk(2, dim=-1)
            out = out.index_add(0, token, F.linear(F.silu(gate) * u, down[ex]) * weights[token, slot, None])
        return out

    def moe_mlp(x, p, b, router_out):
        """transformers' MixtralSparseMoeBlock.forward; router_out collects (probs, selected) per block."""
        k = s["moe"]["top_k"]
        h = norm(x, p, b + "mlp_norm").reshape(-1, x.shape[-1])
        probs = F.softmax(F.linear(h, p[b + "router.weight"]), dim=-1, dtype=torch.float)
        weights, selected = torch.topk(probs, k, dim=-1)
        if s["moe"]["norm_topk"]:
            weights = weights / weights.sum(dim=-1, keepdim=True)
        router_out.append((probs, selected))
        return routed_experts(h, p, b, selected, weights).view(x.shape)

    def deepseek_moe(x, p, b, router_out):
        """transformers' DeepseekV3MoE.forward with DeepseekV3TopkRouter; router_out collects the block's
        sequence-wise balance value (DeepSeek-V3 eq. 17-20, the mean over the micro-batch's sequences)."""
        m = s["moe"]
        e, k, g = m["experts"], m["top_k"], m["groups"]
        bsz, t, c = x.shape
        h = norm(x, p, b + "mlp_norm").reshape(-1, c)
        scores = F.linear(h, p[b + "router.weight"]).sigmoid()
        with torch.no_grad():  # get_topk_indices: the bias selects, groups ranked by their two best
            choice = scores + (p[b + "router.e_score_correction_bias"].view(1, e) if m["bias"] else 0.0)
            group_scores = choice.view(-1, g, e // g).topk(2, dim=-1)[0].sum(dim=-1)
            group_idx = torch.topk(group_scores, k=m["topk_groups"], dim=-1, sorted=False)[1]
            group_mask = torch.zeros_like(group_scores).scatter_(1, group_idx, 1)
            score_mask = group_mask.unsqueeze(-1).expand(-1, g, e // g).reshape(-1, e)
            selected = torch.topk(choice.masked_fill(~score_mask.bool(), 0.0), k=k, dim=-1, sorted=False)[1]
        weights = scores.gather(1, selected)
        if m["norm_topk"]:
            weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-20)
        weights = weights * m["scaling"]
        out = routed_experts(h, p, b, selected, weights)
        if m["shared"]:
            gate, u = F.linear(h, p[b + "shared.mlp_up.weight"]).chunk(2, dim=-1)
            out = out + F.linear(F.silu(gate) * u, p[b + "shared.mlp_down.weight"])
        share = (scores / scores.sum(dim=-1, keepdim=True)).view(bsz, t, e).mean(dim=1)  # P [B, E]
        picks = F.one_hot(selected, e).sum(dim=1).view(bsz, t, e).sum(dim=1).to(scores.dtype)  # [B, E]
        router_out.append((picks * e / (k * t) * share).sum(dim=-1).mean())
        return out.view(x.shape)

    def aux_loss(router_out):
        """transformers' load_balancing_loss_func over every block's router outputs concatenated, no mask."""
        e = s["moe"]["experts"]
        probs = torch.cat([p for p, _ in router_out])
        mask = F.one_hot(torch.cat([sel for _, sel in router_out]), e).float()  # [T, k, E]
        return (mask.mean(dim=0) * probs.mean(dim=0)[None]).sum() * e

    def loss_fn(p, tokens, targets):
        x = F.embedding(tokens, p["embedding.tok.weight"])
        if not llama:
            x = x + p["embedding.pos.weight"][: tokens.shape[1]]
        router_out = []
        for i in range(s["layers"]):
            b = f"block.{i}."
            x = x + attention(x, p, b)
            if "moe" not in s or i < s["moe"]["dense_layers"]:
                x = x + mlp(x, p, b)
            else:
                x = x + (deepseek_moe if s["moe"]["sigmoid"] else moe_mlp)(x, p, b, router_out)
        head = p["embedding.tok.weight"] if s["tied_embeddings"] else p["head.weight"]
        logits = F.linear(norm(x, p, "final_norm"), head)
        loss = F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.reshape(-1))
        if "moe" in s and s["moe"]["aux_coef"] and s["moe"]["sigmoid"]:  # alpha x the blocks' balance losses
            loss = loss + s["moe"]["aux_coef"] * sum(router_out)
        elif "moe" in s and s["moe"]["aux_coef"]:  # MixtralForCausalLM: loss += router_aux_loss_coef * aux
            loss = loss + s["moe"]["aux_coef"] * aux_loss(router_out)
        return loss

    # The pieces, for callers that wrap blocks as modules (tools/torch_fsdp2_trace.py shards them with FSDP2).
    loss_fn.norm, loss_fn.attention, loss_fn.mlp = norm, attention, mlp
    return loss_fn


def learning_rate(o, step):
    """executor/runtime/lr_schedule.cpp: linear warm-up, cosine decay to min_lr_ratio·lr, flat after."""
    if step < o["warmup_steps"]:
        return o["lr"] * (step + 1) / o["warmup_steps"]
    min_lr = o["lr"] * o["min_lr_ratio"]
    decay = o["total_steps"] - o["warmup_steps"]
    if decay <= 0:
        return min_lr
    ratio = min(max((step - o["warmup_steps"]) / decay, 0.0), 1.0)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (o["lr"] - min_lr)


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


@torch.no_grad()
def adamw_step(o, params, grads, state, lr, t, grad_scale):
    """executor/runtime/adamw.cpp in float32, constants rounded to float as the C++ does."""
    bc1, bc2 = 1.0 - o["beta1"] ** t, 1.0 - o["beta2"] ** t
    decay, step_size, bc2_sqrt = f32(1.0 - lr * o["weight_decay"]), f32(lr / bc1), f32(math.sqrt(bc2))
    b1, b2, eps, scale = f32(o["beta1"]), f32(o["beta2"]), f32(o["eps"]), f32(grad_scale)
    for name, p in params.items():
        g = grads[name] * scale
        m, v = state.setdefault(name, (torch.zeros_like(p), torch.zeros_like(p)))
        m.copy_(b1 * m + f32(1.0 - b1) * g)
        v.copy_(b2 * v + f32(1.0 - b2) * g * g)
        p.copy_(p * decay - step_size * m / (v.sqrt() / bc2_sqrt + eps))


def train_step(loss_fn, params, batch, micro, autocast, device):
    """Gradients of the global-batch mean loss, accumulated over micro-batches of `micro` sequences."""
    for p in params.values():
        p.grad = None
    chunks = batch.split(micro)
    total = torch.zeros((), dtype=torch.float64, device=device)
    for chunk in chunks:
        with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=autocast):
            loss = loss_fn(params, chunk[:, :-1], chunk[:, 1:])
        (loss * (chunk.shape[0] / batch.shape[0])).backward()
        total += loss.detach().double() * (chunk.shape[0] / batch.shape[0])
    return total


def replay(args, plan, s, o):
    """fsdpx's training loop on the given weights and batches; per-step losses as fsdpx reports them."""
    dev = args.device
    specs = param_specs(s)
    w = load_file(args.weights)
    bad = sorted(set(w) ^ set(specs)) or [n for n in specs if tuple(w[n].shape) != specs[n][0]]
    if bad:
        sys.exit(f"{args.weights}: tensors do not match the plan's model {s['name']}: {bad[:5]}")
    lora = plan.get("lora")
    params = {n: w[n].float().to(dev).requires_grad_(not lora) for n in specs}
    trainable = params
    if lora:  # the base frozen, the adapters trained (fsdpx writes rank, alpha and targets in every plan)
        if lora.get("dropout", 0):
            sys.exit(f"{args.plan}: /lora/dropout: this reference (like fsdpx's executor) runs dropout 0 only")
        trainable = load_adapters(args, s, lora, dev)
    tokens = load_file(args.batches)["tokens"].long().to(dev)
    seq, gb = plan["training"]["seq"], plan["training"]["global_batch"]
    if tuple(tokens.shape[1:]) != (gb, seq + 1):
        sys.exit(f"{args.batches}: tokens {list(tokens.shape)}, the plan needs [steps, {gb}, {seq + 1}]")
    loss_fn = make_loss_fn(s, seq, dev, lora, plan.get("fp8"))
    # fp8's dynamic scales are per tensor, so the activations' amax is per micro-batch, and the MoE aux
    # loss's means are over one micro-batch's tokens: run the plan's micro-batches.
    per_micro = plan.get("fp8") or "moe" in s
    micro = args.micro_batch or (plan["training"]["micro_batch"] if per_micro else gb)
    if args.compile:
        loss_fn = torch.compile(loss_fn)
    model = {**params, **trainable}
    steps, state = [], {}
    for i in range(min(args.steps or len(tokens), len(tokens))):
        loss = train_step(loss_fn, model, tokens[i], micro, args.dtype == "bf16", dev).item()
        # The correction bias selects under no_grad: no gradient (zeros, as fsdpx's).
        grads = {n: p.grad if p.grad is not None else torch.zeros_like(p) for n, p in trainable.items()}
        norm = math.sqrt(sum(g.double().pow(2).sum().item() for g in grads.values()))
        lr = learning_rate(o, i)
        finite = math.isfinite(norm) and math.isfinite(loss)
        if finite:
            clip = min(1.0, o["grad_clip_norm"] / (norm + 1e-6)) if o["grad_clip_norm"] > 0 else 1.0
            adamw_step(o, trainable, grads, state, lr, i + 1, clip)
        steps.append(dict(step=i + 1, loss=loss, grad_norm=norm, lr=lr, skipped=not finite))
    if args.save_weights:  # LoRA: the merged model, as fsdpx --save-weights
        final = merge_adapters(s, lora, params, trainable) if lora else params
        save_file({n: p.detach().float().cpu().contiguous() for n, p in final.items()}, args.save_weights,
                  metadata={"format": "fsdpx-weights/1", "step": str(len(steps))})
    return dict(steps=steps, final_loss=steps[-1]["loss"] if steps else None)


def load_adapters(args, s, lora, dev):
    """The initial adapters of fsdpx run --save-init-adapters, trainable; every one the plan's lora makes."""
    if not args.adapters:
        sys.exit("the plan has a lora section: --adapters (fsdpx run --save-init-adapters) is needed")
    specs, a = adapter_specs(s, lora), load_file(args.adapters)
    bad = sorted(set(a) ^ set(specs)) or [n for n in specs if tuple(a[n].shape) != specs[n]]
    if bad:
        sys.exit(f"{args.adapters}: tensors do not match the plan's lora section: {bad[:5]}")
    return {n: a[n].float().to(dev).requires_grad_() for n in specs}


def bench(args, plan, s, o):
    """Random init, synthetic tokens; times --steps steps after --warmup; tokens/s and MFU (PaLM FLOPs)."""
    dev, gen = args.device, torch.Generator(device="cpu").manual_seed(0)
    seq = args.seq or (plan["training"]["seq"] if plan else 2048)
    micro = args.micro_batch or (plan["training"]["micro_batch"] if plan else 1)
    init = dict(normal=INIT_STD, residual=INIT_STD / math.sqrt(2 * s["layers"]))
    params = {}
    for n, (shape, kind) in param_specs(s).items():
        t = torch.randn(shape, generator=gen) * init[kind] if kind in init else torch.full(shape, float(kind == "ones"))
        params[n] = t.to(dev).requires_grad_()
    loss_fn = make_loss_fn(s, seq, dev)
    if args.compile:
        loss_fn = torch.compile(loss_fn)
    opt = torch.optim.AdamW(params.values(), lr=o["lr"], betas=(o["beta1"], o["beta2"]), eps=o["eps"],
                            weight_decay=o["weight_decay"], fused=dev == "cuda")
    batch = torch.randint(0, s["vocab"], (micro * args.accum, seq + 1), generator=gen).to(dev)
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    times = []
    for i in range(args.warmup + args.steps):
        sync()
        start = time.perf_counter()
        loss = train_step(loss_fn, params, batch, micro, args.dtype == "bf16", dev)
        torch.nn.utils.clip_grad_norm_(params.values(), o["grad_clip_norm"])
        for g in opt.param_groups:
            g["lr"] = learning_rate(o, i)
        opt.step()
        sync()
        times.append(time.perf_counter() - start)
    step_s = sum(times[args.warmup:]) / args.steps
    tokens_per_s = micro * args.accum * seq / step_s
    flops = model_flops_per_token(s, seq)
    peak = args.peak_tflops * 1e12 if args.peak_tflops else \
        (plan["cluster"]["gpu"]["peak_tflops"]["bf16"] * 1e12 if plan else None)
    return dict(model=s["name"], seq=seq, micro_batch=micro, accum=args.accum, steps_timed=args.steps,
                step_time_s=step_s, tokens_per_s=tokens_per_s, model_flops_per_token=flops,
                peak_flops_per_s=peak, mfu=tokens_per_s * flops / peak if peak else None,
                final_loss=loss.item(),
                peak_memory_bytes=torch.cuda.max_memory_allocated() if dev == "cuda" else None)


def compare(result, fsdpx_json):
    """Per-step |loss difference| against a `fsdpx run --format json` output."""
    theirs = {st["step"]: st["loss"] for st in json.load(open(fsdpx_json))["steps"]}
    common = [st for st in result["steps"] if st["step"] in theirs]
    # A null (NaN in fsdpx's JSON) loss compares as NaN, and NaN survives the maximum (max() drops it).
    mine_f = [float("nan") if st["loss"] is None else st["loss"] for st in common]
    theirs_f = [float("nan") if theirs[st["step"]] is None else theirs[st["step"]] for st in common]
    diffs = [abs(a - b) for a, b in zip(mine_f, theirs_f)]
    rel = [d / abs(b) if b else float("inf") for d, b in zip(diffs, theirs_f)]
    for st, a, b, d in zip(common, mine_f, theirs_f, diffs):
        print(f"step {st['step']:3d}  torch {a:.7f}  fsdpx {b:.7f}  |diff| {d:.2e}", file=sys.stderr)
    return dict(fsdpx_run=fsdpx_json, steps_compared=len(diffs), max_abs_loss_diff=nan_max(diffs),
                max_rel_loss_diff=nan_max(rel))


def nan_max(values):
    """max() that keeps NaN (Python's max([1.0, nan]) is 1.0); None for no values."""
    if not values:
        return None
    return float("nan") if any(math.isnan(v) for v in values) else max(values)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--plan", help="fsdpx plan JSON (model, training, optimizer, cluster peak for MFU)")
    ap.add_argument("--model", help="fsdpx model JSON instead of --plan (--bench only; default optimizer)")
    ap.add_argument("--weights", help="initial full fp32 weights (fsdpx run --save-init-weights)")
    ap.add_argument("--batches", help="token batches (fsdpx run --dump-batches)")
    ap.add_argument("--adapters", help="LoRA plans: initial adapters (fsdpx run --save-init-adapters)")
    ap.add_argument("--steps", type=int, default=0, help="steps to run (replay: default all batches; bench: timed)")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32",
                    help="bf16: autocast matmuls, fp32 master weights")
    ap.add_argument("--compile", action="store_true", help="torch.compile the forward (and so its backward)")
    ap.add_argument("--micro-batch", type=int, default=0, help="sequences per forward (default: replay the "
                    "whole global batch at once; bench the plan's micro_batch)")
    ap.add_argument("--save-weights", help="write the final weights (replay)")
    ap.add_argument("--compare", help="fsdpx run --format json output: report per-step loss differences")
    ap.add_argument("--bench", action="store_true", help="time training steps on random weights and tokens")
    ap.add_argument("--seq", type=int, default=0, help="bench: sequence length (default: the plan's)")
    ap.add_argument("--accum", type=int, default=1, help="bench: micro-batches per step")
    ap.add_argument("--warmup", type=int, default=3, help="bench: untimed steps first")
    ap.add_argument("--peak-tflops", type=float, default=0, help="bench: peak for MFU (default: plan's GPU bf16)")
    ap.add_argument("--rope-theta", type=float, help="override the model's RoPE base (default: its rope_theta)")
    ap.add_argument("--norm-eps", type=float, help="override the model's norm epsilon (default: its norm_eps)")
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (default: torch's)")
    ap.add_argument("-o", "--out", help="write the JSON result here (default: stdout)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    plan = json.load(open(args.plan)) if args.plan else None
    if not plan and not (args.bench and args.model):
        ap.error("--plan is needed (or --model with --bench)")
    s = model_spec(plan["model"] if plan else json.load(open(args.model)))
    s.update({k: v for k, v in (("rope_theta", args.rope_theta), ("norm_eps", args.norm_eps)) if v is not None})
    o = {**OPTIMIZER_DEFAULTS, **{k: v for k, v in (plan or {}).get("optimizer", {}).items() if k != "kind"}}
    if args.bench:
        args.steps = args.steps or 10
        result = bench(args, plan, s, o)
    else:
        if not (args.weights and args.batches):
            ap.error("replay needs --weights and --batches (or use --bench)")
        result = replay(args, plan, s, o)
        if args.compare:
            result["compare"] = compare(result, args.compare)
    result.update(format="fsdpx-torch-reference/1", torch=torch.__version__, device=args.device, dtype=args.dtype,
                  compile=args.compile)
    text = json.dumps(result, indent=2)
    if args.out:
        open(args.out, "w").write(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
