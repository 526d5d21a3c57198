# Regenerates tiny.safetensors, the byte-exact reference for tests/executor/test_safetensors.cpp, with the
# reference writer (pip package safetensors 0.8.0, PyTorch 2.15): python3 make_tiny.py
import torch
from safetensors.torch import save_file

save_file({
    "w": torch.tensor([[1.0, -2.0], [0.5, 3.25]], dtype=torch.float32),
    "b": torch.tensor([1.0, -2.0, 0.25], dtype=torch.bfloat16),
    "ids": torch.tensor([7, -1], dtype=torch.int32),
    "a.empty": torch.zeros((0, 3), dtype=torch.float32),
}, "tiny.safetensors", metadata={"format": "pt"})
