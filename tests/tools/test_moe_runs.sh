#!/usr/bin/env bash
# The published mixture-of-experts runs (tests/data/validation/moe_runs.json, issue 30) read whole: at least 30
# cases from at least 2 source repositories, each with a [moe:...] source id, its assumptions, the model's "moe"
# block (and "mla" for every DeepSeek-V3 case), "ep" and "etp" in its parallelism; every case is on `fsdpx
# validate`'s report, scored or skipped with a reason; the generator reproduces the file when python3 is present.
# Leaves out the errors themselves (tests/simulator/test_validation_moe.cpp checks the scored median).
# Arguments: fsdpx, the folder with moe_runs.json and make_moe_runs.py.
set -u
FSDPX="$1"
DIR="$2"
FILE="$DIR/moe_runs.json"
source "$(dirname "$0")/cli_check.sh"

cases=$(grep -c '^  {$' "$FILE")
ids=$(grep -c '^   "id": ' "$FILE")
[ "$cases" -ge 30 ] && [ "$cases" -eq "$ids" ]; check "at least 30 cases, each with an id ($cases, $ids)" $?
sources=$(grep -c '^   "source": ".*\[moe:[a-z0-9.-]*\]",$' "$FILE")
[ "$sources" -eq "$cases" ]; check "every source ends with a [moe:...] id ($sources of $cases)" $?
uncertain=$(grep -c '^   "uncertain": \[$' "$FILE")
[ "$uncertain" -eq "$cases" ]; check "every case lists its assumptions ($uncertain of $cases)" $?
nfam=$(grep -o '^   "source": "[^ ]*' "$FILE" | sort -u | wc -l)
[ "$nfam" -ge 2 ]; check "at least 2 source repositories ($nfam)" $?
for key in moe ep etp; do
  n=$(grep -c "^    \"$key\": " "$FILE")
  [ "$n" -eq "$cases" ]; check "every case has \"$key\" ($n of $cases)" $?
done
for key in experts top_k expert_ffn_hidden scoring norm_topk_prob; do
  n=$(grep -c "^     \"$key\": " "$FILE")
  [ "$n" -eq "$cases" ]; check "every moe block names $key ($n of $cases)" $?
done
ds=$(grep -c '^    "name": "DeepSeek-V3",$' "$FILE")
mla=$(grep -c '^    "mla": {$' "$FILE")
[ "$ds" -gt 0 ] && [ "$mla" -eq "$ds" ]; check "every DeepSeek-V3 case has mla ($mla of $ds)" $?

"$FSDPX" validate --format json "$FILE" -o "$tmp/v.json"; check "validate reads the file (exit 0)" $?
listed=$(grep -o '"id": "[^"]*"' "$tmp/v.json" | sort -u | wc -l)
[ "$listed" -eq "$cases" ]; check "every case is on the report ($listed of $cases)" $?
skipped=$(grep -c '"skipped": "..*"' "$tmp/v.json")
unscored=$(grep -c '"skipped": null' "$tmp/v.json")
[ $((skipped + unscored)) -eq "$cases" ]; check "each case scored or skipped with a reason ($skipped skipped)" $?
if command -v python3 >/dev/null; then
  python3 "$DIR/make_moe_runs.py" >"$tmp/g.json" && cmp -s "$tmp/g.json" "$FILE"
  check "make_moe_runs.py reproduces moe_runs.json" $?
fi
finish
