#!/usr/bin/env python3
"""Checks the last stdout line of a vendor bench client against
docs/vendor-protocol.md. Used by scripts/orbs/selftest-omniorb.

    check_json.py latency FILE COUNT
    check_json.py throughput FILE TOTAL
    check_json.py conformance FILE [KNOWN_FAILURE ...]
    check_json.py server FILE HOST PORT     (the server's startup lines)

Prints a one-line summary; exits 1 with the reason when a check fails.
KNOWN_FAILURE names conformance checks allowed to fail (a vendor defect we
document); any other failure, or a known one that passes, is reported.
"""

import json
import sys


def fail(why):
    print(f"check_json: FAIL: {why}")
    sys.exit(1)


def last_json(path):
    with open(path) as f:
        lines = [l for l in f.read().splitlines() if l.strip()]
    if not lines:
        fail(f"{path}: no output")
    try:
        return json.loads(lines[-1])
    except ValueError as e:
        fail(f"{path}: last line is not JSON ({e}): {lines[-1][:200]}")


def need(d, keys, path):
    for k in keys:
        if k not in d:
            fail(f"{path}: key '{k}' missing")


def check_server(path, host, port):
    """config lines, the IOR, corbaloc lines for the four keys, `ready`."""
    with open(path) as f:
        lines = f.read().splitlines()
    if "ready" not in lines:
        fail(f"{path}: no 'ready' line")
    lines = [l for l in lines[:lines.index("ready") + 1] if not l.startswith("omniORB:")]
    i = 0
    while i < len(lines) and lines[i].startswith("config "):
        if "=" not in lines[i]:
            fail(f"{path}: config line without '=': {lines[i]}")
        i += 1
    if i == 0:
        fail(f"{path}: no config lines")
    if not lines[i].startswith("IOR:"):
        fail(f"{path}: line {i + 1} should be the IOR: {lines[i][:80]}")
    want = [f"corbaloc {k} corbaloc:iiop:{host}:{port}/{k}"
            for k in ("Bench", "Dispatch50", "Dispatch500", "Single0")] + ["ready"]
    if lines[i + 1:] != want:
        fail(f"{path}: after the IOR got {lines[i + 1:]}, want {want}")
    print(f"server startup lines ok ({i} config lines)")


def main(argv):
    mode, path = argv[1], argv[2]
    if mode == "server":
        check_server(path, argv[3], argv[4])
        return
    d = last_json(path)
    if d.get("mode") != mode:
        fail(f"{path}: mode {d.get('mode')!r}, want {mode!r}")
    if mode == "latency":
        count = int(argv[3])
        need(d, ["orb", "op", "type", "size", "elements", "calls", "seconds", "latency_us"], path)
        lat = d["latency_us"]
        need(lat, ["min", "mean", "p50", "p90", "p99", "p999", "max"], path)
        if d["calls"] != count:
            fail(f"{path}: calls {d['calls']}, want {count}")
        if not 0 < lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["p999"] <= lat["max"]:
            fail(f"{path}: percentiles out of order: {lat}")
        print(f"latency {d['op']} {d['type']} {d['size']} B: p50 {lat['p50']:.1f} us, "
              f"p99 {lat['p99']:.1f} us ({d['calls']} calls)")
    elif mode == "throughput":
        total = int(argv[3])
        need(d, ["orb", "op", "type", "size", "elements", "calls", "bytes", "seconds", "mbps",
                 "server_bytes", "receiver_mbps", "server_calls", "server_oneways"], path)
        if d["bytes"] < total:
            fail(f"{path}: bytes {d['bytes']} < total {total}")
        if d["server_bytes"] != d["bytes"]:
            fail(f"{path}: server_bytes {d['server_bytes']} != bytes {d['bytes']}")
        counted = d["server_oneways"] if d["op"] == "oneway" else d["server_calls"]
        if counted != d["calls"]:
            fail(f"{path}: server counted {counted} calls, client made {d['calls']}")
        want = d["bytes"] * 8 / d["seconds"] / 1e6
        if abs(want - d["mbps"]) > 0.01 * want:
            fail(f"{path}: mbps {d['mbps']} but bytes*8/seconds/1e6 = {want:.1f}")
        print(f"throughput {d['op']} {d['type']} {d['size']} B: {d['mbps']:.0f} Mbit/s "
              f"(receiver {d['receiver_mbps']:.0f}), {d['calls']} calls")
    elif mode == "conformance":
        known = set(argv[3:])
        need(d, ["orb", "checks", "passed", "failed"], path)
        failed = [c for c in d["checks"] if not c["pass"]]
        if d["passed"] + d["failed"] != len(d["checks"]) or d["failed"] != len(failed):
            fail(f"{path}: passed/failed counts disagree with the checks")
        unexpected = [c for c in failed if c["name"] not in known]
        if unexpected:
            fail(f"{path}: " + "; ".join(f"{c['name']}: {c['detail']}" for c in unexpected))
        fixed = known - {c["name"] for c in failed}
        if fixed:
            fail(f"{path}: known failures now pass, update the list: {sorted(fixed)}")
        # Skipped checks are listed apart (names, or {name, detail}), never
        # as passes.
        skipped = len(d.get("skipped", []))
        posing = [c["name"] for c in d["checks"] if c["detail"].startswith("skipped")]
        if posing:
            fail(f"{path}: skipped checks listed as checks: {posing[:5]}")
        print(f"conformance: {d['passed']} passed, {d['failed']} failed"
              + (f" (known: {', '.join(sorted(known))})" if known else "")
              + (f", {skipped} skipped" if skipped else ""))
    else:
        fail(f"unknown mode {mode}")


if __name__ == "__main__":
    main(sys.argv)
