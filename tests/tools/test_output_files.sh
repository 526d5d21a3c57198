#!/usr/bin/env bash
# tests/tools/test_output_files.sh FSDPX_BINARY DATA_DIR — issue 15 items 10 and 13: every file fsdpx
# writes (plan -o, simulate --trace, export -o, report --html/--csv, validate --write-plans, run
# --save-weights / --save-init-weights / --save-init-adapters / --dump-batches / --profile / --trace, compare -o, calibrate -o /
# --plan-out) is written
# whole or not at all. For each output: a write that fails part-way (the file-size limit, and a full
# tmpfs when this machine lets us mount one) exits non-zero with one line naming the file, leaves the
# previous good file byte for byte and no temporary behind; a device node (/dev/full) as the target is
# refused and stays a device; validate --write-plans never writes outside its folder. Leaves out
# checkpoints (test_run_cli.sh, test_checkpoint.cpp).
set -u

if [[ $# -ne 2 ]]; then
  echo "usage: $0 FSDPX_BINARY DATA_DIR" >&2
  exit 2
fi
FSDPX=$1
DATA=$2
passed=0
failed=0
tmp=$(mktemp -d)
mnt=""
cleanup() {
  [[ -n $mnt ]] && umount "$mnt" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() { failed=$((failed + 1)); echo "FAIL $1: $2"; }

# Inputs: a tiny CPU plan, a profile of 2 steps, a case file.
"$FSDPX" plan --model llama-tiny --cluster cpu --world-size 2 --seq 32 --global-batch 4 -o "$tmp/plan.json" >/dev/null ||
  { echo "cannot make the input plan"; exit 1; }
"$FSDPX" run --plan "$tmp/plan.json" --steps 2 --profile "$tmp/prof.json" --trace "$tmp/trace.json" >/dev/null ||
  { echo "cannot make the input profile"; exit 1; }
CASES=$DATA/validation/tiny_cases.json

# write_cmd OPTION TARGET: the command line that writes TARGET through OPTION.
write_cmd() {
  local option=$1 out=$2
  case $option in
    plan-o) echo plan --model llama-tiny --cluster cpu --world-size 2 --seq 32 --global-batch 4 -o "$out" ;;
    simulate-trace) echo simulate --plan "$tmp/plan.json" --trace "$out" ;;
    export-o) echo export --plan "$tmp/plan.json" --format torchtitan -o "$out" ;;
    report-html) echo report --plan "$tmp/plan.json" --vary nodes=1 --html "$out" ;;
    report-csv) echo report --plan "$tmp/plan.json" --vary nodes=1 --csv "$out" ;;
    run-save-weights) echo run --plan "$tmp/plan.json" --steps 1 --save-weights "$out" ;;
    run-save-init-weights) echo run --plan "$tmp/plan.json" --steps 1 --save-init-weights "$out" ;;
    run-save-init-adapters) echo run --plan llama-tiny-cpu-lora --steps 1 --save-init-adapters "$out" ;;
    run-dump-batches) echo run --plan "$tmp/plan.json" --steps 1 --dump-batches "$out" ;;
    run-profile) echo run --plan "$tmp/plan.json" --steps 1 --profile "$out" ;;
    run-trace) echo run --plan "$tmp/plan.json" --steps 1 --trace "$out" ;;
    compare-o) echo compare --plan "$tmp/plan.json" --profile "$tmp/trace.json" -o "$out" ;;
    calibrate-o) echo calibrate --profile "$tmp/prof.json" -o "$out" ;;
    calibrate-plan-out) echo calibrate --profile "$tmp/prof.json" -o "$tmp/cal-side.json" --plan-out "$out" ;;
  esac
}
OPTIONS="plan-o simulate-trace export-o report-html report-csv run-save-weights run-save-init-weights
run-save-init-adapters run-dump-batches run-profile run-trace compare-o calibrate-o calibrate-plan-out"

# expect_kept NAME DIR TARGET REASON CMD...: CMD must fail (non-zero, one stderr line naming TARGET and
# REASON, besides run's "fsdpx: cpu: ..." line about its threads), TARGET must still hold "previous good
# content" and DIR must hold no temporary file.
expect_kept() {
  local name=$1 dir=$2 target=$3 reason=$4
  shift 4
  # stderr through a pipe: the file-size limit applies to regular files only.
  "$@" 2>&1 >/dev/null | grep -v '^fsdpx: cpu: ' >"$tmp/err"
  local rc=${PIPESTATUS[0]} problems=""
  [[ $rc -ne 0 ]] || problems+=" exit status 0;"
  [[ $(wc -l <"$tmp/err") -eq 1 ]] || problems+=" $(wc -l <"$tmp/err") stderr lines;"
  grep -qF -- "$target" "$tmp/err" || problems+=" stderr does not name $target;"
  grep -qF -- "$reason" "$tmp/err" || problems+=" stderr does not say '$reason';"
  [[ $(head -c 100 "$target" | tr -d '\0') == "previous good content" ]] || problems+=" the previous file was changed;"
  [[ -z $(find "$dir" -name '.*.tmp-*') ]] || problems+=" a temporary file was left behind;"
  if [[ -z $problems ]]; then ok "$name"; else bad "$name" "$problems"; sed 's/^/     stderr: /' "$tmp/err"; fi
}

