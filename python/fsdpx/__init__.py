"""fsdpx from Python: plan, estimate and simulate fully sharded data-parallel training of LLMs.

Every function runs the fsdpx command of the same name in-process (the C++ code the CLI runs, compiled
into fsdpx._fsdpx) and returns the JSON that command writes, parsed into plain dicts and lists: a plan
is exactly the file `fsdpx plan -o plan.json` writes, so the CLI and Python cannot drift. Models,
clusters and plans are given as config names ("llama3.1-8b", "dgx-h100"), paths to JSON files, or dicts
(our JSON, or a Hugging Face config.json as a dict). Invalid input raises ConfigError (a ValueError)
carrying the CLI's one-line message: the file and JSON path, or the option.

    import fsdpx
    plan = fsdpx.plan(model="llama3.1-8b", cluster="dgx-h100", nodes=1, seq=8192, global_batch=32)
    step = fsdpx.simulate(plan)
    print(step["mfu"], step["step_time_s"])
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Union

from . import _fsdpx
from ._fsdpx import ConfigError, NoPlanFits

__version__: str = _fsdpx.version
ConfigError.__module__ = NoPlanFits.__module__ = "fsdpx"  # shown as fsdpx.ConfigError in tracebacks
__all__ = ["ConfigError", "NoPlanFits", "plan", "plan_search", "estimate", "simulate", "validate",
           "export_torchtitan", "run_command", "__version__"]

# A name ("llama3.1-8b"), a path to a JSON file, or the JSON itself as a dict.
Config = Union[str, "os.PathLike[str]", Mapping[str, Any]]
Json = Dict[str, Any]


def _use_installed_configs() -> None:
    """Points fsdpx at the configs a wheel installs (<prefix>/share/fsdpx/configs) unless the user
    chose a folder; a build tree finds the source tree's configs/ without this."""
    installed = Path(sys.prefix) / "share" / "fsdpx" / "configs"
    if "FSDPX_CONFIG_DIR" not in os.environ and installed.is_dir():
        os.environ["FSDPX_CONFIG_DIR"] = str(installed)


_use_installed_configs()


class _Call:
    """One command's temporary folder: dict inputs are written there as JSON files (named in error
    messages as "<model dict>" etc.), and the command's -o files are read back from it."""

    def __init__(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="fsdpx-")
        self.path = Path(self._dir.name)
        self._labels: Dict[str, str] = {}

    def __enter__(self) -> "_Call":
        return self

    def __exit__(self, *exc: object) -> None:
        self._dir.cleanup()

    def config(self, what: str, value: Config) -> str:
        if isinstance(value, Mapping):
            file = self.path / f"{what}.json"
            file.write_text(json.dumps(value))
            self._labels[str(file)] = f"<{what} dict>"
            return str(file)
        return os.fspath(value)

    def out(self, name: str) -> str:
        return str(self.path / name)

    def run(self, args: List[str]) -> str:
        sys.stdout.flush()  # what Python printed before goes out before the command's capture starts
        try:
            return _fsdpx.run_command(args)
        except ConfigError as e:
            message = str(e)
            for file, label in self._labels.items():
                message = message.replace(file, label)
            raise type(e)(message) from None


def _options(options: Mapping[str, Any]) -> List[str]:
    """Keyword arguments as CLI options: memory_limit=80 -> --memory-limit 80; True -> a flag;
    None and False -> left out."""
    args: List[str] = []
    for name, value in options.items():
        if value is None or value is False:
            continue
        flag = "--" + name.replace("_", "-")
        args += [flag] if value is True else [flag, str(value)]
    return args


def _plan_args(call: _Call, model: Config, cluster: Config, seq: int, global_batch: int,
               options: Mapping[str, Any]) -> List[str]:
    return ["plan", "--model", call.config("model", model), "--cluster", call.config("cluster", cluster),
            "--seq", str(seq), "--global-batch", str(global_batch)] + _options(options)


