"""The fsdpx Python package against the fsdpx CLI (ctest python_api; PYTHONPATH=<build>/python).

The same requests through `fsdpx ...` (a subprocess) and through fsdpx.<function> must give the same JSON:
a plan for llama3.1-8b on one dgx-h100 node, its search report, its simulation and an estimate; bad input
must raise fsdpx.ConfigError with the line the CLI prints after "fsdpx: error: ".
Usage: test_python_api.py FSDPX_BINARY
"""
import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

FSDPX = sys.argv.pop(1) if len(sys.argv) > 1 else "fsdpx"

import fsdpx  # noqa: E402  (after argv is read, so unittest does not see the binary's path)

REQUEST = dict(model="llama3.1-8b", cluster="dgx-h100", nodes=1, seq=8192, global_batch=32)
REQUEST_ARGS = ["--model", "llama3.1-8b", "--cluster", "dgx-h100", "--nodes", "1", "--seq", "8192",
                "--global-batch", "32"]


def cli(*args, expect=0):
    """Runs the binary; returns (stdout, the message after 'fsdpx: error: ' or '')."""
    r = subprocess.run([FSDPX, *args], capture_output=True, text=True, timeout=240)
    if r.returncode != expect:
        raise AssertionError(f"fsdpx {' '.join(args)}: exit {r.returncode}, expected {expect}: {r.stderr}")
    err = r.stderr.strip()
    return r.stdout, err.removeprefix("fsdpx: error: ") if expect else err


class SameAsCli(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="fsdpx-pytest-")
        cls.plan_file = Path(cls.tmp.name) / "plan.json"
        cls.search_out, _ = cli("plan", *REQUEST_ARGS, "--format", "json", "-o", str(cls.plan_file))
        cls.cli_plan = json.loads(cls.plan_file.read_text())

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_plan_equals_cli_plan_file(self):
        plan = fsdpx.plan(**REQUEST)
        self.assertGreater(len(plan), 5)
        self.assertEqual(plan, self.cli_plan)

    def test_plan_search_equals_cli_json(self):
        self.assertEqual(fsdpx.plan_search(**REQUEST), json.loads(self.search_out))

    def test_simulate_of_a_dict_equals_cli(self):
        out, _ = cli("simulate", "--plan", str(self.plan_file), "--format", "json")
        self.assertEqual(fsdpx.simulate(self.cli_plan), json.loads(out))

    def test_estimate_equals_cli(self):
        out, _ = cli("estimate", "--model", "llama3.1-8b", "--cluster", "dgx-h100", "--nodes", "1",
                     "--seq", "4096", "--recompute", "full", "--format", "json")
        got = fsdpx.estimate(model="llama3.1-8b", cluster="dgx-h100", nodes=1, seq=4096, recompute="full")
        self.assertEqual(got, json.loads(out))

    def test_options_and_flags_reach_the_planner(self):
        # Keywords become options (tp=2 -> --tp 2) and True becomes a flag; the default plan has tp 1.
        self.assertEqual(self.cli_plan["parallelism"]["tp"], 1)
        with tempfile.TemporaryDirectory() as tmp:
            cli("plan", *REQUEST_ARGS, "--target", "torchtitan@0.2.2", "--tp", "2", "--allow-bf16-reduce",
                "-o", f"{tmp}/tp2.json")
            expected = json.loads(Path(tmp, "tp2.json").read_text())
        got = fsdpx.plan(**REQUEST, target="torchtitan@0.2.2", tp=2, allow_bf16_reduce=True)
        self.assertEqual(got["parallelism"]["tp"], 2)
        self.assertEqual(got, expected)

    def test_version_is_the_cli_version(self):
        out, _ = cli("--version")
        self.assertEqual(out.strip(), fsdpx._fsdpx.version_line)
        self.assertEqual(out.split()[1], fsdpx.__version__)


class BadInput(unittest.TestCase):
    def assert_same_error(self, cli_args, call, cls=fsdpx.ConfigError):
        _, message = cli(*cli_args, expect=2)
        with self.assertRaises(cls) as caught:
            call()
        self.assertEqual(str(caught.exception), message)
        self.assertIsInstance(caught.exception, ValueError)

    def test_unknown_model_name(self):
        args = ["plan", *REQUEST_ARGS]
        args[args.index("llama3.1-8b")] = "llama9-1t"
        self.assert_same_error(args, lambda: fsdpx.plan(**{**REQUEST, "model": "llama9-1t"}))

    def test_bad_number_on_the_command_line(self):
        self.assert_same_error(["plan", *REQUEST_ARGS, "--memory-margin", "200%"],
                               lambda: fsdpx.plan(**REQUEST, memory_margin="200%"))

    def test_bad_plan_file_names_file_and_json_path(self):
        with tempfile.TemporaryDirectory() as tmp:
            cli("plan", *REQUEST_ARGS, "-o", str(Path(tmp) / "plan.json"))
            bad = json.loads((Path(tmp) / "plan.json").read_text())
            bad["parallelism"]["tp"] = -3
            path = Path(tmp) / "bad.json"
            path.write_text(json.dumps(bad))
            self.assert_same_error(["simulate", "--plan", str(path)], lambda: fsdpx.simulate(path))
            with self.assertRaises(fsdpx.ConfigError) as caught:
                fsdpx.simulate(bad)  # a dict: the message names it, not a temporary file
            self.assertIn("<plan dict>: /parallelism/tp", str(caught.exception))

    def test_unknown_option(self):
        with self.assertRaises(fsdpx.ConfigError) as caught:
            fsdpx.plan(**REQUEST, no_such_knob=3)
        self.assertIn("--no-such-knob", str(caught.exception))

    def test_no_plan_fits(self):
        with self.assertRaises(fsdpx.NoPlanFits):
            fsdpx.plan(model="llama3.1-405b", cluster="dgx-h100", nodes=1, seq=8192, global_batch=8)


if __name__ == "__main__":
    unittest.main(verbosity=2)
