#!/usr/bin/env python3
"""Comparisons for tools/gpu_acceptance.sh (standard library only). Subcommands:
  losses GOT REF TOL            per-step loss max relative difference of two runs (fsdpx run --format json
                                or tools/torch_reference.py output: both list steps with "step" and "loss")
  perf PLAN RUN SIM EAGER COMPILE  markdown rows: measured tokens/s and MFU, the simulator's prediction,
                                PyTorch eager and torch.compile on the same model and batch
  predict RUN SIM TOL           measured step time vs the simulator's, relative error
  tps PLAN RUN                  measured tokens/s of a fsdpx run (tools/gpu_check.sh)
  versus RUN TORCH PLAN MODE    PyTorch's tokens/s beside the fsdpx run's (tools/gpu_check.sh)
  with-cluster PLAN CLUSTER OUT  PLAN with the calibrated figures of CLUSTER (fsdpx calibrate -o) on its GPU, to OUT
  payload-sha256 FILE...        sha256sum's lines for safetensors files' tensor bytes (after the header, whose
                                metadata names the data file's path on the machine that wrote it)
NaN-safe: a NaN or infinite loss or difference fails (Python's max() drops NaN that comes after a number).
Measured step times are the median over the steps after the first two (warm-up: allocator, cuBLASLt
heuristics). A missing or unreadable file prints "missing (<file>)" so the table still renders."""
import hashlib
import json
import math
import statistics
import struct
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def step_time_s(run):
    times = [s["time_s"] for s in run["steps"]]
    return statistics.median(times[2:] if len(times) > 2 else times)


def losses(got_path, ref_path, tol):
    got, ref = load(got_path), load(ref_path)
    if got is None or ref is None:
        return "missing (%s)" % (got_path if got is None else ref_path)
    ref_loss = {s["step"]: s["loss"] for s in ref["steps"]}
    diffs = [rel_diff(s["loss"], ref_loss[s["step"]]) for s in got["steps"] if s["step"] in ref_loss]
    if not diffs:
        return "FAIL (no common steps)"
    worst = nan_max(diffs)
    return "%s (max rel diff %.2e over %d steps)" % ("pass" if worst <= float(tol) else "FAIL", worst, len(diffs))


def rel_diff(got, ref):
    """|got - ref| / |ref|; NaN when either is not finite (a JSON null loss counts as NaN)."""
    got = float("nan") if got is None else float(got)
    ref = float("nan") if ref is None else float(ref)
    if not (math.isfinite(got) and math.isfinite(ref)):
        return float("nan")
    return abs(got - ref) / abs(ref) if ref != 0 else (0.0 if got == 0 else float("inf"))


def nan_max(values):
    """max() that returns NaN when any value is NaN (max([1.0, nan]) is 1.0 in Python)."""
    return float("nan") if any(math.isnan(v) for v in values) else max(values)


def tokens_per_s(plan, run):
    t = plan["training"]
    return t["global_batch"] * t["seq"] / step_time_s(run)


