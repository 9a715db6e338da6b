#!/usr/bin/env python3
"""The issue-6 speed comparison, measured side by side in one run.

Against the omniORB bench server (scripts/orbs/omniorb), for each element
type, payload size and mode: the omniORB C++ bench client and iiopbench's
client, each `--reps` times, alternating, with the same placement (taskset:
server on --server-cpus, both clients on --client-cpus). Our client runs
once per `--wait-strategy` value (default `auto,read`): with the CPUs
apart, `auto` spins before it blocks (the reply is picked up without
waking a sleeping thread); `read` blocks in recv at once, as the omniORB
client does, so it is the like-for-like row. Then our client against our
server vs `bench tcp` at 64 KiB, and ping p50 latency: ours vs omniORB
client on the omniORB server vs raw TCP 1-byte ping-pong (the raw-TCP
client waits as ours does).

Prints a table of medians and ratios (ours / theirs) and writes everything
to --out (JSON). Never quotes an absolute figure without its baseline.

    benches/compare/run.py [--quick] [--full] [--reps 3] [--wait-strategy auto,read] [--out FILE]
"""
import argparse, json, os, re, signal, socket, statistics, subprocess, sys, tempfile, time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
IIOPBENCH = os.path.join(ROOT, "target", "release", "iiopbench")
ORBS = os.path.join(ROOT, "scripts", "orbs")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def taskset(cpus, cmd):
    return ["taskset", "-c", cpus] + cmd if cpus else cmd


