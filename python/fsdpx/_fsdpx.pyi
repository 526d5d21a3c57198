# Type stub of the C++ extension fsdpx._fsdpx (python/module.cpp); the typed API is fsdpx/__init__.py.
from typing import List

class ConfigError(ValueError):
    """Invalid input: the one line the fsdpx CLI prints (file and JSON path, or the option)."""

class NoPlanFits(ConfigError):
    """No plan fits in memory; the message gives the least memory a plan needs and what would fit."""

version: str        # the project version, as in `fsdpx --version`
git_revision: str   # the source tree's git revision at build time ("unknown" without .git)
version_line: str   # the whole `fsdpx --version` line

def run_command(args: List[str]) -> str:
    """Runs `fsdpx ARGS...` (plan, estimate, simulate, validate, export) and returns its standard output."""
