#!/usr/bin/env bash
# CLI test of `fsdpx report`: the HTML page renders in headless Chromium, the rendered DOM holds the
# chart figures (weak and strong scaling sweeps included) each with an <svg>, a screenshot is non-empty;
# the page loads nothing from outside; the CSV has one row per point and scaling with as many fields as
# its header; rows over the memory capacity are marked out of memory in the text, CSV, JSON and HTML
# (and only those); the strong sweep keeps the global batch. Also `fsdpx export` writes TOML that
# Python's tomllib reads. Exits 77 (skipped) when chromium is not installed.
set -u
FSDPX="$1"
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
  echo "SKIP: chromium is not installed (apt-get install chromium chromium-driver; tools/install_deps.sh)"
  exit 77
fi
pass=0
fail=0
check() {  # name, command status
  if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $1"; fi
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# --memory-limit 60 GiB: the seq=8192 points of this 8B plan need more (the test checks each row against
# its own peak, so it holds whatever the memory model predicts, as long as both kinds of rows occur).
"$FSDPX" report --plan llama3.1-8b-dgx-h100-fsdp8 --vary nodes=1,2,4 --vary seq=4096,8192 --scaling both \
  --memory-limit 60 --train-tokens 2T -o "$work/report.html" --csv "$work/report.csv" >"$work/stdout.txt"
check "report exits 0" $?
grep -q "nodes=4 seq=8192" "$work/stdout.txt" ; check "stdout lists the grid points" $?
grep -q "OUT OF MEMORY" "$work/stdout.txt" ; check "stdout marks out-of-memory rows" $?
grep -q "strong scaling" "$work/stdout.txt" ; check "stdout has the strong-scaling sweep" $?
"$FSDPX" report --plan llama3.1-8b-dgx-h100-fsdp8 --vary nodes=1,2,4 --vary seq=4096,8192 --scaling both \
  --memory-limit 60 --train-tokens 2T --format json >"$work/report.json"
check "report --format json exits 0" $?

# Self-contained: no script, no external resource (the SVG namespace is the only URL).
! grep -q "<script" "$work/report.html" ; check "no script" $?
[ "$(grep -o 'https\?://[^" ]*' "$work/report.html" | grep -cv '^http://www.w3.org/2000/svg$')" -eq 0 ]
check "no external URL" $?

chrome() {
  "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --user-data-dir="$(mktemp -d -p "$work")" "$@" 2>/dev/null
}
chrome --dump-dom "file://$work/report.html" >"$work/dom.html"
check "chromium renders the page" $?
for fig in fig-memory-step fig-stream-timeline fig-sweep fig-sweep-strong fig-memory-breakdown; do
  # The figure element, followed by an <svg> before the figure closes.
  python3 - "$work/dom.html" "$fig" <<'EOF'
import re, sys
dom = open(sys.argv[1]).read()
m = re.search(r'<figure id="%s">(.*?)</figure>' % sys.argv[2], dom, re.S)
sys.exit(0 if m and "<svg" in m.group(1) and "<figcaption>" in m.group(1) else 1)
EOF
  check "rendered DOM has $fig with an svg and a caption" $?
done
for svg in svg-memory-step svg-stream-timeline svg-sweep-throughput svg-sweep-memory svg-strong-throughput \
  svg-strong-memory svg-memory-breakdown; do
  grep -q "<svg id=\"$svg\"" "$work/dom.html" ; check "rendered DOM has $svg" $?
done
[ "$(grep -c '<polygon class="mem-' "$work/dom.html")" -eq 6 ] ; check "memory chart has 6 category areas" $?
[ "$(grep -o '<rect x=[^>]*><title>' "$work/dom.html" | wc -l)" -gt 20 ] ; check "timeline has op rects" $?

chrome --window-size=1050,2600 --screenshot="$work/report.png" "file://$work/report.html" >/dev/null
[ -s "$work/report.png" ] && [ "$(stat -c %s "$work/report.png")" -gt 20000 ] ; check "screenshot is non-empty" $?
[ "$(head -c 8 "$work/report.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] ; check "screenshot is a PNG" $?

# CSV: header + 6 points per scaling, every line with the header's field count (quoted commas are one field);
# a row is out_of_memory exactly when its peak exceeds its capacity; JSON says the same of every row; the
# rendered HTML has one marked table row, two chart crosses and one breakdown mark per out-of-memory point.
python3 - "$work/report.csv" "$work/report.json" "$work/dom.html" <<'EOF'
import csv, json, re, sys
rows = list(csv.reader(open(sys.argv[1])))
h = rows[0]
assert h[:4] == ["nodes", "seq", "scaling", "label"], h
assert len(rows) == 13, len(rows)
assert all(len(r) == len(h) for r in rows), [len(r) for r in rows]
col = {name: i for i, name in enumerate(h)}
weak = [r for r in rows[1:] if r[col["scaling"]] == "weak"]
strong = [r for r in rows[1:] if r[col["scaling"]] == "strong"]
assert [r[0] for r in weak] == ["1", "1", "2", "2", "4", "4"]
simulated = [r for r in rows[1:] if r[col["status"]] != "error"]
for r in simulated:
    over = float(r[col["peak_memory_bytes"]]) > float(r[col["memory_capacity_bytes"]])
    assert (r[col["status"]] == "out_of_memory") == over, r
    assert float(r[col["memory_capacity_bytes"]]) == 60 * 2**30
    tokens = float(r[col["cluster_tokens_per_s"]])
    per_step = int(r[col["global_batch"]]) * int(r[col["tokens_per_sequence"]])
    assert abs(tokens * float(r[col["step_time_s"]]) - per_step) < 1e-6 * per_step
    assert abs(float(r[col["time_to_train_s"]]) * tokens - 2e12) < 1e-6 * 2e12
oom = [r for r in rows[1:] if r[col["status"]] == "out_of_memory"]
assert oom and any(r[col["status"]] == "ok" for r in rows[1:]), "need both ok and out-of-memory rows"
# Weak scaling grows the global batch with the GPUs; strong scaling keeps it.
assert [int(r[col["global_batch"]]) for r in weak[::2]] == [16, 32, 64]
assert {int(r[col["global_batch"]]) for r in strong if r[col["status"]] != "error"} == {16}
assert {int(r[col["world_size"]]) for r in strong if r[col["status"]] != "error"} == {8, 16}
j = json.load(open(sys.argv[2]))
assert j["schema"] == "fsdpx-report/1" and [s["scaling"] for s in j["sweeps"]] == ["weak", "strong"]
json_status = [row["status"] for s in j["sweeps"] for row in s["rows"]]
assert json_status == [r[col["status"]] for r in rows[1:]], json_status
assert j["sweeps"][0]["rows"][0]["step_time_s"] == float(weak[0][col["step_time_s"]])  # exact, not rounded
dom = open(sys.argv[3]).read()
wrap_oom = sum(1 for w in j["wrappings"] if w["status"] == "out_of_memory")
marked_rows = len(re.findall(r'<tr class="oom">', dom))
assert marked_rows == len(oom) + wrap_oom, (marked_rows, len(oom), wrap_oom)
crosses = len(re.findall(r'<path class="oom-mark"', dom))
assert crosses == 2 * len(oom), (crosses, len(oom))
assert len(re.findall(r'<text [^>]*class="oom-mark"', dom)) == len(oom) + wrap_oom
EOF
check "out-of-memory rows are marked (CSV, JSON, HTML) and the strong sweep keeps the global batch" $?

"$FSDPX" report --plan llama3.1-8b-dgx-h100-fsdp8 --vary gpus=1 >/dev/null 2>"$work/err.txt"
[ $? -eq 2 ] && grep -q "unknown parameter 'gpus'" "$work/err.txt" ; check "bad --vary exits 2 naming it" $?
bad_report() {  # name, expected text, args...
  local name="$1" want="$2"
  shift 2
  "$FSDPX" report --plan llama3.1-8b-dgx-h100-fsdp8 "$@" >/dev/null 2>"$work/err.txt"
  [ $? -eq 2 ] && [ "$(wc -l <"$work/err.txt")" -eq 1 ] && grep -q -- "$want" "$work/err.txt"
  check "$name exits 2 with one line" $?
}
bad_report "--scaling strong without nodes" "needs --vary nodes" --vary seq=4096 --scaling strong
bad_report "--scaling sideways" "--scaling" --vary nodes=1,2 --scaling sideways
bad_report "--train-tokens 0" "expected 1 to" --train-tokens 0
bad_report "--train-tokens 1e30" "expected 1 to" --train-tokens 1e30
bad_report "--train-tokens 12x" "token count" --train-tokens 12x

"$FSDPX" export --plan llama3.1-8b-dgx-h100-fsdp8 --format torchtitan >"$work/job.toml" 2>/dev/null
check "export exits 0" $?
python3 -c "import sys, tomllib; d = tomllib.load(open(sys.argv[1], 'rb')); assert d['parallelism']['data_parallel_shard_degree'] == 8" \
  "$work/job.toml"
check "export is TOML with the plan's dp_shard" $?

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
