#!/usr/bin/env bash
# tests/tools/test_checkpoint_kill.sh FSDPX_BINARY [SEED] — issue 15 item 14: checkpoints of a run with one
# process per rank survive kill -9. A 4-process CPU run saving every 2 steps is killed (SIGKILL) at
# seeded random points (after a chosen checkpoint, or while a save is staging) and in seeded random ways
# (the launcher, one rank, or every process), then resumed: on 4 processes the resumed run starts at the
# newest committed checkpoint, which is at least the one seen before the kill (no step lost beyond it),
# reports no damaged checkpoint, and its losses are bit-identical to an uninterrupted run's; on 2
# processes (another world size) it starts there too and its losses match to 1e-5. Afterwards no staging
# directory is left. The first two rounds kill one rank as soon as a save is staging; in at least one the
# kill must land before that save's commit (a rank dead mid-checkpoint), else up to 4 more rounds try.
# Leaves out CUDA (the same code path, test_cuda on a GPU machine).
set -u
FSDPX="$1"
RANDOM=${2:-15}
source "$(dirname "$0")/cli_check.sh"
# One BLAS/OpenMP thread per rank process: several processes on a busy machine otherwise spin for seconds.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
STEPS=30
ROUNDS=6

for w in 4 2; do
  "$FSDPX" plan --model llama-tiny --cluster cpu --world-size $w --seq 64 --global-batch 8 -o "$tmp/p$w.json" >/dev/null
  check "plan for $w ranks" $?
done
timeout 300 "$FSDPX" run --plan "$tmp/p4.json" --steps $STEPS --format json >"$tmp/ref.json"
check "uninterrupted run of $STEPS steps" $?

