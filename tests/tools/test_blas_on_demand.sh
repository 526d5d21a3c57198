#!/usr/bin/env bash
# tests/tools/test_blas_on_demand.sh FSDPX SONAME — issue 36: fsdpx links no BLAS (no OpenBLAS, gfortran or
# quadmath); `plan` and `simulate` never load OpenBLAS; `run` loads it (dlopen on the first GEMM,
# executor/cpu/blas_loader.h) when the build found one (SONAME, empty when not), and leaves
# OPENBLAS_NUM_THREADS unset for the thread budget. Leaves out the GEMM's results (test_blas_loader.cpp).
set -u
FSDPX=$1
SONAME=${2:-}
source "$(dirname "$0")/cli_check.sh"
unset OPENBLAS_NUM_THREADS OMP_NUM_THREADS GOTO_NUM_THREADS

! ldd "$FSDPX" | grep -qE 'openblas|gfortran|quadmath'; check "ldd fsdpx: no OpenBLAS, gfortran or quadmath" $?

"$FSDPX" plan --model llama-tiny --cluster cpu --world-size 1 --seq 64 --global-batch 4 -o "$tmp/p.json" >/dev/null
check "plan for 1 rank" $?
# loaded FILE LOG: the dynamic loader's LD_DEBUG=files log names a library matching FILE.
loaded() { grep -q "file=[^ ]*$1" "$2"; }
LD_DEBUG=files LD_DEBUG_OUTPUT="$tmp/plan.ld" "$FSDPX" plan --model llama-tiny --cluster cpu --world-size 1 \
  --seq 64 --global-batch 4 >/dev/null
! loaded libopenblas "$tmp/plan.ld".*; check "plan loads no OpenBLAS" $?
LD_DEBUG=files LD_DEBUG_OUTPUT="$tmp/sim.ld" "$FSDPX" simulate --plan "$tmp/p.json" >/dev/null
! loaded libopenblas "$tmp/sim.ld".*; check "simulate loads no OpenBLAS" $?

LD_DEBUG=files LD_DEBUG_OUTPUT="$tmp/run.ld" "$FSDPX" run --plan "$tmp/p.json" --steps 2 >/dev/null 2>"$tmp/run.err"
check "run 2 steps" $?
if [ -n "$SONAME" ]; then
  loaded "$SONAME" "$tmp/run.ld".*; check "run loads $SONAME" $?
else
  ! loaded libopenblas "$tmp/run.ld".*; check "run without a configured OpenBLAS loads none" $?
fi
grep -q "kernel threads\? per rank (cores:" "$tmp/run.err"
check "the thread budget still comes from the cores (OPENBLAS_NUM_THREADS left unset)" $?
finish
