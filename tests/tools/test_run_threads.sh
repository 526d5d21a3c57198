#!/usr/bin/env bash
# CLI test of the CPU kernels' thread budget: a 20-step run ends with the same parameter hash (FNV-1a 64
# of the fp32 parameters) with 1 and 2 kernel threads per rank, asked for by --threads or by
# OMP_NUM_THREADS, on one rank (1,024 tokens per micro-batch: GEMMs cut into two tiles, attention
# into two query tiles) and on two; the budget is reported on stderr; malformed requests exit 2.
set -u
FSDPX="$1"
source "$(dirname "$0")/cli_check.sh"
hash_of() { grep -o 'parameters hash (FNV-1a 64 of fp32): [0-9a-f]*' "$1" | awk '{print $NF}'; }

"$FSDPX" plan --model llama-tiny --cluster cpu --world-size 1 --seq 128 --global-batch 8 -o "$tmp/p1.json" >/dev/null
check "plan for 1 rank" $?
"$FSDPX" plan --model llama-tiny --cluster cpu --world-size 2 --seq 128 --global-batch 8 -o "$tmp/p2.json" >/dev/null
check "plan for 2 ranks" $?

for w in 1 2; do
  "$FSDPX" run --plan "$tmp/p$w.json" --steps 20 --threads 1 >"$tmp/t1.out" 2>"$tmp/t1.err"
  check "$w rank(s), --threads 1" $?
  grep -q "fsdpx: cpu: 1 kernel thread per rank (--threads: $w rank" "$tmp/t1.err"
  check "$w rank(s): the budget is reported" $?
  "$FSDPX" run --plan "$tmp/p$w.json" --steps 20 --threads 2 >"$tmp/t2.out" 2>"$tmp/t2.err"
  check "$w rank(s), --threads 2" $?
  OMP_NUM_THREADS=2 "$FSDPX" run --plan "$tmp/p$w.json" --steps 20 >"$tmp/e2.out" 2>"$tmp/e2.err"
  check "$w rank(s), OMP_NUM_THREADS=2" $?
  grep -q "2 kernel threads per rank (OMP_NUM_THREADS" "$tmp/e2.err"
  check "$w rank(s): OMP_NUM_THREADS is the budget's source" $?
  h1=$(hash_of "$tmp/t1.out") h2=$(hash_of "$tmp/t2.out") e2=$(hash_of "$tmp/e2.out")
  [ -n "$h1" ] && [ "$h1" = "$h2" ] && [ "$h1" = "$e2" ]
  check "$w rank(s): final parameters identical with 1 and 2 threads ($h1 $h2 $e2)" $?
done

"$FSDPX" run --plan "$tmp/p1.json" --steps 1 --threads 0 >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q -- "--threads" "$tmp/err"
check "--threads 0 exits 2" $?
OMP_NUM_THREADS=abc "$FSDPX" run --plan "$tmp/p1.json" --steps 1 >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "fsdpx: error: OMP_NUM_THREADS=abc: expected a thread count" "$tmp/err"
check "a malformed OMP_NUM_THREADS exits 2 naming it" $?

finish
