#!/usr/bin/env python3
"""Load an fsdpx-exported job config with a torchtitan release's own ConfigManager (developer check).

Needs `pip install tyro` and a torchtitan source tree at the release (a git checkout at the tag, or an
unpacked wheel); PyTorch is not needed: `torch` and torchtitan's logger are replaced by empty modules, since job_config.py and
manager.py only import them. Runs ConfigManager().parse_args(["--job.config_file", TOML]), which rejects
unknown sections and keys and checks values against the dataclass types (tyro).

    git -C torchtitan worktree add /tmp/tt-0.2.2 v0.2.2
    tools/check_torchtitan_toml.py /tmp/tt-0.2.2 job.toml
"""
import importlib.util
import sys
import types


def stub_modules():
    torch = types.ModuleType("torch")
    torch.dtype = type("dtype", (), {})
    torch.device = type("device", (), {})
    sys.modules.setdefault("torch", torch)
    logging = types.ModuleType("torchtitan.tools.logging")
    import logging as std_logging
    logging.logger = std_logging.getLogger("torchtitan")
    for name in ("torchtitan", "torchtitan.tools", "torchtitan.config"):
        sys.modules.setdefault(name, types.ModuleType(name))
    sys.modules["torchtitan.tools.logging"] = logging


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    root, toml = sys.argv[1], sys.argv[2]
    stub_modules()
    sys.modules["torchtitan.config"].__path__ = [f"{root}/torchtitan/config"]
    load("torchtitan.config.job_config", f"{root}/torchtitan/config/job_config.py")
    manager = load("torchtitan.config.manager", f"{root}/torchtitan/config/manager.py")
    config = manager.ConfigManager().parse_args(["--job.config_file", toml])
    print(f"{toml}: loads; parallelism dp_shard={config.parallelism.data_parallel_shard_degree} "
          f"tp={config.parallelism.tensor_parallel_degree}, activation_checkpoint={config.activation_checkpoint.mode}")


if __name__ == "__main__":
    main()
