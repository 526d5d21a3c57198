# tests/tools/cli_check.sh — sourced by CLI test scripts: a temporary directory removed on exit ($tmp),
# `check NAME STATUS` counting passes and failures, and `finish`, which prints the "N passed, N failed"
# line ctest logs and exits non-zero on any failure. Leaves out running the commands themselves.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
check() {  # name, command status
  if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $1"; fi
}
finish() {
  echo "$pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}
