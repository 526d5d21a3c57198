#!/usr/bin/env bash
# tests/tools/ctest_progress.sh — runs every test of a build tree (ctest, as many at once as there are
# cores) and prints, every FSDPX_PROGRESS_S seconds (30), which tests are still running and for how long:
# ctest names a test only when it starts and when it ends, and the sanitizer jobs, the planner's
# exhaustive checks and the fuzzers run for minutes in between. Leaves out ctest's own options beyond
# those passed through. Usage: ctest_progress.sh <build dir> [ctest args...]; exit status: ctest's.
set -uo pipefail
dir=${1:?build dir}
shift
jobs=${FSDPX_TEST_JOBS:-$(nproc)}
interval_s=${FSDPX_PROGRESS_S:-30}

# One running test: its age and its command with every path shortened to its last component.
describe() {  # pid
  local age args
  age=$(ps -o etimes= -p "$1" 2>/dev/null | tr -d ' ') || return 0
  args=$(ps -o args= -p "$1" 2>/dev/null) || return 0
  [[ -n $age && -n $args ]] || return 0
  args=$(sed -E 's#[^ ]*/##g' <<<"$args")
  printf '%s (%dm%02ds)' "${args:0:60}" $((age / 60)) $((age % 60))
}

start_s=$SECONDS
ctest --test-dir "$dir" --output-on-failure -j "$jobs" "$@" &
ctest_pid=$!
next_s=$((SECONDS + interval_s))
while kill -0 "$ctest_pid" 2>/dev/null; do
  sleep 1
  ((SECONDS < next_s)) && continue
  next_s=$((SECONDS + interval_s))
  running=()
  for child in $(ps -o pid= --ppid "$ctest_pid" 2>/dev/null); do
    line=$(describe "$child")
    [[ -n $line ]] && running+=("$line")
  done
  ((${#running[@]} == 0)) && continue
  elapsed_s=$((SECONDS - start_s))
  printf -- '-- %dm%02ds: running %s\n' $((elapsed_s / 60)) $((elapsed_s % 60)) "$(IFS=';'; echo "${running[*]}" | sed 's/;/, /g')"
done
wait "$ctest_pid"
