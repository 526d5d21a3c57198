#!/usr/bin/env bash
# CLI test of prediction against measurement: a 4-rank CPU plan run with `fsdpx run --trace` and
# simulated with `fsdpx simulate --trace` gives two Chrome traces of the same schema (traceEvents with
# ph/ts/dur/pid/tid/name, process and thread names, memory counters) whose op names join (every measured
# op has a simulated counterpart on its rank's stage); `fsdpx compare` on the trace and on the run's
# profile prints per-op error rows ordered by the size of the miss, per-phase rows and the step time,
# writes its HTML whole, and refuses another plan's run, a simulated trace and unknown ops with one line
# and status 2. A pipeline plan traced on chosen ranks joins per stage.
set -u
FSDPX="$1"
PLANS="$2"
source "$(dirname "$0")/cli_check.sh"

"$FSDPX" plan --model llama-tiny --cluster cpu --world-size 4 --seq 64 --global-batch 8 -o "$tmp/p4.json" >/dev/null
check "plan for 4 ranks" $?
"$FSDPX" plan --model llama-tiny --cluster cpu --world-size 2 --seq 64 --global-batch 8 -o "$tmp/p2.json" >/dev/null
check "plan for 2 ranks" $?
"$FSDPX" run --plan "$tmp/p4.json" --steps 3 --trace "$tmp/run.json" --profile "$tmp/profile.json" --format json >/dev/null
check "run --trace" $?
"$FSDPX" simulate --plan "$tmp/p4.json" --trace "$tmp/sim.json" >/dev/null
check "simulate --trace" $?

schema=$(python3 - "$tmp/run.json" "$tmp/sim.json" <<'PY'
import json, sys
run, sim = (json.load(open(p)) for p in sys.argv[1:])
problems = []
for label, t in (("run", run), ("sim", sim)):
    ev = t.get("traceEvents")
    if not isinstance(ev, list) or not ev:
        problems.append(f"{label}: no traceEvents"); continue
    ops = [e for e in ev if e.get("ph") == "X"]
    counters = [e for e in ev if e.get("ph") == "C"]
    names = [e for e in ev if e.get("ph") == "M" and e.get("name") in ("process_name", "thread_name")]
    if not ops: problems.append(f"{label}: no op events")
    if not counters: problems.append(f"{label}: no memory counters")
    if not names: problems.append(f"{label}: no process/thread names")
    for e in ops:
        for k, ty in (("ph", str), ("ts", (int, float)), ("dur", (int, float)), ("pid", int), ("tid", int), ("name", str)):
            if not isinstance(e.get(k), ty):
                problems.append(f"{label}: op event without {k}: {e}"); break
        if e.get("dur", -1) < 0 or e.get("ts", -1) < 0: problems.append(f"{label}: negative time: {e}")
    for e in counters:
        if e.get("name") != "memory_GiB" or not all(isinstance(v, (int, float)) for v in e["args"].values()):
            problems.append(f"{label}: bad counter {e}")
# Every measured op has a simulated counterpart with the same name, kind and stream on its rank's role
# (one role here: the simulator runs rank 0 by symmetry).
sim_ops = {(e["name"], e["cat"], e["tid"]) for e in sim["traceEvents"] if e.get("ph") == "X"}
run_ops = [e for e in run["traceEvents"] if e.get("ph") == "X"]
missing = {(e["name"], e["cat"], e["tid"]) for e in run_ops} - sim_ops
if missing: problems.append(f"measured ops without a simulated counterpart: {sorted(missing)[:5]}")
if {(e["name"], e["cat"], e["tid"]) for e in run_ops} != sim_ops: problems.append("the op sets differ")
pids = sorted({e["pid"] for e in run_ops})
if pids != [0, 1, 2, 3]: problems.append(f"measured ranks {pids}, expected 0..3")
steps = sorted({e["args"]["step"] for e in run_ops})
if steps != [1, 2, 3]: problems.append(f"measured steps {steps}")
if run.get("otherData", {}).get("fsdpx") != "fsdpx-measured-trace/1": problems.append("run: no otherData")
mem = [e for e in run["traceEvents"] if e.get("ph") == "C" and e["pid"] == 0]
if not mem or max(e["args"]["params"] for e in mem) <= 0: problems.append("run: no parameter bytes in the counters")
if max(e["args"]["activations"] for e in mem) <= 0: problems.append("run: activations never live")
print("ok" if not problems else "; ".join(problems))
PY
)
echo "schema and join: $schema"
[ "$schema" = ok ]; check "both traces have the schema and their op names join" $?

