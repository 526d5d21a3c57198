#!/usr/bin/env bash
# CLI test of `fsdpx run --backend cpu` across processes: --processes (fsdpx launches one process per
# rank, TCP communicator) prints the same per-step losses, bit for bit, as the threads run of a 4-rank
# plan; two ranks started by hand with torchrun's variables match the 2-rank threads run; --processes
# refuses full-weight files (exit 2) before starting any rank and writes checkpoints like the threads run.
set -u
FSDPX="$1"
source "$(dirname "$0")/cli_check.sh"
losses() { python3 -c "import json,sys; print([s['loss'] for s in json.load(open(sys.argv[1]))['steps']])" "$1"; }

for w in 4 2; do
  "$FSDPX" plan --model llama-tiny --cluster cpu --world-size $w --seq 64 --global-batch 8 -o "$tmp/p$w.json" >/dev/null
  check "plan for $w ranks" $?
done

"$FSDPX" run --plan "$tmp/p4.json" --steps 4 --format json >"$tmp/threads4.json"
check "4 ranks as threads" $?
timeout 120 "$FSDPX" run --plan "$tmp/p4.json" --steps 4 --format json --processes >"$tmp/procs4.json"
check "4 ranks as processes (--processes)" $?
[ "$(losses "$tmp/threads4.json")" = "$(losses "$tmp/procs4.json")" ]
status=$?  # before the message's command substitution sets $?
check "--processes losses are bit-identical to the threads run: $(losses "$tmp/procs4.json")" $status

"$FSDPX" run --plan "$tmp/p2.json" --steps 4 --format json >"$tmp/threads2.json"
check "2 ranks as threads" $?
port=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
for r in 1 0; do
  RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    timeout 120 "$FSDPX" run --plan "$tmp/p2.json" --steps 4 --format json >"$tmp/tr$r.json" &
  eval "pid$r=$!"
done
wait "$pid0"; check "torchrun-style rank 0" $?
wait "$pid1"; check "torchrun-style rank 1" $?
[ ! -s "$tmp/tr1.json" ]; check "rank 1 prints nothing" $?
[ "$(losses "$tmp/threads2.json")" = "$(losses "$tmp/tr0.json")" ]
check "torchrun-style ranks give the threads run's losses" $?

# --save-weights and the parameter hash: the shards gathered from the processes (issue 34) give the threads
# run's file byte for byte and its hash.
"$FSDPX" run --plan "$tmp/p4.json" --steps 3 --format json --save-weights "$tmp/wt.safetensors" >"$tmp/wt.json"
check "threads run with --save-weights" $?
timeout 120 "$FSDPX" run --plan "$tmp/p4.json" --steps 3 --format json --processes \
  --save-weights "$tmp/wp.safetensors" >"$tmp/wp.json"
check "--processes run with --save-weights" $?
cmp -s "$tmp/wt.safetensors" "$tmp/wp.safetensors"
check "--processes --save-weights writes the threads run's file, byte for byte" $?
hash_of() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['final_params_hash'])" "$1"; }
[ -n "$(hash_of "$tmp/wp.json")" ] && [ "$(hash_of "$tmp/wt.json")" = "$(hash_of "$tmp/wp.json")" ]
check "--processes reports the threads run's parameter hash ($(hash_of "$tmp/wp.json"))" $?
"$FSDPX" run --plan "$tmp/p4.json" --steps 1 --processes --save-init-weights "$tmp/w0.safetensors" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "needs every shard in one process" "$tmp/err" && [ ! -e "$tmp/w0.safetensors" ]
check "--processes --save-init-weights exits 2 with the refusal" $?
# Checkpoints of a multi-process run are written by every process (tests/tools/test_checkpoint_kill.sh
# kills and resumes them): the same files as the threads run's.
timeout 120 "$FSDPX" run --plan "$tmp/p4.json" --steps 2 --processes --checkpoint-dir "$tmp/ckp" >/dev/null 2>&1
check "--processes --checkpoint-dir" $?
"$FSDPX" run --plan "$tmp/p4.json" --steps 2 --checkpoint-dir "$tmp/ckt" >/dev/null 2>&1
cmp -s "$tmp/ckp/step-000002/manifest.json" "$tmp/ckt/step-000002/manifest.json" &&
  cmp -s "$tmp/ckp/step-000002/rank-00003.bin" "$tmp/ckt/step-000002/rank-00003.bin"
check "the processes' checkpoint is byte-identical to the threads run's" $?

finish
