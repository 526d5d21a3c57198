#!/usr/bin/env bash
# CLI test of `fsdpx report`: the HTML page renders in headless Chromium, the rendered DOM holds the
# four chart figures each with an <svg>, a screenshot is non-empty; the page loads nothing from outside;
# the CSV has one row per point with as many fields as its header. Also `fsdpx export` writes TOML
# that Python's tomllib reads. Exits 77 (skipped) when chromium is not installed.
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

"$FSDPX" report --plan llama3.1-8b-dgx-h100-fsdp8 --vary nodes=1,2,4 --vary seq=4096,8192 \
  --html "$work/report.html" --csv "$work/report.csv" >"$work/stdout.txt"
check "report exits 0" $?
grep -q "nodes=4 seq=8192" "$work/stdout.txt" ; check "stdout lists the grid points" $?

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
for fig in fig-memory-step fig-stream-timeline fig-sweep fig-memory-breakdown; do
  # The figure element, followed by an <svg> before the figure closes.
  python3 - "$work/dom.html" "$fig" <<'EOF'
import re, sys
dom = open(sys.argv[1]).read()
m = re.search(r'<figure id="%s">(.*?)</figure>' % sys.argv[2], dom, re.S)
sys.exit(0 if m and "<svg" in m.group(1) and "<figcaption>" in m.group(1) else 1)
EOF
  check "rendered DOM has $fig with an svg and a caption" $?
done
for svg in svg-memory-step svg-stream-timeline svg-sweep-throughput svg-sweep-memory svg-memory-breakdown; do
  grep -q "<svg id=\"$svg\"" "$work/dom.html" ; check "rendered DOM has $svg" $?
done
[ "$(grep -c '<polygon class="mem-' "$work/dom.html")" -eq 6 ] ; check "memory chart has 6 category areas" $?
[ "$(grep -o '<rect x=[^>]*><title>' "$work/dom.html" | wc -l)" -gt 20 ] ; check "timeline has op rects" $?

chrome --window-size=1050,2600 --screenshot="$work/report.png" "file://$work/report.html" >/dev/null
[ -s "$work/report.png" ] && [ "$(stat -c %s "$work/report.png")" -gt 20000 ] ; check "screenshot is non-empty" $?
[ "$(head -c 8 "$work/report.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] ; check "screenshot is a PNG" $?

# CSV: header + 6 points, every line with the header's field count (quoted commas are one field).
python3 - "$work/report.csv" <<'EOF'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
assert rows[0][:3] == ["nodes", "seq", "label"], rows[0]
assert len(rows) == 7, len(rows)
assert all(len(r) == len(rows[0]) for r in rows), [len(r) for r in rows]
assert [r[0] for r in rows[1:]] == ["1", "1", "2", "2", "4", "4"]
ok = [r for r in rows[1:] if r[3] == "ok"]
assert ok and all(float(r[rows[0].index("tokens_per_s_per_gpu")]) > 0 for r in ok)
EOF
check "CSV has one row per point and consistent fields" $?

"$FSDPX" report --plan llama3.1-8b-dgx-h100-fsdp8 --vary gpus=1 >/dev/null 2>"$work/err.txt"
[ $? -eq 2 ] && grep -q "unknown parameter 'gpus'" "$work/err.txt" ; check "bad --vary exits 2 naming it" $?

"$FSDPX" export --plan llama3.1-8b-dgx-h100-fsdp8 --format torchtitan >"$work/job.toml" 2>/dev/null
check "export exits 0" $?
python3 -c "import sys, tomllib; d = tomllib.load(open(sys.argv[1], 'rb')); assert d['parallelism']['data_parallel_shard_degree'] == 8" \
  "$work/job.toml"
check "export is TOML with the plan's dp_shard" $?

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
