#!/usr/bin/env python3
"""Derive the job-config schema of a torchtitan release from its torchtitan/config/job_config.py.

Developer script (not run by the tests): reads the file with `ast` (no torch, no torchtitan import) and
writes the sections and keys a TOML job config may hold, each with its type and, for Literal types, its
choices. The product's tests check fsdpx's exported TOML against the files this writes under
tests/data/torchtitan/.

    git -C torchtitan show v0.2.2:torchtitan/config/job_config.py > job_config.py
    tools/torchtitan_schema.py --version 0.2.2 --source "pytorch/torchtitan v0.2.2 \
        torchtitan/config/job_config.py" job_config.py > tests/data/torchtitan/job_config_0.2.2.json
"""
import argparse
import ast
import json
import sys

SCALARS = {"int": "int", "float": "float", "str": "str", "bool": "bool"}


def type_of(node):
    """(types, choices) of an annotation: types is a sorted list of int/float/str/bool/list/none/section:X."""
    if isinstance(node, ast.Name):
        if node.id in SCALARS:
            return [SCALARS[node.id]], None
        return ["section:" + node.id], None
    if isinstance(node, ast.Constant) and node.value is None:
        return ["none"], None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        lt, lc = type_of(node.left)
        rt, rc = type_of(node.right)
        return sorted(set(lt + rt)), (lc or []) + (rc or []) or None
    if isinstance(node, ast.Subscript):
        base = node.value.id if isinstance(node.value, ast.Name) else ""
        if base == "Literal":
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            values = [e.value for e in elts]
            return sorted({type(v).__name__ for v in values}), values
        if base in ("list", "tuple", "dict"):
            return ["list"], None
    raise SystemExit(f"unsupported annotation: {ast.dump(node)}")


def dataclasses(tree):
    out = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            fields = {}
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    fields[stmt.target.id] = type_of(stmt.annotation)
            out[node.name] = fields
    return out


def section(classes, name):
    keys = {}
    for key, (types, choices) in classes[name].items():
        nested = [t for t in types if t.startswith("section:")]
        if nested:
            keys[key] = {"section": section(classes, nested[0].split(":", 1)[1])}
            continue
        entry = {"types": types}
        if choices is not None:
            entry["choices"] = choices
        keys[key] = entry
    return keys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--version", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("job_config")
    a = ap.parse_args()
    classes = dataclasses(ast.parse(open(a.job_config).read()))
    schema = {"format": "fsdpx-torchtitan-schema/1", "torchtitan": a.version, "source": a.source,
              "sections": section(classes, "JobConfig")}
    json.dump(schema, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
