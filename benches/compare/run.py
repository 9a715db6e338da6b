#!/usr/bin/env python3
"""The issue-6 speed comparison, measured side by side in one run.

Against the omniORB bench server (scripts/orbs/omniorb), for each element
type, payload size and mode: the omniORB C++ bench client and iiopbench's
client, each `--reps` times, alternating, with the same placement (taskset:
server on --server-cpus, both clients on --client-cpus). Then our client
against our server vs `bench tcp` at 64 KiB, and ping p50 latency: ours vs
omniORB client on the omniORB server vs raw TCP 1-byte ping-pong.

Prints a table of medians and ratios (ours / theirs) and writes everything
to --out (JSON). Never quotes an absolute figure without its baseline.

    benches/compare/run.py [--quick] [--full] [--reps 3] [--out FILE]
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


WAIT = []  # --wait-strategy for our client, when given


def ours(cpus, args):
    out = run(taskset(cpus, [IIOPBENCH, "bench"] + args + WAIT + ["--quiet", "--json", "-"]))
    r = json.loads(out)
    WAITED.add(r["params"].get("wait_strategy", "?"))
    return r


WAITED = set()  # how our client waited (results' params.wait_strategy)


def throughput_pair(ior, cpus, ty, size, mode, total, mind, ours_first):
    """One measurement each, ours and theirs back to back (which goes first
    alternates between reps, so drift in the machine's load favours
    neither)."""
    op = {"oneway": "oneway", "twoway": "send"}[mode]

    def theirs():
        o = omni_client(ior, cpus, ["--mode", "throughput", "--op", op, "--type", ty, "--size", str(size), "--total", str(total), "--min-duration", str(mind)])
        return o.get("receiver_mbps") or o["mbps"]

    def mine():
        r = ours(cpus, ["throughput", "--target", ior, "--type", ty, "--size", str(size), "--mode", mode, "--total", str(total), "--min-duration", f"{mind}s"])
        c = r["cases"][0]
        if c["errors"]:
            raise RuntimeError(f"our client reported errors: {c['errors']}")
        return c.get("receiver_throughput_mbps") or c["throughput_mbps"]

    if ours_first:
        m = mine()
        return m, theirs()
    t = theirs()
    return mine(), t


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
    ap.add_argument("--wait-strategy", choices=["auto", "read", "reactor"], help="our client's --wait-strategy (default: its own, auto)")
    a = ap.parse_args()
    if a.wait_strategy:
        WAIT.extend(["--wait-strategy", a.wait_strategy])
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
    results = {"placement": placement, "reps": a.reps, "throughput": [], "latency": {}, "ours_vs_tcp": {}}
    srv = Server("omniorb", a.server_cpus)
    try:
        print(f"# our client vs the omniORB client, both on the omniORB server ({placement}); median of {a.reps}, receiver-side Mbit/s")
        print(f"{'mode':7} {'type':11} {'size':>7} {'ours':>9} {'omniORB':>9} {'ratio':>6}  {'paired (min..max)':>18}")
        for mode in ["oneway", "twoway"]:
            for ty in types:
                for size in sizes:
                    pairs = [throughput_pair(srv.ior_file, a.client_cpus, ty, size, mode, total, mind, i % 2 == 0) for i in range(a.reps)]
                    m = statistics.median(p[0] for p in pairs)
                    t = statistics.median(p[1] for p in pairs)
                    pr, lo, hi = paired(pairs)
                    results["throughput"].append({"mode": mode, "type": ty, "size": size, "ours_mbps": m, "omniorb_mbps": t, "ratio": m / t, "paired_ratio": pr, "paired_min": lo, "paired_max": hi, "samples": pairs})
                    print(f"{mode:7} {ty:11} {size:>7} {m:>9.0f} {t:>9.0f} {m / t:>6.2f}  {pr:>6.2f} ({lo:.2f}..{hi:.2f})", flush=True)
        # Ping latency: ours vs omniORB client on the omniORB server, in
        # short interleaved rounds (this machine's load drifts by more
        # than the difference being measured within a minute).
        mine, theirs = [], []
        for i in range(a.reps * 8):
            def o_run():
                o = omni_client(srv.ior_file, a.client_cpus, ["--mode", "latency", "--op", "ping", "--count", "5000", "--warmup", "500"])
                theirs.append(o["latency_us"]["p50"])

            def m_run():
                r = ours(a.client_cpus, ["latency", "--target", srv.ior_file, "--count", "5000", "--warmup", "500"])
                mine.append(r["cases"][0]["latency_us"]["p50"])

            for f in ((o_run, m_run) if i % 2 else (m_run, o_run)):
                f()
        results["latency"]["omniorb_server"] = {"ours_p50_us": mine, "omniorb_p50_us": theirs}
    finally:
        srv.stop()
    # Ours vs ours, against raw TCP in the same run and placement.
    pin = ["--client-cpus", a.client_cpus, "--server-cpus", a.server_cpus]
    tp, raw = [], []
    lat, rawlat, omni_omni = [], [], results["latency"]["omniorb_server"]["omniorb_p50_us"]
    for _ in range(a.reps):
        r = ours(None, ["throughput", "--type", "octet", "--size", "64KiB", "--mode", "oneway", "--total", str(total), "--min-duration", f"{mind}s", "--baseline"] + pin)
        tp.append(r["cases"][0]["receiver_throughput_mbps"])
        raw.append(r["cases"][1]["receiver_throughput_mbps"])
        r = ours(None, ["latency", "--count", "20000", "--warmup", "2000", "--baseline"] + pin)
        lat.append(r["cases"][0]["latency_us"]["p50"])
        rawlat.append(r["cases"][1]["latency_us"]["p50"])
    results["our_wait_strategy"] = sorted(WAITED)
    results["ours_vs_tcp"] = {"oneway_octet_64KiB_mbps": tp, "tcp_stream_64KiB_mbps": raw, "ping_p50_us": lat, "tcp_1B_p50_us": rawlat}
    med = statistics.median
    print()
    print(f"# {placement}; medians of {a.reps}; our client waited: {', '.join(sorted(WAITED))}")
    print(f"our client -> our server, oneway octet 64KiB vs bench tcp stream 64KiB: {med(tp) / med(raw):.2f}x  (target >= 0.9)")
    lat_pairs = list(zip(results['latency']['omniorb_server']['ours_p50_us'], omni_omni))
    pr, lo, hi = paired(lat_pairs)
    print(f"ping p50, our client vs omniORB client, both -> omniORB server:        {med(results['latency']['omniorb_server']['ours_p50_us']) / med(omni_omni):.2f}x  (target <= 1.0; paired rounds {pr:.2f}, {lo:.2f}..{hi:.2f}, {len(lat_pairs)} rounds)")
    print(f"ping p50, our client -> our server vs raw TCP 1-byte ping-pong:         {med(lat) / med(rawlat):.2f}x  (target <= 1.3)")
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(results, f, indent=1)
    print(f"\nwrote {a.out}")


if __name__ == "__main__":
    sys.exit(main())
