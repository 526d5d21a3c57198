#!/usr/bin/env bash
# One command-line vocabulary: `fsdpx --version` names the git revision and whether the CUDA backend is
# built in (as the build configured it; "unknown" for a source tree without .git), -o writes each
# command's main output (the same bytes as stdout), estimate takes the sharding and recompute names of
# plan files (the old ZeRO names as aliases), and plan takes --sharding and --recompute as search
# constraints; bad values exit 2 with one line. Arguments: fsdpx, the source tree, ON/OFF for CUDA.
set -u
FSDPX="$1"
SRC="$2"
CUDA="$3"
source "$(dirname "$0")/cli_check.sh"

version=$("$FSDPX" --version)
grep -Eqx 'fsdpx [0-9]+\.[0-9]+\.[0-9]+ \(git ([0-9a-f]{7,}(-dirty)?|unknown); CUDA backend (built in|not built)\)' <<<"$version"
check "--version has the version, revision and CUDA ($version)" $?
case "$CUDA" in ON|TRUE|1) want="built in" ;; *) want="not built" ;; esac
grep -q "CUDA backend $want)" <<<"$version"; check "--version says the CUDA backend is $want, as configured" $?
if [ -e "$SRC/.git" ] && command -v git >/dev/null; then
  rev=$(sed -E 's/.*\(git ([0-9a-f]+).*/\1/' <<<"$version")
  git -C "$SRC" cat-file -e "$rev^{commit}" 2>/dev/null; check "--version's revision $rev is a commit of the tree" $?
fi
# A tree without .git (an unpacked tarball): the revision is "unknown".
mkdir -p "$tmp/tarball"
cmake -DSOURCE_DIR="$tmp/tarball" -DOUTPUT="$tmp/v.h" -DVERSION=9.9.9 -DCUDA=ON -P "$SRC/cmake/version.cmake"
grep -q 'FSDPX_GIT_REVISION "unknown"' "$tmp/v.h" && grep -q 'FSDPX_BUILT_WITH_CUDA true' "$tmp/v.h"
check "version.cmake without .git writes revision unknown" $?

# -o: the file holds exactly what stdout would.
same_as_stdout() {  # name, args... (the command is run twice: once to stdout, once with -o)
  local name="$1"
  shift
  "$FSDPX" "$@" >"$tmp/stdout.txt" && "$FSDPX" "$@" -o "$tmp/out.txt" >"$tmp/rest.txt" && cmp -s "$tmp/stdout.txt" "$tmp/out.txt"
  check "$name -o writes what stdout shows" $?
}
same_as_stdout estimate estimate --model llama3.1-8b --cluster dgx-h100 --nodes 1
same_as_stdout "estimate json" estimate --model llama3.1-8b --cluster dgx-h100 --nodes 1 --format json
same_as_stdout simulate simulate --plan llama3.1-8b-dgx-h100-fsdp8 --format json
same_as_stdout demo demo
same_as_stdout validate validate "$SRC/tests/data/validation/tiny_cases.json"
"$FSDPX" report --plan llama-tiny-cpu-fsdp4 -o "$tmp/r.html" >/dev/null && grep -q "<svg" "$tmp/r.html"
check "report -o writes the HTML" $?
"$FSDPX" report --plan llama-tiny-cpu-fsdp4 --html "$tmp/r2.html" >/dev/null && cmp -s "$tmp/r.html" "$tmp/r2.html"
check "report --html still works (alias of -o)" $?

# estimate: the plan files' names; the ZeRO names give the same numbers.
est() { "$FSDPX" estimate --model llama3.1-8b --cluster dgx-h100 --nodes 2 --format json "$@"; }
[ "$(est --sharding fsdp_full_shard)" = "$(est --sharding zero3)" ]; check "fsdp_full_shard = zero3" $?
[ "$(est --sharding fsdp_shard_grad_op)" = "$(est --sharding zero2)" ]; check "fsdp_shard_grad_op = zero2" $?
est --sharding fsdp_shard_grad_op | python3 -c "import json, sys; assert json.load(sys.stdin)['parallelism']['sharding'] == 'fsdp_shard_grad_op'"
check "estimate reports the plan file's sharding name" $?
[ "$(est --recompute selective_op)" != "$(est --recompute none)" ]; check "estimate takes --recompute selective_op" $?

# plan: --sharding and --recompute narrow the search.
PLAN="plan --model llama3.1-8b --cluster dgx-h100 --seq 8192 --global-batch 32 --top 0"
"$FSDPX" $PLAN --nodes 2 --sharding hsdp --recompute full -o "$tmp/hsdp.json" >/dev/null
python3 - "$tmp/hsdp.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
assert p["parallelism"]["data_parallel"] == "hsdp" and p["parallelism"]["dp_replicate"] == 2, p["parallelism"]
assert p["recompute"] == "full" or set(p["recompute"]) == {"full"}, p["recompute"]
PY
check "plan --sharding hsdp --recompute full on 2 nodes" $?
"$FSDPX" $PLAN --nodes 2 --sharding fsdp_full_shard --recompute none -o "$tmp/full.json" >/dev/null
python3 - "$tmp/full.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
assert p["parallelism"]["data_parallel"] == "fsdp_full_shard" and p["parallelism"]["dp_replicate"] == 1
assert p["recompute"] == "none" or set(p["recompute"]) == {"none"}, p["recompute"]
PY
check "plan --sharding fsdp_full_shard --recompute none" $?

bad() {  # name, expected text, args...
  local name="$1" want="$2"
  shift 2
  "$FSDPX" "$@" >/dev/null 2>"$tmp/err.txt"
  [ $? -eq 2 ] && [ "$(wc -l <"$tmp/err.txt")" -eq 1 ] && grep -q -- "$want" "$tmp/err.txt"
  check "$name exits 2 with one line" $?
}
bad "plan --sharding hsdp on one node" "on one node give --dp-replicate" $PLAN --nodes 1 --sharding hsdp
bad "plan --sharding hsdp --dp-replicate 1" "more than one replica" $PLAN --nodes 2 --sharding hsdp --dp-replicate 1
bad "plan --sharding fsdp_full_shard --dp-replicate 2" "one replica" $PLAN --nodes 2 --sharding fsdp_full_shard --dp-replicate 2
bad "plan --sharding zero3" "--sharding" $PLAN --nodes 1 --sharding zero3
bad "plan --recompute sometimes" "--recompute" $PLAN --nodes 1 --recompute sometimes
bad "plan --recompute selective_op on the CPU" "does not run selective_op" plan --model llama-tiny --cluster cpu \
  --world-size 2 --seq 64 --global-batch 4 --recompute selective_op
bad "estimate --sharding zero4" "--sharding" estimate --model llama3.1-8b --cluster dgx-h100 --nodes 1 --sharding zero4
finish
