#!/usr/bin/env python3
"""Checks that a predicted trace written by `fsdpx compare --plan P --trace DIR --predicted-trace OUT` loads in
HolisticTraceAnalysis (TraceAnalysis, get_temporal_breakdown) and in Perfetto's trace processor (`perfetto` from
PyPI, whose trace_processor binary it downloads on first use unless one is given). Developer tool; prints one
JSON object with what each reported. Usage: .venv/bin/python tools/check_predicted_trace.py OUT [TP_BINARY]
"""
import glob
import json
import os
import sys


def hta(directory):
    from hta.trace_analysis import TraceAnalysis
    ta = TraceAnalysis(trace_dir=directory)
    t = ta.get_temporal_breakdown(visualize=False)
    return {"ok": True, "ranks": len(t), "temporal_breakdown": t.to_dict("records")}


def perfetto(directory, binary):
    try:
        from perfetto.trace_processor import TraceProcessor, TraceProcessorConfig
    except ImportError as e:
        return {"ok": False, "error": f"perfetto not installed: {e}"}
    out = {}
    for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        try:
            config = TraceProcessorConfig(bin_path=binary) if binary else None
            tp = TraceProcessor(trace=path, config=config) if config else TraceProcessor(trace=path)
            row = next(iter(tp.query("select count(*) as n, sum(dur) as dur_ns from slice")))
            out[os.path.basename(path)] = {"slices": row.n, "dur_ns": row.dur_ns}
            tp.close()
        except Exception as e:  # noqa: BLE001 - report whatever stopped it (e.g. no network for the binary)
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
    sys.exit(0 if result["hta"]["ok"] else 1)


if __name__ == "__main__":
    main()
