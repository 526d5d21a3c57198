#!/usr/bin/env python3
"""Developer check that `fsdpx export-hf` output loads in Hugging Face transformers and computes what
fsdpx computes: for llama-tiny and gpt-tiny, trains a few CPU steps with checkpoints, exports, loads the
folder with AutoModelForCausalLM, and compares greedy generation with `fsdpx sample --temperature 0`
token for token (prompt plus tokens within the plan's sequence length, so both see the whole context);
it prints transformers' probability of fsdpx's first token. Needs torch and transformers (a developer
check, not one of the product's tests).

usage: python3 tools/check_hf_export.py ./build/fsdpx [--steps 20] [--tokens 40]
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

    plan, ck, out = work / f"{model}.plan.json", work / f"{model}-ck", work / f"{model}-hf"
    fsdpx(binary, "plan", "--model", model, "--cluster", "cpu", "--world-size", "2", "--seq", "64",
          "--global-batch", "8", "-o", str(plan))
    fsdpx(binary, "run", "--plan", str(plan), "--steps", str(steps), "--checkpoint-dir", str(ck))
    print(fsdpx(binary, "export-hf", "--checkpoint", str(ck), "-o", str(out)).strip())
    ours = json.loads(fsdpx(binary, "sample", "--checkpoint", str(ck), "--temperature", "0", "--tokens", str(tokens),
                            "--format", "json"))

    hf = AutoModelForCausalLM.from_pretrained(out, torch_dtype=torch.float32)
    hf.eval()
    prompt = torch.tensor([ours["prompt_tokens"]])
    with torch.no_grad():
        generated = hf.generate(prompt, max_new_tokens=tokens, do_sample=False, pad_token_id=0)[0, prompt.shape[1]:]
        probs = torch.softmax(hf(prompt).logits[0, -1].double(), dim=-1)
    theirs = generated.tolist()
    same = sum(1 for a, b in zip(ours["tokens"], theirs) if a == b)
    print(f"{model}: {type(hf).__name__}, {sum(p.numel() for p in hf.parameters())} parameters; greedy tokens "
          f"equal for {same}/{tokens}; first token {ours['tokens'][0]} (transformers p = {probs[ours['tokens'][0]]:.4f}, "
          f"argmax {int(probs.argmax())})")
    print(f"  fsdpx:        {bytes(ours['tokens'])!r}\n  transformers: {bytes(theirs)!r}")
    return same == tokens


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fsdpx")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--tokens", type=int, default=40)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        ok = all([check_model(args.fsdpx, m, Path(d), args.steps, args.tokens) for m in ("llama-tiny", "gpt-tiny")])
    print("OK" if ok else "MISMATCH")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
