"""Model shapes and notes shared by the ground-truth generators (make_ground_truth.py, ground_truth_dgxc.py).

Models: the published architecture of each model the tables name (layers, widths, heads, KV groups, FFN kind,
vocabulary, tied embeddings). Leaves out everything about how a run was configured.
"""

LLAMA31_8B = {"name": "Llama-3.1-8B", "arch": "llama", "layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8,
              "ffn_hidden": 14336, "ffn_kind": "swiglu", "vocab": 128256, "tied_embeddings": False}
LLAMA31_70B = {"name": "Llama-3.1-70B", "arch": "llama", "layers": 80, "hidden": 8192, "heads": 64, "kv_heads": 8,
               "ffn_hidden": 28672, "ffn_kind": "swiglu", "vocab": 128256, "tied_embeddings": False}
LLAMA31_405B = {"name": "Llama-3.1-405B (benchmark yaml: 16 KV groups)", "arch": "llama", "layers": 126,
                "hidden": 16384, "heads": 128, "kv_heads": 16, "ffn_hidden": 53248, "ffn_kind": "swiglu",
                "vocab": 128256, "tied_embeddings": False}
NEMOTRON_15B = {"name": "Nemotron-4 15B", "arch": "llama", "layers": 32, "hidden": 6144, "heads": 48, "kv_heads": 8,
                "ffn_hidden": 24576, "ffn_kind": "squared_relu", "vocab": 256000, "tied_embeddings": False}
NEMOTRON_340B = {"name": "Nemotron-4 340B", "arch": "llama", "layers": 96, "hidden": 18432, "heads": 96,
                 "kv_heads": 8, "ffn_hidden": 73728, "ffn_kind": "squared_relu", "vocab": 256000,
                 "tied_embeddings": False}
GPT3_175B = {"name": "GPT-3 175B (NeMo)", "arch": "gpt", "layers": 96, "hidden": 12288, "heads": 96, "kv_heads": 96,
             "ffn_hidden": 49152, "ffn_kind": "gelu", "vocab": 51200, "tied_embeddings": True}

NEMOTRON_NOTES = ["tied_embeddings=false from the Nemotron-4 report (untied), not in source",
                  "published mfu_pct uses the dgxc attention FLOP formula (see the source's Notes); compare tokens/s"]
