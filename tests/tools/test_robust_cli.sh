#!/usr/bin/env bash
# tests/tools/test_robust_cli.sh FSDPX CONFIG_DIR DATA_DIR — issue 34, "nothing succeeds silently", through
# the command line: --data /dev/urandom refused within 2 s in under 200 MB (GNU time's maximum RSS), a
# directory given for --data or --init-weights and a binary file given as text refused naming them; a failed
# write of stdout is exit 1; hostile numbers for --seed and --steps refused naming the flag; --nodes beyond the
# readers' limit refused before a plan is written; a measured value outside its physical range refused with
# its JSON path; "no plan fits" and a model's short max_seq naming the files; temporaries of a killed run
# removed by the next; a SIGSTOPped rank of a 4-process run named within --comm-timeout 5.
set -u
FSDPX=$1
CONFIGS=$2
DATA=$3
source "$(dirname "$0")/cli_check.sh"
plan=$CONFIGS/plans/llama-tiny-cpu-fsdp4.json

# expect2 NAME NEEDLE ARGS...: exit 2, one stderr line containing NEEDLE.
expect2() {
  local name=$1 needle=$2
  shift 2
  timeout 60 "$FSDPX" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [[ $rc -eq 2 && $(wc -l <"$tmp/err") -eq 1 ]] && grep -qF -- "$needle" "$tmp/err"
  local ok=$?
  [[ $ok -eq 0 ]] || echo "  $name: exit $rc, stderr: $(head -c 400 "$tmp/err")"
  check "$name" $ok
}

# Input streams: a device is refused before anything grows.
if [[ -x /usr/bin/time ]]; then
  /usr/bin/time -v -o "$tmp/time" timeout 30 "$FSDPX" run --plan "$plan" --steps 1 --data /dev/urandom \
    >"$tmp/out" 2>"$tmp/err"
  rc=$?
  rss_kb=$(awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}' "$tmp/time")
  wall=$(awk '/Elapsed \(wall clock\)/ {print $NF}' "$tmp/time")
  wall_s=$(python3 -c "import sys; p=sys.argv[1].split(':'); print(float(p[-1]) + 60*float(p[-2]) + (3600*float(p[-3]) if len(p)>2 else 0))" "$wall")
  # fsdpx maps no CUDA library before main (the CUDA backend is a module loaded by run --backend cuda).
  /usr/bin/time -v -o "$tmp/time0" "$FSDPX" --version >/dev/null
  floor_kb=$(awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}' "$tmp/time0")
  echo "  --data /dev/urandom: exit $rc in $wall_s s, peak RSS $rss_kb kB (fsdpx --version: $floor_kb kB): $(cat "$tmp/err")"
  [[ $rc -eq 2 && $(wc -l <"$tmp/err") -eq 1 ]] && grep -qF "/dev/urandom: a character device" "$tmp/err" &&
    python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < 2 and int(sys.argv[2]) < 200*1024 else 1)" \
      "$wall_s" "$rss_kb"
  check "--data /dev/urandom: exit 2 within 2 s, one line, peak RSS < 200 MB" $?
else
  echo "  (skipped the /dev/urandom memory check: no /usr/bin/time)"
fi
expect2 "--data /dev/zero" "/dev/zero: a character device, not a data file" run --plan "$plan" --steps 1 --data /dev/zero
mkdir -p "$tmp/dir"
expect2 "--data DIR" "$tmp/dir: a directory, not a data file" run --plan "$plan" --steps 1 --data "$tmp/dir"
expect2 "--init-weights DIR" "$tmp/dir: a directory, not a weights file" run --plan "$plan" --steps 1 --init-weights "$tmp/dir"
head -c 5000 /dev/urandom >"$tmp/binary.txt"
printf 'text\0more' >>"$tmp/binary.txt"
expect2 "--data binary file as text" "$tmp/binary.txt: not plain text (a NUL byte at offset" \
  run --plan "$plan" --steps 1 --data "$tmp/binary.txt"

# Output streams: stdout checked at the end.
if [[ -c /dev/full ]]; then
  "$FSDPX" simulate --plan "$plan" >/dev/full 2>"$tmp/err"
  rc=$?
  [[ $rc -eq 1 ]] && grep -qF "standard output: cannot write: No space left on device" "$tmp/err"
  check "simulate > /dev/full: exit 1 with a message (got $rc)" $?
  "$FSDPX" plan --model llama-tiny --cluster cpu --world-size 4 --seq 64 --global-batch 8 >/dev/full 2>"$tmp/err"
  [[ $? -eq 1 ]] && grep -qF "standard output: cannot write" "$tmp/err"
  check "plan > /dev/full: exit 1 with a message" $?
fi

# Command-line numbers: one strict parser.
for seed in -1 1e23 18446744073709551616 '2^64' 010 0x10 ' 7'; do
  expect2 "--seed '$seed'" "--seed" run --plan "$plan" --steps 1 --seed "$seed"
done
expect2 "--steps 1e20" "--steps" run --plan "$plan" --steps 1e20
expect2 "--steps 2^41 (beyond the plan readers' step limit)" "--steps" run --plan "$plan" --steps 2199023255552
expect2 "--memory-limit nan" "--memory-limit" plan --model llama-tiny --cluster cpu --world-size 4 --seq 64 \
  --global-batch 8 --memory-limit nan