def last_json(out):
    for line in reversed(out.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError("no JSON line in output:\n" + out[-2000:])


def run(cmd, timeout=600):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    return p.stdout


class Server:
    """A vendor server started through scripts/orbs/<orb>/start."""

    def __init__(self, orb, cpus):
        self.ior_file = tempfile.mktemp(suffix=".ior")
        port = free_port()
        cmd = taskset(cpus, [os.path.join(ORBS, orb, "start"), "--host", "127.0.0.1", "--port", str(port), "--ior-file", self.ior_file])
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 60
        for line in self.p.stdout:
            if line.strip() == "ready":
                break
            if time.time() > deadline:
                raise RuntimeError(f"{orb} server not ready")
        else:
            raise RuntimeError(f"{orb} server exited: {self.p.stderr.read()[-2000:]}")

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        try:
            self.p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.p.kill()
        os.unlink(self.ior_file)


def omni_client(ior, cpus, args):
    return last_json(run(taskset(cpus, [os.path.join(ORBS, "omniorb", "client"), "--target", ior] + args)))


def ours(cpus, args, wait):
    # One run per call: this script interleaves its own repetitions.
    out = run(taskset(cpus, [IIOPBENCH, "bench"] + args + ["--runs", "1", "--wait-strategy", wait, "--quiet", "--json", "-"]))
    r = json.loads(out)
    WAITED.setdefault(wait, set()).add(r["params"].get("wait_strategy", "?"))
    return r


WAITED = {}  # --wait-strategy asked -> how our client waited (params.wait_strategy)


def throughput_round(ior, cpus, server_cpus, ty, size, mode, total, mind, waits, rep):
    """One measurement of the omniORB client and one of ours per wait
    strategy, back to back; the order rotates between reps, so drift in
    the machine's load favours none of them."""
    op = {"oneway": "oneway", "twoway": "send"}[mode]

    def theirs():
        o = omni_client(ior, cpus, ["--mode", "throughput", "--op", op, "--type", ty, "--size", str(size), "--total", str(total), "--min-duration", str(mind)])
        return {"mbps": o.get("receiver_mbps") or o["mbps"]}

    def mine(wait):
        # --server-cpus records where the external server runs, so the
        # placement (and what auto picks from it) is known.
        r = ours(cpus, ["throughput", "--target", ior, "--server-cpus", server_cpus, "--type", ty, "--size", str(size), "--mode", mode, "--total", str(total), "--min-duration", f"{mind}s"], wait)
        c = r["cases"][0]
        if c["errors"]:
            raise RuntimeError(f"our client reported errors: {c['errors']}")
        # How busy the server was: its process CPU time (from stats()) over
        # the run; near 1.0 on one pinned CPU, the server is the limit.
        srv = (c.get("cpu") or {}).get("server_s")
        return {"mbps": c.get("receiver_throughput_mbps") or c["throughput_mbps"], "server_busy": srv / c["seconds"] if srv is not None else None}

    return rotated(rep, [("omniorb", theirs)] + [(w, lambda w=w: mine(w)) for w in waits])


def rotated(rep, runs):
    """Run each (name, f) once, starting at a different one each rep."""
    k = rep % len(runs)
    return dict((name, f()) for name, f in runs[k:] + runs[:k])


def paired(pairs):
    """Median of the per-rep ratios ours/theirs, and their range."""
    rs = sorted(a / b for a, b in pairs)
    return statistics.median(rs), rs[0], rs[-1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="octet/double/char at 1KiB and 64KiB, 16 MiB per point")
    ap.add_argument("--full", action="store_true", help="every bench.idl type, 1KiB..128KiB")
    ap.add_argument("--server-cpus", default="1")
    ap.add_argument("--client-cpus", default="0")
    ap.add_argument("--out", default=os.path.join(ROOT, "target", "compare.json"))
    ap.add_argument("--wait-strategy", default="auto,read", help="our client's --wait-strategy values to measure, comma-separated; each gets its own columns (default: auto,read: auto spins when the CPUs are apart, read blocks in recv as the omniORB client does)")
    a = ap.parse_args()
    waits = a.wait_strategy.split(",")
    for w in waits:
        if w not in ("auto", "read", "spin", "reactor"):
            ap.error(f"unknown wait strategy {w!r}")
    if a.full:
        types = ["short", "ushort", "long", "ulong", "longlong", "ulonglong", "float", "double", "char", "octet", "boolean", "perfstruct", "cd", "mixedquad", "longquad", "floatpair", "charstruct", "doublestruct"]
        sizes = [1 << k for k in range(10, 18)]
    elif a.quick:
        types, sizes = ["octet", "double", "char"], [1024, 65536]
    else:
        types, sizes = ["octet", "long", "double", "char", "perfstruct"], [1024, 8192, 65536, 131072]
    total, mind = (16 << 20, 0.3) if a.quick else (64 << 20, 1.0)
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "iiopbench"], cwd=ROOT, check=True)
    subprocess.run([os.path.join(ORBS, "omniorb", "build")], check=True)
    placement = f"server CPUs {a.server_cpus}, client CPUs {a.client_cpus}"
    results = {"placement": placement, "reps": a.reps, "wait_strategies": waits, "throughput": [], "latency": {}, "ours_vs_tcp": {}}
    med = statistics.median
    srv = Server("omniorb", a.server_cpus)
    try:
        print(f"# our client vs the omniORB client, both on the omniORB server ({placement}); median of {a.reps}, receiver-side Mbit/s")
        print(f"# ours/omniORB: ratio of medians, then the median of per-rep ratios (min..max); per --wait-strategy: {', '.join(waits)}")
        print(f"# srv: the omniORB server's CPU time over the run with our client (1.00 = its CPU saturated: the server is the limit)")
        print(f"{'mode':7} {'type':11} {'size':>7} {'omniORB':>9}" + "".join(f" | {w:>7} {'ratio':>5} {'paired (min..max)':>18} {'srv':>4}" for w in waits))
        for mode in ["oneway", "twoway"]:
            for ty in types:
                for size in sizes:
                    reps = [throughput_round(srv.ior_file, a.client_cpus, a.server_cpus, ty, size, mode, total, mind, waits, i) for i in range(a.reps)]
                    t = med(r["omniorb"]["mbps"] for r in reps)
                    row = {"mode": mode, "type": ty, "size": size, "omniorb_mbps": t, "samples": reps, "ours": {}}
                    line = f"{mode:7} {ty:11} {size:>7} {t:>9.0f}"
                    for w in waits:
                        m = med(r[w]["mbps"] for r in reps)
                        pr, lo, hi = paired([(r[w]["mbps"], r["omniorb"]["mbps"]) for r in reps])
                        busy = [r[w]["server_busy"] for r in reps if r[w]["server_busy"] is not None]
                        b = med(busy) if busy else None
                        row["ours"][w] = {"mbps": m, "ratio": m / t, "paired_ratio": pr, "paired_min": lo, "paired_max": hi, "server_busy": b}
                        line += f" | {m:>7.0f} {m / t:>5.2f} {pr:>6.2f} ({lo:.2f}..{hi:.2f}) " + (f"{b:>4.2f}" if b is not None else "   -")
                    results["throughput"].append(row)
                    print(line, flush=True)
        # Ping latency: ours vs omniORB client on the omniORB server, in
        # short interleaved rounds (this machine's load drifts by more
        # than the difference being measured within a minute).
        lat = {k: [] for k in ["omniorb"] + waits}
        for i in range(a.reps * 8):
            def o_run():
                return omni_client(srv.ior_file, a.client_cpus, ["--mode", "latency", "--op", "ping", "--count", "5000", "--warmup", "500"])["latency_us"]["p50"]

            def m_run(w):
                return ours(a.client_cpus, ["latency", "--target", srv.ior_file, "--server-cpus", a.server_cpus, "--count", "5000", "--warmup", "500"], w)["cases"][0]["latency_us"]["p50"]

            for k, v in rotated(i, [("omniorb", o_run)] + [(w, lambda w=w: m_run(w)) for w in waits]).items():
                lat[k].append(v)
        results["latency"]["omniorb_server_p50_us"] = lat
    finally:
        srv.stop()
    # Ours vs ours, against raw TCP in the same run and placement (the
    # raw-TCP client waits as ours does).
    pin = ["--client-cpus", a.client_cpus, "--server-cpus", a.server_cpus]
    vs_tcp = {w: {"oneway_octet_64KiB_mbps": [], "tcp_stream_64KiB_mbps": [], "ping_p50_us": [], "tcp_1B_p50_us": []} for w in waits}
    for i in range(a.reps):
        for w in waits:
            d = vs_tcp[w]
            r = ours(None, ["throughput", "--type", "octet", "--size", "64KiB", "--mode", "oneway", "--total", str(total), "--min-duration", f"{mind}s", "--baseline"] + pin, w)
            d["oneway_octet_64KiB_mbps"].append(r["cases"][0]["receiver_throughput_mbps"])
            d["tcp_stream_64KiB_mbps"].append(r["cases"][1]["receiver_throughput_mbps"])
            r = ours(None, ["latency", "--count", "20000", "--warmup", "2000", "--baseline"] + pin, w)
            d["ping_p50_us"].append(r["cases"][0]["latency_us"]["p50"])
            d["tcp_1B_p50_us"].append(r["cases"][1]["latency_us"]["p50"])
    results["ours_vs_tcp"] = vs_tcp
    results["our_wait_strategy"] = {w: sorted(v) for w, v in WAITED.items()}
    print()
    print(f"# {placement}; medians of {a.reps}; our client's --wait-strategy -> how it waited: " + ", ".join(f"{w} -> {'/'.join(sorted(v))}" for w, v in WAITED.items()))
    omni = lat["omniorb"]
    for w in waits:
        below = [r for r in results["throughput"] if r["ours"][w]["paired_ratio"] < 1.0]
        print(f"[{w}] throughput rows at or above the omniORB client (paired median): {len(results['throughput']) - len(below)} of {len(results['throughput'])}"
              + ("" if not below else "; below: " + ", ".join(
                  f"{r['mode']} {r['type']} {r['size'] // 1024}KiB {r['ours'][w]['paired_ratio']:.2f}"
                  + (f" (server busy {r['ours'][w]['server_busy']:.2f})" if r["ours"][w]["server_busy"] is not None else "") for r in below)))
    for w in waits:
        d = vs_tcp[w]
        pr, lo, hi = paired(list(zip(lat[w], omni)))
        print(f"[{w}] our client -> our server, oneway octet 64KiB vs bench tcp stream 64KiB: {med(d['oneway_octet_64KiB_mbps']) / med(d['tcp_stream_64KiB_mbps']):.2f}x  (target >= 0.9)")
        print(f"[{w}] ping p50, our client vs omniORB client, both -> omniORB server:        {med(lat[w]) / med(omni):.2f}x  (target <= 1.0; paired rounds {pr:.2f}, {lo:.2f}..{hi:.2f}, {len(omni)} rounds)")
        print(f"[{w}] ping p50, our client -> our server vs raw TCP 1-byte ping-pong:         {med(d['ping_p50_us']) / med(d['tcp_1B_p50_us']):.2f}x  (target <= 1.3)")
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(results, f, indent=1)
    print(f"\nwrote {a.out}")


if __name__ == "__main__":
    sys.exit(main())