"$FSDPX" compare --plan "$tmp/p4.json" --profile "$tmp/run.json" --top 0 -o "$tmp/cmp.html" >"$tmp/cmp.txt"
check "compare on the trace" $?
grep -q "^step time: predicted .*, measured .*, error [+-][0-9.]*%" "$tmp/cmp.txt"; check "compare prints the step time" $?
grep -q "per phase" "$tmp/cmp.txt" && grep -qE "^  forward +[0-9]+ " "$tmp/cmp.txt"; check "compare prints phases" $?
grep -qE "^  fwd\.s0\.mb0 +forward " "$tmp/cmp.txt"; check "compare prints an op row" $?
"$FSDPX" compare --plan "$tmp/p4.json" --profile "$tmp/run.json" --format json >"$tmp/cmp.json"
check "compare --format json" $?
rows=$(python3 - "$tmp/cmp.json" "$tmp/run.json" <<'PY'
import json, sys
c, run = (json.load(open(p)) for p in sys.argv[1:])
problems = []
ops = c["ops"]
misses = [abs(o["predicted_s"] - o["measured_s"]) for o in ops]
if misses != sorted(misses, reverse=True): problems.append("ops not ordered by miss")
measured_names = {e["name"] for e in run["traceEvents"] if e.get("ph") == "X"}
if {o["name"] for o in ops} != measured_names: problems.append("op rows are not the measured ops")
for o in ops:
    if o["measured_s"] <= 0 or o["samples"] != 4 * 2: problems.append(f"bad row {o}"); break
    if abs(o["error"] - (o["predicted_s"] / o["measured_s"] - 1)) > 1e-9: problems.append(f"error of {o}"); break
# Measured mean of fwd.s0.mb0 over ranks 0..3 and steps 2..3 (step 1 left out).
d = [e["dur"] * 1e-6 for e in run["traceEvents"] if e.get("ph") == "X" and e["name"] == "fwd.s0.mb0" and e["args"]["step"] > 1]
row = next(o for o in ops if o["name"] == "fwd.s0.mb0")
if len(d) != 8 or abs(row["measured_s"] - sum(d) / len(d)) > 1e-9: problems.append(f"fwd.s0.mb0 mean {row['measured_s']} vs {d}")
phases = {p["phase"]: p for p in c["phases"]}
for need in ("forward", "backward", "optimizer", "all_gather", "reduce_scatter"):
    if need not in phases: problems.append(f"no phase {need}")
if abs(sum(p["measured_s"] for p in c["phases"]) - sum(o["measured_s"] for o in ops)) > 1e-9: problems.append("phases do not sum the ops")
if not (c["step"]["predicted_s"] > 0 and c["step"]["measured_s"] > 0): problems.append("no step times")
print("ok" if not problems else "; ".join(problems))
PY
)
echo "compare rows: $rows"
[ "$rows" = ok ]; check "per-op rows: the measured ops, means over ranks and steps, largest misses first" $?
head -c 15 "$tmp/cmp.html" | grep -q "<!DOCTYPE html>" && tail -n 1 "$tmp/cmp.html" | grep -q "</html>" &&
  grep -q 'id="fig-compare-phases"' "$tmp/cmp.html" && grep -q 'id="table-compare-ops"' "$tmp/cmp.html"