expect2 "--comm-timeout 0" "--comm-timeout" run --plan "$plan" --steps 1 --comm-timeout 0

# One table of limits for the plan writer and its readers.
expect2 "plan --nodes 65537" "--nodes" plan --model llama3.1-8b --cluster dgx-h100 --nodes 65537 --seq 4096 \
  --global-batch 65537 -o "$tmp/huge.json"
[[ ! -e $tmp/huge.json ]]
check "plan --nodes 65537 wrote no plan" $?

# Validation files: measured values within physical ranges.
python3 - "$DATA/validation/tiny_cases.json" "$tmp/cases.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["cases"][0]["measured"]["tokens_per_s_per_gpu"] = 1e-320
json.dump(d, open(sys.argv[2], "w"))
PY
# validate lists a malformed case as skipped, with its error, and goes on with the others (docs/validation.md).
"$FSDPX" validate "$tmp/cases.json" >"$tmp/val.out" 2>"$tmp/err"
grep -qF "$tmp/cases.json: /cases/0/measured/tokens_per_s_per_gpu: expected a number in [0.001, 1000000000]" \
  "$tmp/val.out" && ! grep -qi "inf" "$tmp/val.out"
check "validate: tokens/s of 1e-320 is refused with its JSON path, no +inf" $?

# Errors name their file: no plan fits, and a model file's max_seq.
expect2 "no plan fits names the model, cluster and bound" \
  "no plan fits model llama3.1-405b (" plan --model llama3.1-405b --cluster dgx-h100 --nodes 1 --seq 8192 --global-batch 8
grep -qF "on cluster dgx-h100 (1 nodes x 8 GPUs" "$tmp/err" && grep -qF "memory per GPU" "$tmp/err"
check "no plan fits: cluster and memory bound named" $?
python3 - "$CONFIGS/models/llama-tiny.json" "$tmp/short.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["max_seq"] = 32
json.dump(d, open(sys.argv[2], "w"))
PY
expect2 "a model file's max_seq below --seq names the model file" "$tmp/short.json: max_seq:" \
  plan --model "$tmp/short.json" --cluster cpu --world-size 4 --seq 64 --global-batch 8

# Start-up temporaries of a killed run are removed by the next run in that directory.
host=$(hostname | tr '-' '_')
sh -c 'exit 0' &
dead=$!
wait $dead
mkdir -p "$tmp/plans" "$tmp/ckpt"
touch "$tmp/plans/.plan.json.tmp-$host-$dead-AbC123" "$tmp/plans/.plan.json.tmp-$host-$$-AbC123"
mkdir -p "$tmp/ckpt/.fsdpx-probe-$host-$dead"
"$FSDPX" plan --model llama-tiny --cluster cpu --world-size 4 --seq 64 --global-batch 8 -o "$tmp/plans/plan.json" >/dev/null
[[ ! -e $tmp/plans/.plan.json.tmp-$host-$dead-AbC123 && -e $tmp/plans/.plan.json.tmp-$host-$$-AbC123 ]]
check "plan -o removed a dead run's temporary and kept a live one's" $?
"$FSDPX" run --plan "$plan" --steps 1 --checkpoint-dir "$tmp/ckpt" >/dev/null 2>&1
[[ ! -e $tmp/ckpt/.fsdpx-probe-$host-$dead && -d $tmp/ckpt/step-000001 ]]
check "run --checkpoint-dir removed a dead run's probe directory" $?

# A stopped rank is named within --comm-timeout.
"$FSDPX" run --plan "$plan" --steps 100000 --processes --comm-timeout 5 >"$tmp/stop.out" 2>"$tmp/stop.err" &
launcher=$!
( sleep 120; kill -KILL $launcher 2>/dev/null ) &  # a bound on the whole check
guard=$!
rank2=""
for _ in $(seq 1 300); do
  for p in $(pgrep -P $launcher 2>/dev/null); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx RANK=2 && rank2=$p
  done
  [[ -n $rank2 && -s $tmp/stop.out ]] && break  # rank 2 exists and rank 0 printed a step
  sleep 0.1
done
if [[ -n $rank2 ]]; then
  sleep 1
  kill -STOP "$rank2"
  stopped=$(date +%s.%N)
  named=""
  for _ in $(seq 1 200); do
    if grep -q "rank 2 sent nothing" "$tmp/stop.err"; then named=$(date +%s.%N); break; fi
    sleep 0.05
  done
  wait $launcher
  rc=$?
  kill -KILL "$rank2" 2>/dev/null
  kill $guard 2>/dev/null
  took=$(python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 2) if sys.argv[2] else 'never')" "$stopped" "$named")
  echo "  SIGSTOP of rank 2: named after $took s, launcher exit $rc: $(grep -m1 'rank 2 sent nothing' "$tmp/stop.err")"
  [[ -n $named && $rc -ne 0 ]] && python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) <= 5.0 else 1)" "$took"
  check "a SIGSTOPped rank is named within --comm-timeout 5" $?
else
  kill $launcher $guard 2>/dev/null
  wait $launcher
  check "the 4-process run started (rank 2 found)" 1
fi

finish
