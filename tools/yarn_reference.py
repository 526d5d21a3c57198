#!/usr/bin/env python3
"""Records YaRN's RoPE parameters as Hugging Face transformers computes them, as a fixture for
tests/executor/test_rope_yarn.cpp (which needs no Python): per case the inverse frequencies and cos/sin
scale of modeling_rope_utils.py _compute_yarn_parameters, and the softmax-scale factor of
models/deepseek_v3/modeling_deepseek_v3.py yarn_apply_mscale, each from a DeepseekV3Config whose rotated
width (qk_rope_head_dim, DeepseekV3Config's head_dim) is the case's dim. Leaves out the rotation itself.

Usage (transformers and torch installed): python tools/yarn_reference.py -o tests/data/rope/yarn_transformers.json
"""
import argparse
import json

import torch
import transformers
from transformers import DeepseekV3Config
from transformers.modeling_rope_utils import _compute_yarn_parameters
from transformers.models.deepseek_v3.modeling_deepseek_v3 import yarn_apply_mscale

# (name, rotated dim, rope_theta, max_position_embeddings, rope_scaling as a config.json writes it)
CASES = [
    ("deepseek-v3", 64, 10000.0, 163840,
     {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096, "beta_fast": 32, "beta_slow": 1,
      "mscale": 1.0, "mscale_all_dim": 1.0}),
    ("deepseek-tiny-yarn", 8, 100.0, 128,
     {"type": "yarn", "factor": 4, "original_max_position_embeddings": 32, "beta_fast": 32, "beta_slow": 1,
      "mscale": 1.0, "mscale_all_dim": 0.707}),
    ("defaults", 128, 500000.0, 131072,
     {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}),
    ("no-truncate-given-attention-factor", 64, 1000000.0, 65536,
     {"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 4096, "beta_fast": 16,
      "beta_slow": 2, "attention_factor": 1.1, "truncate": False}),
    ("original-absent", 32, 10000.0, 8192, {"rope_type": "yarn", "factor": 2.0}),
    ("mscale-only", 16, 10000.0, 2048,
     {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 256, "mscale": 0.707}),
]


def case(name, dim, theta, max_pos, scaling):
    cfg = DeepseekV3Config(hidden_size=64, num_attention_heads=4, qk_rope_head_dim=dim, qk_nope_head_dim=16,
                           max_position_embeddings=max_pos, rope_theta=theta, rope_scaling=dict(scaling))
    assert cfg.head_dim == dim, (cfg.head_dim, dim)
    inv_freq, attention_factor = _compute_yarn_parameters(cfg, torch.device("cpu"))
    return {"name": name, "dim": dim, "rope_theta": theta, "max_position_embeddings": max_pos,
            "rope_scaling": scaling, "inv_freq": [float(x) for x in inv_freq.tolist()],
            "attention_factor": float(attention_factor),
            "softmax_scale_factor": float(yarn_apply_mscale(cfg.rope_parameters, 1.0))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    out = {"source": f"transformers {transformers.__version__}, torch {torch.__version__}: "
                     "modeling_rope_utils._compute_yarn_parameters (fp32 inverse frequencies) and "
                     "modeling_deepseek_v3.yarn_apply_mscale (softmax-scale factor on a scale of 1)",
           "cases": [case(*c) for c in CASES]}
    with open(args.output, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
