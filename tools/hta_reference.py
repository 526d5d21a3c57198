#!/usr/bin/env python3
"""Records HolisticTraceAnalysis's figures for trace directories as a JSON fixture (developer tool).

Runs HTA's TraceAnalysis on each directory given and writes, per rank, get_temporal_breakdown's
idle/compute/non-compute/kernel times and get_gpu_kernel_breakdown's summed kernel time per kernel type and
per communication or memory kernel name, and get_comm_comp_overlap's overlap percentage. The C++ test of fsdpx's trace summary
(tests/kineto/test_step_breakdown.cpp) compares against this file, so neither fsdpx nor its tests need HTA.
Usage: .venv/bin/python tools/hta_reference.py OUT.json DIR [DIR...]   (pip install HolisticTraceAnalysis)
"""
import json
import os
import sys
from importlib.metadata import version

from hta.trace_analysis import TraceAnalysis


def figures(directory):
    ta = TraceAnalysis(trace_dir=directory)
    temporal = ta.get_temporal_breakdown(visualize=False)
    _, kernels = ta.get_gpu_kernel_breakdown(visualize=False, duration_ratio=1.0, num_kernels=1_000_000,
                                             include_memory_kernels=True)
    overlap = ta.get_comm_comp_overlap(visualize=False)
    ranks = {}
    for row in temporal.to_dict("records"):
        r = int(row["rank"])
        ranks[r] = {"idle_time_us": float(row["idle_time(us)"]), "compute_time_us": float(row["compute_time(us)"]),
                    "non_compute_time_us": float(row["non_compute_time(us)"]),
                    "kernel_time_us": float(row["kernel_time(us)"]), "kernel_type_sum_us": {}, "kernels": {}}
    for row in kernels.to_dict("records"):
        entry = ranks[int(row["rank"])]
        kind = row["kernel_type"]
        entry["kernel_type_sum_us"][kind] = entry["kernel_type_sum_us"].get(kind, 0.0) + float(row["sum (us)"])
        if row["name"] != "others" and kind != "COMPUTATION":  # compute kernels: too many names to keep
            entry["kernels"].setdefault(kind, {})[row["name"]] = float(row["sum (us)"])
    for row in overlap.to_dict("records"):
        ranks[int(row["rank"])]["comp_comm_overlap_pctg"] = float(row["comp_comm_overlap_pctg"])
    return {str(r): v for r, v in sorted(ranks.items())}


def main():
    out, dirs = sys.argv[1], sys.argv[2:]
    result = {"tool": f"HolisticTraceAnalysis {version('HolisticTraceAnalysis')}",
              "command": "tools/hta_reference.py " + " ".join(sys.argv[1:])}
    # HTA shrinks nanosecond-resolution events to whole microseconds by default (ceil the start, floor the
    # end: hta/common/trace_parser.py round_down_time_stamps), losing up to 1 us per kernel; "traces" holds
    # its figures at full resolution (HTA_DISABLE_NS_ROUNDING), "traces_rounded_us" its default ones.
    os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
    result["traces"] = {d: figures(d) for d in dirs}
    os.environ["HTA_DISABLE_NS_ROUNDING"] = "0"
    result["traces_rounded_us"] = {d: figures(d) for d in dirs}
    with open(out, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