# 1. The file-size limit 0: every write to a regular file fails with EFBIG (fsdpx ignores SIGXFSZ).
for option in $OPTIONS; do
  [[ $option == calibrate-plan-out ]] && continue  # its -o file, written first, fails first
  mkdir -p "$tmp/fsize"
  target=$tmp/fsize/$option.out
  echo "previous good content" >"$target"
  # shellcheck disable=SC2046
  expect_kept "$option: write fails past the file-size limit" "$tmp/fsize" "$target" "File too large" \
    bash -c 'ulimit -f 0; exec "$@"' _ "$FSDPX" $(write_cmd "$option" "$target")
done

# validate --write-plans DIR: one plan per case.
mkdir -p "$tmp/plans"
echo "previous good content" >"$tmp/plans/tiny-mosaic-1b-16gpu.json"
expect_kept "validate --write-plans: write fails past the file-size limit" "$tmp/plans" \
  "$tmp/plans/tiny-mosaic-1b-16gpu.json" "File too large" \
  bash -c 'ulimit -f 0; exec "$@"' _ "$FSDPX" validate "$CASES" --write-plans "$tmp/plans"

# 2. A full disk: a 64 KiB tmpfs holding the previous file (root with mount permission only).
mkdir -p "$tmp/full"
if mount -t tmpfs -o size=64k tmpfs "$tmp/full" 2>/dev/null; then
  mnt=$tmp/full
  for option in $OPTIONS; do
    target=$mnt/$option.out
    echo "previous good content" >"$target"
    head -c 60000 /dev/zero >"$mnt/filler" 2>/dev/null  # leaves less than the smallest output
    # shellcheck disable=SC2046
    expect_kept "$option: write fails on a full disk" "$mnt" "$target" "No space left on device" \
      "$FSDPX" $(write_cmd "$option" "$target")
    rm -f "$mnt/filler" "$target"
  done
else
  echo "skip full-disk cases: cannot mount a tmpfs here"
fi

# 3. A device node as the target is refused and stays a device.
for option in $OPTIONS; do
  # shellcheck disable=SC2046
  "$FSDPX" $(write_cmd "$option" /dev/full) >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [[ $rc -ne 0 && -c /dev/full ]] && grep -qF "/dev/full: not a regular file" "$tmp/err" &&
    [[ $(wc -l <"$tmp/err") -eq 1 ]]; then
    ok "$option: /dev/full refused"
  else
    bad "$option: /dev/full" "exit $rc"
    sed 's/^/     stderr: /' "$tmp/err"
  fi
done

# 4. Issue 15 item 13: validate --write-plans DIR writes only inside DIR, whatever the case ids hold.
# (The pipeline-parallel case of the file is simulated too and is written under its own name.)
mkdir -p "$tmp/inside/plans"
sed -e 's#"tiny-mosaic-1b-16gpu"#"../../escaped"#' -e 's#"tiny-torchtitan-8b"#"/tmp/absolute"#' "$CASES" >"$tmp/ids.json"
"$FSDPX" validate "$tmp/ids.json" --write-plans "$tmp/inside/plans" >/dev/null 2>&1
outside=$(find "$tmp" -name '*escaped*' -not -path "$tmp/inside/plans/*"; ls /tmp/absolute* 2>/dev/null)
inside=$(ls "$tmp/inside/plans" | tr '\n' ' ')
if [[ -z $outside && $inside == "_.._.._escaped.json _tmp_absolute.json tiny-megatron-pp.json " ]]; then ok "validate --write-plans stays inside DIR"
else bad "validate --write-plans stays inside DIR" "outside: '$outside', inside: '$inside'"; fi
sed -e 's#"tiny-mosaic-1b-16gpu"#"a/b"#' -e 's#"tiny-torchtitan-8b"#"a_b"#' "$CASES" >"$tmp/clash.json"
"$FSDPX" validate "$tmp/clash.json" --write-plans "$tmp/inside" >/dev/null 2>"$tmp/err"
if [[ $? -eq 2 ]] && grep -qF "clash.json: /cases: cases \"a/b\" and \"a_b\" would both be written as a_b.json" "$tmp/err"; then
  ok "case ids that map to one file name are an error"
else bad "case ids that map to one file name" "$(cat "$tmp/err")"; fi

# 5. A good write replaces the previous file whole and keeps its permissions.
echo "previous good content" >"$tmp/keep.json"
chmod 600 "$tmp/keep.json"
"$FSDPX" export --plan "$tmp/plan.json" --format torchtitan -o "$tmp/keep.json" >/dev/null 2>&1
if grep -q "^\[job\]" "$tmp/keep.json" && [[ $(stat -c %a "$tmp/keep.json") == 600 ]]; then ok "export replaces the file, mode kept"
else bad "export replaces the file" "content or mode"; fi

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
