#!/usr/bin/env python3
"""Print each criterion benchmark's throughput as a ratio to the group's
`memcpy` baseline, from criterion's output (target/criterion/**/new/).

    cargo bench -p iiop-benches --bench cdr -- --warm-up-time 1 --measurement-time 2
    python3 benches/ratios.py [CRITERION_DIR] [--group cdr]

Two ratios per case, both against memcpy measured in the same run:
  median  from estimates.json (criterion's median per-iteration time)
  best    from sample.json (the fastest sample's per-iteration time): on a
          shared, loaded machine this filters out preemption and is the
          more repeatable of the two.
Throughput = the bytes declared with Throughput::Bytes / time.
"""
import json
import os
import sys


def load(bench_dir):
    new = os.path.join(bench_dir, "new")
    with open(os.path.join(new, "benchmark.json")) as f:
        meta = json.load(f)
    with open(os.path.join(new, "estimates.json")) as f:
        est = json.load(f)
    with open(os.path.join(new, "sample.json")) as f:
        sample = json.load(f)
    tp = meta.get("throughput") or {}
    nbytes = tp.get("Bytes") or tp.get("BytesDecimal")
    best = min(t / i for t, i in zip(sample["times"], sample["iters"]))
    return {
        "group": meta["group_id"],
        "id": meta["function_id"] or meta["full_id"],
        "bytes": nbytes,
        "median_ns": est["median"]["point_estimate"],
        "best_ns": best,
    }


def main(argv):
    root = "target/criterion"
    group = None
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--group":
            group = args.pop(0)
        else:
            root = a
    rows = []
    for dirpath, dirnames, filenames in os.walk(root):
        if os.path.basename(dirpath) == "new" and "benchmark.json" in filenames:
            r = load(os.path.dirname(dirpath))
            if group is None or r["group"] == group:
                rows.append(r)
    if not rows:
        print(f"no criterion results under {root}", file=sys.stderr)
        return 1
    for g in sorted({r["group"] for r in rows}):
        rs = [r for r in rows if r["group"] == g]
        base = next((r for r in rs if r["id"] == "memcpy"), None)
        if base is None:
            print(f"group {g}: no memcpy baseline", file=sys.stderr)
            continue

        def gibs(nbytes, ns):
            return nbytes / ns * 1e9 / 2**30

        bm = gibs(base["bytes"], base["median_ns"])
        bb = gibs(base["bytes"], base["best_ns"])
        print(f"group {g}: memcpy {base['bytes']} B: median {bm:.2f} GiB/s, best {bb:.2f} GiB/s")
        print(f"{'case':40} {'bytes':>7} {'median GiB/s':>13} {'ratio':>6} {'best GiB/s':>11} {'ratio':>6}")
        for r in sorted(rs, key=lambda r: r["id"]):
            if r is base or not r["bytes"]:
                continue
            m = gibs(r["bytes"], r["median_ns"])
            b = gibs(r["bytes"], r["best_ns"])
            print(f"{r['id']:40} {r['bytes']:>7} {m:>13.2f} {m / bm:>6.2f} {b:>11.2f} {b / bb:>6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