check "the HTML view is written whole" $?
"$FSDPX" compare --plan "$tmp/p4.json" --profile "$tmp/profile.json" >"$tmp/cmp_profile.txt"
check "compare on the profile" $?
grep -q "^measured: 3 steps on 1 rank" "$tmp/cmp_profile.txt"; check "the profile is rank 0's op times" $?

refused() {  # name, expected message part, command...
  local name="$1" want="$2"
  shift 2
  "$@" >/dev/null 2>"$tmp/err"
  local status=$?
  [ "$status" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q -- "$want" "$tmp/err"
  local refused_ok=$?  # taken before the message's $(head ...) would reset $?
  check "$name (status $status: $(head -c 300 "$tmp/err"))" $refused_ok
}
refused "another plan's run is refused" "run.json: /otherData/program_hash: .*another plan" \
  "$FSDPX" compare --plan "$tmp/p2.json" --profile "$tmp/run.json"
refused "another plan's profile is refused" "profile.json: /plan: lowers to another step program" \
  "$FSDPX" compare --plan "$tmp/p2.json" --profile "$tmp/profile.json"
refused "a simulated trace is refused" "sim.json: /otherData: missing: not a trace of fsdpx run --trace" "$FSDPX" compare --plan "$tmp/p4.json" --profile "$tmp/sim.json"
python3 - "$tmp/run.json" "$tmp/renamed.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
next(e for e in t["traceEvents"] if e.get("ph") == "X")["name"] = "fwd.s99.mb0"
json.dump(t, open(sys.argv[2], "w"))
PY
refused "an op outside the program is refused" "renamed.json: /traceEvents/[0-9]*: op 'fwd.s99.mb0' is not in" \
  "$FSDPX" compare --plan "$tmp/p4.json" --profile "$tmp/renamed.json"
python3 - "$tmp/run.json" "$tmp/dropped.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
t["traceEvents"] = [e for e in t["traceEvents"] if e.get("name") != "opt"]
json.dump(t, open(sys.argv[2], "w"))
PY
refused "an op never measured is refused" "dropped.json: op 'opt' of the plan's step program was not measured" \
  "$FSDPX" compare --plan "$tmp/p4.json" --profile "$tmp/dropped.json"
refused "--trace-ranks outside the plan" "--trace-ranks: rank 7" \
  "$FSDPX" run --plan "$tmp/p4.json" --steps 1 --trace "$tmp/x.json" --trace-ranks 0,7
refused "--trace-ranks without --trace" "needs --trace" "$FSDPX" run --plan "$tmp/p4.json" --steps 1 --trace-ranks 0

# A pipeline plan (2 stages x 2 data-parallel ranks), ranks 0 and 3 (one per stage), the last step only.
"$FSDPX" run --plan "$PLANS/llama-tiny8-pp2-dp2-1f1b.json" --steps 2 --trace "$tmp/pp.json" --trace-ranks 0,3 \
  --trace-steps 1 --format json >/dev/null
check "pipeline run --trace-ranks 0,3 --trace-steps 1" $?
pp=$(python3 - "$tmp/pp.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
ops = [e for e in t["traceEvents"] if e.get("ph") == "X"]
ok = sorted({e["pid"] for e in ops}) == [0, 3] and {e["args"]["step"] for e in ops} == {2} and \
     any(e["args"]["kind"] == "send" for e in ops)
print("ok" if ok else f"pids {sorted({e['pid'] for e in ops})} steps {sorted({e['args']['step'] for e in ops})}")
PY
)
[ "$pp" = ok ]; check "the pipeline trace holds ranks 0 and 3, step 2, with its sends ($pp)" $?
"$FSDPX" compare --plan "$PLANS/llama-tiny8-pp2-dp2-1f1b.json" --profile "$tmp/pp.json" --top 0 >"$tmp/pp.txt"
check "compare joins both stages" $?
grep -qE "^  [a-z]+\.[^ ]+ +1 +(send|recv) " "$tmp/pp.txt"; check "stage 1's transfers are rows" $?

finish
