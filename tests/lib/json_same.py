#!/usr/bin/env python3
"""json_same.py A B NAME [KEY...]: are two ibfab JSON outputs the same but
for the top-level KEYs (and the parameter list's entries of those names)?
Prints the first 12 paths that differ, prefixed by NAME; exit 1 if any."""
import json
import sys


def main():
    a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
    name, keys = sys.argv[3], sys.argv[4:]
    for j in (a, b):
        for k in keys:
            j.pop(k, None)
            if isinstance(j.get("params"), dict):
                j["params"].pop(k, None)
    bad = []

    def walk(x, y, path):
        if isinstance(x, dict) and isinstance(y, dict):
            for k in x.keys() | y.keys():
                walk(x.get(k), y.get(k), f"{path}.{k}")
        elif isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
            for i, (p, q) in enumerate(zip(x, y)):
                walk(p, q, f"{path}[{i}]")
        elif x != y:
            bad.append(f"{path}: {x!r} became {y!r}")

    walk(a, b, name)
    for line in sorted(bad)[:12]:
        print("  ", line)
    sys.exit(1 if bad else 0)


main()
