"""In-tree PEP 517 build backend for the fsdpx Python package (pyproject.toml: backend-path python).

It needs nothing from PyPI (no setuptools, wheel or scikit-build-core, which Debian 12 does not ship in a
fresh venv), so `pip install .` works offline, isolated or not. It configures CMake with FSDPX_PYTHON=ON
in <source>/build-wheel, builds the extension (fsdpx._fsdpx) and the fsdpx binary, and writes the wheel
itself (PEP 427: a zip with a .dist-info folder and a RECORD of sha256 digests). The wheel holds the
package, the binary (installed on PATH as `fsdpx`) and configs/ (installed in <prefix>/share/fsdpx/configs,
where both find them). Leaves out sdists and editable installs. Settings: $CMAKE_ARGS (extra -D options),
$CMAKE_BUILD_PARALLEL_LEVEL (jobs); ccache is used when found.
"""
import base64
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import stat
import sysconfig
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAME = "fsdpx"


def _version():
    """The version of CMakeLists.txt's project(), which `fsdpx --version` prints."""
    m = re.search(r"project\(fsdpx VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text())
    if not m:
        raise RuntimeError("CMakeLists.txt: no 'project(fsdpx VERSION x.y.z'")
    return m.group(1)


def _tag():
    """The wheel tag of this interpreter: cp311-cp311-linux_x86_64."""
    py = f"cp{sys.version_info.major}{sys.version_info.minor}"
    return f"{py}-{py}-" + sysconfig.get_platform().replace("-", "_").replace(".", "_")


def _metadata():
    summary = "Plan, simulate and run fully sharded data-parallel (FSDP) training of LLMs"
    return f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {_version()}\nSummary: {summary}\n" \
           f"Requires-Python: >=3.9\n"


def _write_dist_info(folder):
    info = Path(folder) / f"{NAME}-{_version()}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(_metadata())
    (info / "WHEEL").write_text(f"Wheel-Version: 1.0\nGenerator: fsdpx_build\nRoot-Is-Purelib: false\nTag: {_tag()}\n")
    shutil.copyfile(ROOT / "LICENSE", info / "LICENSE")
    return info.name


def _cmake_build():
    """Configures and builds the module and the binary; returns the build folder."""
    build = ROOT / "build-wheel"
    args = ["cmake", "-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release", "-DFSDPX_PYTHON=ON",
            "-DFSDPX_BUILD_TESTS=OFF", "-DFSDPX_BUILD_BENCH=OFF", f"-DPython3_EXECUTABLE={sys.executable}"]
    if shutil.which("ninja") and not (build / "CMakeCache.txt").exists():
        args += ["-G", "Ninja"]
    if shutil.which("ccache"):
        args += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache", "-DCMAKE_CUDA_COMPILER_LAUNCHER=ccache"]
    args += shlex.split(os.environ.get("CMAKE_ARGS", ""))
    subprocess.run(args, check=True, stdout=sys.stderr)
    subprocess.run(["cmake", "--build", str(build), "--target", "_fsdpx", "fsdpx"], check=True, stdout=sys.stderr)
    if not list((build / "python" / NAME).glob("_fsdpx*.so")):
        raise RuntimeError("the Python module was not built: python3-dev and pybind11-dev are needed (see CMake's warning)")
    return build


def _wheel_files(build):
    """(path in the wheel, file on disk) for everything the wheel installs."""
    data = f"{NAME}-{_version()}.data"
    files = [(f"{NAME}/{p.name}", p) for p in sorted((build / "python" / NAME).iterdir()) if p.is_file()]
    files.append((f"{data}/scripts/fsdpx", build / "fsdpx"))
    for p in sorted((ROOT / "configs").rglob("*.json")):
        files.append((f"{data}/data/share/fsdpx/configs/{p.relative_to(ROOT / 'configs').as_posix()}", p))
    return files


def _record_line(name, payload):
    digest = base64.urlsafe_b64encode(hashlib.sha256(payload).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(payload)}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _write_dist_info(metadata_directory)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    build = _cmake_build()
    wheel = Path(wheel_directory) / f"{NAME}-{_version()}-{_tag()}.whl"
    info_dir = build / "dist-info"
    shutil.rmtree(info_dir, ignore_errors=True)
    info = _write_dist_info(info_dir)
    record = []
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        entries = _wheel_files(build) + [(f"{info}/{p.name}", p) for p in sorted((info_dir / info).iterdir())]
        for name, path in entries:
            payload = path.read_bytes()
            zi = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            zi.external_attr = (stat.S_IFREG | (0o755 if os.access(path, os.X_OK) else 0o644)) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, payload)
            record.append(_record_line(name, payload))
        record.append(f"{info}/RECORD,,")
        z.writestr(zipfile.ZipInfo(f"{info}/RECORD", date_time=(1980, 1, 1, 0, 0, 0)), "\n".join(record) + "\n")
    return wheel.name
