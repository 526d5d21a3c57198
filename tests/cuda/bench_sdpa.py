#!/usr/bin/env python3
"""tests/cuda/bench_sdpa.py — PyTorch SDPA's causal attention TFLOP/s at bench_attention_tc's shapes (B 1,
32 query heads, 8 KV heads expanded to 32 as SDPA's flash backend needs, bf16), forward and backward, with
the same FLOP count (forward 4·B·NH·T²·HD/2, backward 2.5x). For the GPU machine, beside
build/tests/cuda/bench_attention_tc; prints one line per case."""
import torch
import torch.nn.functional as F


def timed_ms(fn, repeats=10):
    fn()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(repeats):
        start.record()
        fn()
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop))
    return sorted(times)[len(times) // 2]


def main():
    for t in (2048, 8192):
        for hd in (64, 128):
            q, k, v = (torch.randn(1, 32, t, hd, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                       for _ in range(3))
            flops = 4.0 * 32 * t * t * hd / 2
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            dout = torch.randn_like(out)
            fwd = timed_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
            bwd = timed_ms(lambda: torch.autograd.grad(out, (q, k, v), dout, retain_graph=True))
            print(f"sdpa T={t} HD={hd} forward {fwd:.3f} ms {flops / fwd / 1e9:.1f} TFLOP/s "
                  f"backward {bwd:.3f} ms {2.5 * flops / bwd / 1e9:.1f} TFLOP/s")


if __name__ == "__main__":
    main()
