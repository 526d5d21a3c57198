#!/usr/bin/env python3
"""Checks that a predicted trace written by `fsdpx compare --plan P --trace DIR --predicted-trace OUT` loads in
HolisticTraceAnalysis (TraceAnalysis, get_temporal_breakdown) and in Perfetto's trace processor: its WebAssembly
build under Node (tools/perfetto_query.mjs; tools/get_perfetto_wasm.sh fetches it) by default, or a native
trace_processor_shell given as TP_BINARY (through the `perfetto` package). A file passes Perfetto when it imports
without an error, no import statistic of severity error or data_loss is set, and every complete event ("X") of
the file is a slice. Developer tool; prints one JSON object with what each reported.
Usage: .venv/bin/python tools/check_predicted_trace.py OUT [TP_BINARY]
"""
import glob
import gzip
import json
import os
import subprocess
import sys

TOOLS = os.path.dirname(os.path.abspath(__file__))
IMPORT_ERRORS_SQL = ("select name, value from stats where severity in ('error', 'data_loss') and value > 0")
SLICES_SQL = "select count(*) as slices, sum(dur) as dur_ns from slice"


def hta(directory):
    from hta.trace_analysis import TraceAnalysis
    ta = TraceAnalysis(trace_dir=directory)
    t = ta.get_temporal_breakdown(visualize=False)
    return {"ok": True, "ranks": len(t), "temporal_breakdown": t.to_dict("records")}


def complete_events(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return sum(1 for e in json.load(f)["traceEvents"] if e.get("ph") == "X")


def wasm_query(wasm_dir, path, sql):
    out = subprocess.run(["node", os.path.join(TOOLS, "perfetto_query.mjs"), wasm_dir, path, sql],
                         capture_output=True, text=True, timeout=300)
    reply = json.loads(out.stdout.strip().splitlines()[-1])
    if not reply["ok"]:
        raise RuntimeError(f"{path}: {reply['errors']}")
    return reply["rows"]


def perfetto_wasm(directory):
    wasm_dir = subprocess.run([os.path.join(TOOLS, "get_perfetto_wasm.sh")], capture_output=True, text=True,
                              check=True).stdout.strip()
    out = {"engine": "Perfetto trace processor v52.0 (WebAssembly, Node " +
           subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip() + ")"}
    ok = True
    for path in sorted(glob.glob(os.path.join(directory, "*.json*"))):
        try:
            errors = wasm_query(wasm_dir, path, IMPORT_ERRORS_SQL)
            slices = wasm_query(wasm_dir, path, SLICES_SQL)[0]
        except Exception as e:  # noqa: BLE001 - report whatever stopped it
            return {"ok": False, "error": f"{type(e).__name__}: {e}"}
        expected = complete_events(path)
        file_ok = not errors and slices["slices"] == expected
        ok = ok and file_ok
        out[os.path.basename(path)] = {"ok": file_ok, "import_errors": errors, "complete_events": expected, **slices}
    return {"ok": ok, "files": out}


def perfetto(directory, binary):
    if not binary:
        return perfetto_wasm(directory)
    try:
        from perfetto.trace_processor import TraceProcessor, TraceProcessorConfig
    except ImportError as e:
        return {"ok": False, "error": f"perfetto not installed: {e}"}
    out = {}
    for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        try:
            tp = TraceProcessor(trace=path, config=TraceProcessorConfig(bin_path=binary))
            row = next(iter(tp.query("select count(*) as n, sum(dur) as dur_ns from slice")))
            out[os.path.basename(path)] = {"slices": row.n, "dur_ns": row.dur_ns}
            tp.close()
        except Exception as e:  # noqa: BLE001 - report whatever stopped it
            return {"ok": False, "error": f"{type(e).__name__}: {e}"}
    return {"ok": True, "files": out}


def main():
    directory = sys.argv[1]
    binary = sys.argv[2] if len(sys.argv) > 2 else None
    result = {"trace": directory}
    try:
        result["hta"] = hta(directory)
    except Exception as e:  # noqa: BLE001
        result["hta"] = {"ok": False, "error": f"{type(e).__name__}: {e}"}
    result["perfetto"] = perfetto(directory, binary)
    print(json.dumps(result, indent=1, default=str))
    sys.exit(0 if result["hta"]["ok"] and result["perfetto"]["ok"] else 1)


if __name__ == "__main__":
    main()
