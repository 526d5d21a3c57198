#!/usr/bin/env python3
"""Developer check that `fsdpx export-hf` output loads in Hugging Face transformers and computes what
fsdpx computes: for llama-tiny, llama-tiny with Llama 3.1 RoPE scaling (original context 32 tokens, so
that every band of the scaling acts within the 64-token window) and gpt-tiny, trains a few CPU steps with checkpoints, exports, loads the
folder with AutoModelForCausalLM, and compares greedy generation with `fsdpx sample --temperature 0`
token for token (prompt plus tokens within the plan's sequence length, so both see the whole context)
and the probability each model gives every generated token (within 1e-4; fp32 on both sides). Needs torch and transformers (a developer
check, not one of the product's tests).

usage: python3 tools/check_hf_export.py ./build/fsdpx [--steps 300] [--tokens 40]
"""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path


def fsdpx(binary, *args):
    return subprocess.run([binary, *args], check=True, capture_output=True, text=True).stdout


def check_model(binary, model, work, steps, tokens):
    import torch
    from transformers import AutoModelForCausalLM

    name = Path(model).stem
    plan, ck, out = work / f"{name}.plan.json", work / f"{name}-ck", work / f"{name}-hf"
    fsdpx(binary, "plan", "--model", model, "--cluster", "cpu", "--world-size", "2", "--seq", "64",
          "--global-batch", "8", "-o", str(plan))
    fsdpx(binary, "run", "--plan", str(plan), "--steps", str(steps), "--checkpoint-dir", str(ck))
    print(fsdpx(binary, "export-hf", "--checkpoint", str(ck), "-o", str(out)).strip())
    ours = json.loads(fsdpx(binary, "sample", "--checkpoint", str(ck), "--temperature", "0", "--tokens", str(tokens),
                            "--format", "json"))

    hf = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)
    hf.eval()
    prompt = torch.tensor([ours["prompt_tokens"]])
    with torch.no_grad():
        generated = hf.generate(prompt, max_new_tokens=tokens, do_sample=False, pad_token_id=0)[0, prompt.shape[1]:]
        # Probability transformers gives each token fsdpx generated, from one forward over the whole text.
        full = torch.tensor([ours["prompt_tokens"] + ours["tokens"]])
        probs = torch.softmax(hf(full).logits[0].double(), dim=-1)
    n = len(ours["prompt_tokens"])
    theirs_p = [float(probs[n - 1 + i, t]) for i, t in enumerate(ours["tokens"])]
    max_diff = max(abs(a - b) for a, b in zip(theirs_p, ours["token_probs"]))
    theirs = generated.tolist()
    same = sum(1 for a, b in zip(ours["tokens"], theirs) if a == b)
    print(f"{name}: {type(hf).__name__}, {sum(p.numel() for p in hf.parameters())} parameters; greedy tokens "
          f"equal for {same}/{tokens}; token probabilities max |fsdpx - transformers| = {max_diff:.2e} "
          f"(fsdpx {ours['token_probs'][0]:.4f} vs {theirs_p[0]:.4f} for the first)")
    print(f"  fsdpx:        {bytes(ours['tokens'])!r}\n  transformers: {bytes(theirs)!r}")
    return same == tokens and max_diff < 1e-4


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fsdpx")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--tokens", type=int, default=40)
    args = ap.parse_args()
    scaled = json.load(open(Path(__file__).resolve().parent.parent / "configs/models/llama-tiny.json"))
    scaled["name"] = "llama-tiny-rope-scaled"
    scaled["rope_scaling"] = {"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                              "original_max_seq": 32}
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "llama-tiny-rope-scaled.json").write_text(json.dumps(scaled))
        models = ["llama-tiny", str(Path(d) / "llama-tiny-rope-scaled.json"), "gpt-tiny"]
        ok = all([check_model(args.fsdpx, m, Path(d), args.steps, args.tokens) for m in models])
    print("OK" if ok else "MISMATCH")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