def tps(plan_path, run_path):
    plan, run = load(plan_path), load(run_path)
    if plan is None or run is None:
        return "missing (%s)" % (plan_path if plan is None else run_path)
    t = plan["training"]
    # Host time before the first step (fsdpx run's JSON since issue 29's start-up work; absent before).
    startup = ""
    if "startup_s" in run:
        startup = "; start-up %.1f s, initial parameters %.1f s of it" % (run["startup_s"], run.get("init_params_s", 0))
    return "%.0f tokens/s (median step %.3f s over %d steps; micro-batch %d x accum %d, seq %d%s)" % (
        tokens_per_s(plan, run), step_time_s(run), len(run["steps"]), t["micro_batch"],
        t["global_batch"] // t["micro_batch"], t["seq"], startup)


def versus(run_path, torch_path, plan_path, mode):
    run, b, plan = load(run_path), load(torch_path), load(plan_path)
    if b is None:
        return "missing (%s)" % torch_path
    text = "PyTorch %s %.0f tokens/s" % (mode, b["tokens_per_s"])
    if run is None or plan is None:
        return text + "; fsdpx run missing"
    return text + "; fsdpx / PyTorch %s = %.2f" % (mode, tokens_per_s(plan, run) / b["tokens_per_s"])


def perf(plan_path, run_path, sim_path, eager_path, compile_path):
    plan, run, sim = load(plan_path), load(run_path), load(sim_path)
    if plan is None or run is None or sim is None:
        print("| llama3.2-1b seq 2048 | missing | plan, run or simulation output |")
        return
    t = plan["training"]
    tokens_per_step = t["global_batch"] * t["seq"]
    measured_tps = tokens_per_step / step_time_s(run)
    # MFU is proportional to tokens/s for one plan: scale the simulator's MFU by the measured ratio.
    measured_mfu = sim["mfu"] * measured_tps / sim["tokens_per_s_per_gpu"]
    err = sim["tokens_per_s_per_gpu"] / measured_tps - 1
    shape = "micro-batch %d x accum %d" % (t["micro_batch"], t["global_batch"] // t["micro_batch"])
    print("| fsdpx CUDA, llama3.2-1b seq 2048 (%s) | %.0f tokens/s, MFU %.1f%% | target MFU >= 45%%: %s |"
          % (shape, measured_tps, 100 * measured_mfu, "pass" if measured_mfu >= 0.45 else "FAIL"))
    print("| simulator, same plan | %.0f tokens/s, MFU %.1f%% | error %+.1f%%, target <= 10%%: %s |"
          % (sim["tokens_per_s_per_gpu"], 100 * sim["mfu"], 100 * err, "pass" if abs(err) <= 0.10 else "FAIL"))
    for name, path in (("PyTorch eager", eager_path), ("torch.compile", compile_path)):
        b = load(path)
        if b is None:
            print("| %s, same model and batch | missing | %s |" % (name, path))
            continue
        faster = measured_tps / b["tokens_per_s"]
        print("| %s, same model and batch | %.0f tokens/s, MFU %.1f%% | fsdpx / %s = %.2f%s |"
              % (name, b["tokens_per_s"], 100 * (b["mfu"] or 0), name, faster,
                 (" (target > 1: %s)" % ("pass" if faster > 1 else "FAIL")) if name == "PyTorch eager" else ""))


def predict(run_path, sim_path, tol):
    run, sim = load(run_path), load(sim_path)
    if run is None or sim is None:
        return "missing (%s)" % (run_path if run is None else sim_path)
    measured = step_time_s(run)
    err = sim["step_time_s"] / measured - 1
    return "%s (measured %.4f s, predicted %.4f s, error %+.1f%%)" % (
        "pass" if abs(err) <= float(tol) else "FAIL", measured, sim["step_time_s"], 100 * err)


def with_cluster(plan_path, cluster_path, out_path):
    """The plan's GPU with the calibrated cluster's GPU figures laid over it (a calibrated cluster's "gpu" holds
    only the calibrated keys and names its base GPU), and the cluster's name; the plan's prediction dropped."""
    plan, cluster = load(plan_path), load(cluster_path)
    if plan is None or cluster is None:
        sys.exit("with-cluster: cannot read %s" % (plan_path if plan is None else cluster_path))
    plan["cluster"]["gpu"].update({k: v for k, v in cluster["gpu"].items() if k != "name"})
    plan["cluster"]["name"] = cluster["name"]
    plan.pop("predicted", None)
    with open(out_path, "w") as f:
        json.dump(plan, f, indent=1)


def payload_sha256(path):
    """SHA-256 of a safetensors file's bytes after its 8-byte length and JSON header: the tensors alone."""
    with open(path, "rb") as f:
        header_bytes = struct.unpack("<Q", f.read(8))[0]
        f.seek(8 + header_bytes)
        return hashlib.sha256(f.read()).hexdigest()


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "losses":
        print(losses(*args))
    elif cmd == "perf":
        perf(*args)
    elif cmd == "predict":
        print(predict(*args))
    elif cmd == "tps":
        print(tps(*args))
    elif cmd == "versus":
        print(versus(*args))
    elif cmd == "with-cluster":
        with_cluster(*args)
    elif cmd == "payload-sha256":
        for p in args:
            print("%s  %s" % (payload_sha256(p), p.rsplit("/", 1)[-1]))
    else:
        sys.exit("unknown subcommand " + cmd)
