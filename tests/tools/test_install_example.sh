#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, then examples/plan_search — a project outside the tree —
# configures with find_package(fsdpx), builds against the installed headers and libraries, and runs a
# plan search through the library on the installed configs. Also checks what the prefix holds (binary,
# configs, bash completion, license, package files). Exit 77 (skipped) when cmake is missing.
set -u
SRC="$1"
BUILD="$2"
source "$(dirname "$0")/cli_check.sh"
if ! command -v cmake >/dev/null; then echo "cmake not found: skipping the install test"; exit 77; fi

cmake --install "$BUILD" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1
rc=$?
check "cmake --install into a temporary prefix ($(tail -n 1 "$tmp/install.log"))" $rc
for f in bin/fsdpx lib/cmake/fsdpx/fsdpxConfig.cmake lib/cmake/fsdpx/fsdpxConfigVersion.cmake \
  lib/cmake/fsdpx/fsdpxTargets.cmake lib/libfsdp_planner.a include/fsdpx/planner/planner.h \
  include/fsdpx/core/model_spec.h share/fsdpx/configs/models/llama-tiny.json \
  share/bash-completion/completions/fsdpx share/zsh/vendor-completions/_fsdpx share/fish/vendor_completions.d/fsdpx.fish share/doc/fsdpx/LICENSE share/fsdpx/data/kjv-genesis.txt; do
  [ -f "$tmp/prefix/$f" ]; check "installed $f" $?
done
# A CUDA build installs its backend module where the installed binary looks for it (issue 36).
if [ -f "$BUILD/libfsdpx_cuda.so" ]; then
  [ -f "$tmp/prefix/lib/fsdpx/libfsdpx_cuda.so" ]; check "installed lib/fsdpx/libfsdpx_cuda.so" $?
  "$tmp/prefix/bin/fsdpx" plan --model llama-small --cluster dgx-h100 --world-size 1 --seq 64 --global-batch 8 \
    -o "$tmp/gpu.json" >/dev/null 2>&1
  "$tmp/prefix/bin/fsdpx" run --plan "$tmp/gpu.json" --steps 1 --backend cuda >/dev/null 2>"$tmp/cuda.err"
  ! grep -q "has no CUDA backend" "$tmp/cuda.err"; check "installed fsdpx finds its CUDA module" $?
fi
# The installed binary finds its configs beside it (<prefix>/share/fsdpx/configs), not in the tree.
(cd "$tmp" && env -u FSDPX_CONFIG_DIR "$tmp/prefix/bin/fsdpx" estimate --model llama-tiny --cluster cpu \
  --world-size 2 --seq 64 >/dev/null)
check "installed fsdpx runs with the installed configs" $?

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$SRC/examples/plan_search" -B "$tmp/example" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >"$tmp/configure.log" 2>&1
rc=$?
check "example configures with find_package(fsdpx) ($(grep -m1 -i error "$tmp/configure.log"))" $rc
cmake --build "$tmp/example" >"$tmp/build.log" 2>&1
rc=$?
check "example builds against the installed package ($(grep -m1 -i error "$tmp/build.log"))" $rc
grep -q -- "-I$SRC\|$SRC/core\|$SRC/planner" "$tmp/example/compile_commands.json" 2>/dev/null
[ $? -ne 0 ]; check "example does not compile against the source tree" $?
"$tmp/example/plan_search" llama-tiny cpu 4 64 8 >"$tmp/out.txt" 2>&1
check "example runs a plan search" $?
r=$(python3 - "$tmp/out.txt" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
head, _, body = text.partition("\n{")
plan = json.loads("{" + body)
ok = head.startswith("best plan: ") and plan["model"]["name"] == "llama-tiny" and plan["cluster"]["gpus_per_node"] * plan["cluster"].get("nodes", 1) == 4
print("ok" if ok else head[:200])
PY
)
[ "$r" = ok ]; check "example prints the best plan for llama-tiny on 4 ranks ($r)" $?
"$tmp/example/plan_search" no-such-model >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "no-such-model" "$tmp/err"; check "example reports a bad model name (exit 2)" $?

finish
