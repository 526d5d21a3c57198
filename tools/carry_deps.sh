#!/usr/bin/env bash
# Copies the header-only dependencies (nlohmann/json, CLI11, doctest, fmt used header-only) from this
# machine's /usr/include into .deps/include of the repository, for machines without the Debian packages
# (the GPU machine: configure there with -DFSDPX_DEPS_DIR=.deps, and carry .deps, which .gitignore
# ignores). Usage: tools/carry_deps.sh [repo root, default: the root above this script].
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
dest="$root/.deps/include"
mkdir -p "$dest"
for dir in nlohmann CLI doctest fmt; do
  if [ ! -d "/usr/include/$dir" ]; then
    echo "carry_deps: /usr/include/$dir is missing (install the -dev package first: tools/install_deps.sh)" >&2
    exit 1
  fi
  rm -rf "${dest:?}/$dir"
  cp -r "/usr/include/$dir" "$dest/$dir"
done
du -sh "$root/.deps" | sed 's/^/carry_deps: /'