def plan(*, model: Config, cluster: Config, seq: int, global_batch: int, nodes: Optional[int] = None,
         world_size: Optional[int] = None, target: str = "fsdpx", memory_limit: Optional[float] = None,
         memory_margin: Optional[str] = None, objective: Optional[str] = None, tp: Optional[int] = None,
         cp: Optional[int] = None, pp: Optional[int] = None, dp_shard: Optional[int] = None,
         dp_replicate: Optional[int] = None, sharding: Optional[str] = None, recompute: Optional[str] = None,
         **options: Any) -> Json:
    """The best plan for a training job: `fsdpx plan ... -o plan.json`, that file as a dict (format
    fsdpx-plan/1), ready for simulate() or `fsdpx simulate --plan`.

    Every other option of `fsdpx plan --help` is a keyword with '_' for '-' (fp16=True,
    allow_bf16_reduce=True, pp_schedule="1f1b", lora_rank=16, ...). Raises NoPlanFits when no plan
    fits in memory (its message says what would), ConfigError for invalid input."""
    fixed = dict(nodes=nodes, world_size=world_size, target=target, memory_limit=memory_limit,
                 memory_margin=memory_margin, objective=objective, tp=tp, cp=cp, pp=pp, dp_shard=dp_shard,
                 dp_replicate=dp_replicate, sharding=sharding, recompute=recompute)
    with _Call() as call:
        call.run(_plan_args(call, model, cluster, seq, global_batch, {**fixed, **options}) +
                 ["--format", "json", "-o", call.out("plan.json")])
        return json.loads(Path(call.out("plan.json")).read_text())


def plan_search(*, model: Config, cluster: Config, seq: int, global_batch: int, top: int = 5,
                **options: Any) -> Json:
    """The whole search report of `fsdpx plan --format json`: the chosen plan's metrics, its memory at
    the peak by category, and the `top` alternatives with why each lost. Options as plan()."""
    with _Call() as call:
        return json.loads(call.run(_plan_args(call, model, cluster, seq, global_batch, {"top": top, **options}) +
                                   ["--format", "json"]))


def estimate(*, model: Config, cluster: Config, nodes: Optional[int] = None, world_size: Optional[int] = None,
             tp: Optional[int] = None, cp: Optional[int] = None, dp_shard: Optional[int] = None,
             dp_replicate: Optional[int] = None, sharding: Optional[str] = None,
             micro_batch: Optional[int] = None, seq: Optional[int] = None, grad_accum: Optional[int] = None,
             recompute: Optional[str] = None, **options: Any) -> Json:
    """Analytic per-GPU memory and a step-time lower bound: `fsdpx estimate --format json` as a dict.
    Other options of `fsdpx estimate --help` as keywords (param_dtype="fp16", prefetch=2, ...)."""
    fixed = dict(nodes=nodes, world_size=world_size, tp=tp, cp=cp, dp_shard=dp_shard, dp_replicate=dp_replicate,
                 sharding=sharding, micro_batch=micro_batch, seq=seq, grad_accum=grad_accum, recompute=recompute)
    with _Call() as call:
        args = ["estimate", "--model", call.config("model", model), "--cluster", call.config("cluster", cluster)]
        call.run(args + _options({**fixed, **options}) + ["--format", "json", "-o", call.out("estimate.json")])
        return json.loads(Path(call.out("estimate.json")).read_text())


def simulate(plan: Config, *, no_overlap: bool = False, trace: Optional[Union[str, "os.PathLike[str]"]] = None) -> Json:
    """One training step of a plan through the simulator: `fsdpx simulate --plan P --format json` as a
    dict (per-phase compute and exposed communication, memory at the peak, MFU). `plan` is what plan()
    returns, a plan file or a name under configs/plans; `trace` writes a Chrome/Perfetto trace there."""
    with _Call() as call:
        args = ["simulate", "--plan", call.config("plan", plan)] + _options(dict(no_overlap=no_overlap))
        if trace is not None:
            args += ["--trace", os.fspath(trace)]
        call.run(args + ["--format", "json", "-o", call.out("simulation.json")])
        return json.loads(Path(call.out("simulation.json")).read_text())


def validate(cases: Union[str, "os.PathLike[str]"]) -> Json:
    """Predicted vs measured throughput, MFU and memory for every run of a published-runs case file
    (fsdpx-published-runs/1): `fsdpx validate FILE --format json` as a dict."""
    with _Call() as call:
        call.run(["validate", "--cases", os.fspath(cases), "--format", "json", "-o", call.out("validation.json")])
        return json.loads(Path(call.out("validation.json")).read_text())


def export_torchtitan(plan: Config, *, target: Optional[str] = None) -> str:
    """The plan as a torchtitan job config (TOML text): `fsdpx export --plan P [--target torchtitan@V]`.
    Settings torchtitan cannot express are comments in the text (and listed on stderr)."""
    with _Call() as call:
        call.run(["export", "--plan", call.config("plan", plan), "-o", call.out("job.toml")] +
                 _options(dict(target=target)))
        return Path(call.out("job.toml")).read_text()


def run_command(*args: str) -> str:
    """Runs `fsdpx ARGS...` for one of plan, estimate, simulate, validate or export in-process and returns
    what it printed (its text report unless --format json)."""
    with _Call() as call:
        return call.run(list(args))
