#!/usr/bin/env bash
# CLI test of reading a user's own PyTorch profiler traces: `fsdpx compare --trace DIR --format json` without
# a plan prints per rank and step HTA's compute, communication, exposed communication and idle time, whose
# whole-trace figures agree with HolisticTraceAnalysis's recorded ones (tests/data/kineto/hta_reference.json)
# within 2%; a truncated trace is one line naming the file and status 2; `fsdpx compare --plan P --trace DIR`
# on the traces of an FSDP2 run of P (CPU, gloo; tools/torch_fsdp2_trace.py) prints the phases and writes its
# HTML whole, its --predicted-trace reads back through the same reader as the simulated step, and
# `fsdpx calibrate --plan P --trace DIR` moves the simulated step toward the measured one.
set -u
FSDPX="$1"
DATA="$2"
source "$(dirname "$0")/cli_check.sh"
PLAN="$DATA/../../configs/plans/llama-tiny-cpu-fsdp4.json"

"$FSDPX" compare --trace "$DATA/kineto/hta_trace_filter" --format json >"$tmp/summary.json"
check "compare --trace without --plan" $?
python3 - "$tmp/summary.json" "$DATA/kineto/hta_reference.json" <<'PY'
import json, sys
s, ref = (json.load(open(p)) for p in sys.argv[1:])
hta = ref["traces"]["tests/data/kineto/hta_trace_filter"]
assert [r["rank"] for r in s["ranks"]] == [0, 1], s["ranks"]
for r in s["ranks"]:
    w, h = r["whole"], hta[str(r["rank"])]
    for ours, theirs in ((w["compute_s"], h["compute_time_us"]), (w["idle_s"], h["idle_time_us"]),
                         (w["span_s"], h["kernel_time_us"])):
        assert abs(ours * 1e6 - theirs) <= 0.02 * theirs, (r["rank"], ours, theirs)
    assert 0 < w["exposed_communication_s"] <= w["communication_s"], w
    # this older trace names no collective in its arguments: NCCL ran all of them as SendRecv kernels
    assert [c["kind"] for c in w["collectives"]] == ["send_recv"] and w["collectives"][0]["count"] > 0, w
    assert len(r["steps"]) == 2 and all(st["compute_s"] > 0 for st in r["steps"]), r["steps"]
PY
check "summary agrees with HTA within 2%" $?

out=$("$FSDPX" compare --trace "$DATA/kineto/hta_nccl_parser_config")
check "text summary" $?
echo "$out" | grep -q "all_reduce *default_pg"
check "text summary names the collective and its process group" $?

head -c 100000 "$DATA/kineto/hta_trace_filter/sampled_rank-0.json.gz" >"$tmp/rank0.json.gz"
err=$("$FSDPX" compare --trace "$tmp/rank0.json.gz" 2>&1 >/dev/null)
status=$?
[ "$status" -eq 2 ] && [ "$(echo "$err" | wc -l)" -eq 1 ] && echo "$err" | grep -q "$tmp/rank0.json.gz: .*truncated"
check "truncated trace: one line naming the file, status 2 ($err)" $?
"$FSDPX" compare --profile "$tmp/rank0.json.gz" >/dev/null 2>&1
[ $? -eq 2 ]
check "--profile without --plan: status 2" $?

"$FSDPX" compare --plan "$PLAN" --trace "$DATA/kineto/fsdp2_cpu_gloo" --format json -o "$tmp/c.html" >"$tmp/c.json"
check "compare --plan --trace" $?
python3 - "$tmp/c.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
phases = {p["phase"]: p for p in c["phases"]}
assert c["host_trace"] and c["ranks"] == 4 and c["steps"] == 2, c
for name in ("forward", "backward", "optimizer", "all_gather", "reduce_scatter"):
    assert phases[name]["measured_s"] > 0 and phases[name]["predicted_s"] > 0, phases.get(name)
# FSDP2 all-gathers each of 4 units in forward and, resharded after forward, the first 3 again in backward,
# for 2 micro-batches: 14 per step, as the plan's program has (the twin runs the plan's units).
assert phases["all_gather"]["measured_count_per_step"] == phases["all_gather"]["ops"] == 14, phases["all_gather"]
misses = [abs(p["predicted_s"] - p["measured_s"]) for p in c["phases"]]
assert misses == sorted(misses, reverse=True), misses
assert c["step"]["measured_s"] > 0
PY
check "phases of the FSDP2 trace against the plan, largest misses first" $?
grep -q "fig-compare-phases" "$tmp/c.html"
check "HTML view written" $?

"$FSDPX" compare --plan "$PLAN" --trace "$DATA/kineto/fsdp2_cpu_gloo" --predicted-trace "$tmp/pred" --format json >"$tmp/c2.json"
check "compare --predicted-trace" $?
"$FSDPX" compare --trace "$tmp/pred" --format json >"$tmp/pred.json"
check "the predicted trace reads back as a profiler trace" $?
for f in "$tmp"/pred/rank*_trace.json; do
  want=$(basename "$f" | tr -dc 0-9)
  # HTA's create_rank_to_trace_dict (hta/common/trace_file.py) reads a file's rank with "rank":\s+(\d+)
  grep -qE "\"rank\":[[:space:]]+$want," "$f" || grep -qE "\"rank\":[[:space:]]+$want\$" "$f"
  check "predicted $(basename "$f") names its rank as HTA finds it" $?
done
python3 - "$tmp/c2.json" "$tmp/pred.json" <<'PY'
import json, sys
c, p = (json.load(open(f)) for f in sys.argv[1:])
w = p["ranks"][0]["whole"]
phases = {x["phase"]: x for x in c["phases"]}
assert abs(w["span_s"] - c["step"]["predicted_s"]) <= 1e-6 * c["step"]["predicted_s"], (w, c["step"])
assert abs(w["exposed_communication_s"] - phases["exposed_communication"]["predicted_s"]) <= 1e-8, w
kinds = {k["kind"]: k for k in w["collectives"]}
assert kinds["all_gather"]["count"] == phases["all_gather"]["ops"], kinds
assert abs(kinds["all_gather"]["time_s"] - phases["all_gather"]["predicted_s"]) <= 1e-8, kinds
PY
check "predicted trace measured like a real one gives the simulated step, exposure and collectives" $?

"$FSDPX" calibrate --plan "$PLAN" --trace "$DATA/kineto/fsdp2_cpu_gloo" -o "$tmp/cluster.json" --format json >"$tmp/cal.json"
check "calibrate --trace" $?
python3 - "$tmp/cal.json" "$tmp/cluster.json" <<'PY'
import json, sys
cal, cluster = (json.load(open(p)) for p in sys.argv[1:])
e = cal["relative_error"]
assert e["after"] < e["before"], e
assert cluster["gpu"]["matmul_efficiency"], cluster
PY
check "re-simulation after calibration moves toward the measured step" $?
"$FSDPX" calibrate --trace "$DATA/kineto/fsdp2_cpu_gloo" -o "$tmp/x.json" >/dev/null 2>&1
[ $? -eq 2 ]
check "calibrate --trace without --plan: status 2" $?
finish