newest_step() {  # the newest committed step-N under $1 (0: none)
  local d best=0 n
  for d in "$1"/step-*; do
    [[ -d $d && $d != *.tmp-* ]] || continue
    n=$((10#${d##*/step-}))
    ((n > best)) && best=$n
  done
  echo $best
}

# wait_for PID GLOB...: polls until a path matches one of the GLOBs or PID is gone; true when one matched.
wait_for() {
  local pid=$1 g
  shift
  while kill -0 "$pid" 2>/dev/null; do
    for g in "$@"; do compgen -G "$g" >/dev/null && return 0; done
    sleep 0.001
  done
  return 1
}

# kill_run ROUND DIR TARGET HOW WHEN PICK PAUSE_MS: starts the 4-process run and kills it (HOW: 0 the
# launcher, 1 the PICK-th rank, 2 every process; WHEN: 0 PAUSE_MS after step TARGET's checkpoint is
# committed, 1 as soon as its save is staging), waits until every process is gone; prints the step whose
# checkpoint was committed before the kill (0: the kill came first). The caller draws the random choices:
# this runs in a subshell, whose RANDOM would not follow the seed.
kill_run() {
  local round=$1 dir=$2 target=$3 how=$4 when=$5 pick=$6 pause_ms=$7
  setsid "$FSDPX" run --plan "$tmp/p4.json" --steps $STEPS --processes --checkpoint-dir "$dir" --checkpoint-every 2 \
    --format json >/dev/null 2>"$tmp/killed$round.err" &
  local pid=$! seen=0
  local step_dir victim=$pid
  step_dir=$(printf '%s/step-%06d' "$dir" $target)
  if ((how == 1)); then  # pick the rank before waiting, so that the kill follows the sighting at once
    while kill -0 $pid 2>/dev/null && (($(pgrep -P $pid | wc -l) < 4)); do sleep 0.001; done
    victim=$(pgrep -P $pid | head -n $pick | tail -n 1)
  fi
  if ((when == 0)); then  # after step `target`'s checkpoint is committed, plus up to 0.1 s
    wait_for $pid "$step_dir" && seen=$target
    sleep "0.$(printf '%03d' $pause_ms)"
  else  # as soon as step `target`'s save is staging (or committed, if the staging was too quick to see):
    # the previous checkpoint was committed before this save began
    wait_for $pid "$step_dir.tmp-job-*" "$step_dir" && seen=$((target - 2))
  fi
  if ((how == 2)); then kill -9 -- -$pid 2>/dev/null; else kill -9 "${victim:-$pid}" 2>/dev/null; fi
  wait $pid 2>/dev/null
  for _ in $(seq 600); do pgrep -g $pid >/dev/null || break; sleep 0.05; done
  kill -9 -- -$pid 2>/dev/null
  local whom=(launcher "one rank" "every process")
  echo "$seen ${whom[$how]} $([[ $when == 0 ]] && echo "after step $target's checkpoint" || echo "while step $target's save was staging")"
}

rank_killed_mid_save=0  # rounds where one rank died while a save was staging, before its commit
# A kill sent on sighting the staging directory can land after a tiny model's quick save commits (a loaded
# machine polls late): while no kill has landed mid-save, up to EXTRA_ROUNDS more rounds try again.
EXTRA_ROUNDS=4
round=0
while ((round < ROUNDS || (rank_killed_mid_save == 0 && round < ROUNDS + EXTRA_ROUNDS))); do
  round=$((round + 1))
  dir=$tmp/ck$round
  target=$((2 * (1 + RANDOM % (STEPS / 3)))) how=$((RANDOM % 3)) when=$((RANDOM % 2))
  # the first two rounds and the extra ones kill one rank while a save is staging
  ((round <= 2 || round > ROUNDS)) && how=1 when=1
  read -r seen how < <(kill_run $round "$dir" $target $how $when $((1 + RANDOM % 4)) $((RANDOM % 100)))
  committed=$(newest_step "$dir")
  if [[ $how =~ ^one\ rank\ while\ step\ ([0-9]+) ]] && ((committed < BASH_REMATCH[1])); then
    rank_killed_mid_save=$((rank_killed_mid_save + 1))
  fi
  echo "round $round: kill -9 of the $how; newest committed step $committed (at least $seen)"
  ((committed >= seen)); check "round $round: the committed checkpoint survives the kill" $?
  if ((committed == 0)); then
    continue
  fi
  world=$((round % 2 == 1 ? 4 : 2))
  timeout 300 "$FSDPX" run --plan "$tmp/p$world.json" --steps $STEPS --processes --checkpoint-dir "$dir" --resume \
    --format json >"$tmp/r$round.json" 2>"$tmp/r$round.err"
  check "round $round: resume on $world processes" $?
  ! grep -q warning "$tmp/r$round.err"; check "round $round: no committed checkpoint is damaged" $?
  verdict=$(python3 - "$tmp/ref.json" "$tmp/r$round.json" "$committed" "$world" <<'PY'
import json, sys
ref, res = (json.load(open(p)) for p in sys.argv[1:3])
start, world = int(sys.argv[3]), int(sys.argv[4])
want = [s["loss"] for s in ref["steps"]][start:]
got = [s["loss"] for s in res["steps"]]
if res["start_step"] != start:
    print(f"resumed at step {res['start_step']}, not the newest checkpoint {start}")
elif len(got) != len(want):
    print(f"{len(got)} steps run, {len(want)} expected")
elif world == 4 and got != want:
    print(f"losses differ: {got} vs {want}")
elif world != 4 and any(abs(a - b) > 1e-5 * abs(b) for a, b in zip(got, want)):
    print(f"losses differ beyond 1e-5: {got} vs {want}")
else:
    print("ok")
PY
)
  [[ $verdict == ok ]]; check "round $round: resumed from step $committed on $world processes: $verdict" $?
  [[ -z $(compgen -G "$dir/*.tmp-*") ]]; check "round $round: no staging directory is left" $?
done
((rank_killed_mid_save > 0)); check "a rank was killed mid-save in $rank_killed_mid_save round(s) (seed ${2:-15})" $?

finish
