#!/usr/bin/env python3
"""Client against client, server against server, and both against raw TCP,
measured side by side in one run; writes docs/performance.md.

Every server that is installed here (ours, omniORB, JacORB, TAO) is
started on --server-cpus, and during each run only the one measured runs
(the others are paused with SIGSTOP: an idle JVM beside a server changed
how it read, see --idle-servers); every client (ours, the omniORB C++ client) runs on
--client-cpus (taskset), so placement is the same for every figure. For
each point (mode, type, size) the script takes --reps rounds, and more
(up to --max-reps) while some pair's rounds spread more than
--spread-limit; in each round every (client, server) pair runs once, a
server's runs together and omniORB's server in the middle, so that the
two runs a ratio divides ran close in time (this VM changes speed for
seconds at a time), in an order that rotates between rounds, so the
machine's drift favours none of them. Figures are the
receiving server's payload Mbit/s (bench.idl's get_stats), medians of the
rounds; ratios are medians of the per-round paired ratios, with their
range. Spread = (max - min) / median of a pair's rounds. Beside each
figure goes the server's CPU (seconds per second of the run, from
bench.idl's counters), since a server that keeps up with its client shows
its quality there rather than in Mbit/s.

Our server runs as --our-server says; `auto` (the default) is a thread
per connection that, after each message, polls up to 1 ms for the next
bytes before it blocks (`serve --server-model threads --spin-limit 1ms`)
when the server CPUs are apart from the client's, as they are here by
default: a server that sleeps between segments makes its client pay a
wake-up for each one. Otherwise it is the default reactor.

Tables, after a summary of which targets the run meets (our client
>= 1.0x omniORB's, our server >= 1.0x omniORB's, raw TCP >= the fastest
ORB pair, latency within 1.05x / 1.5x of raw TCP, ours -> ours over
omniORB -> omniORB: perfstruct >= 2x, char >= 10x, the rest >= 1.0x):
  1. client vs client: ours / the omniORB client, on each server;
  2. server vs server: each server / omniORB's, under the omniORB client
     (and under ours);
  3. both ours vs both omniORB;
  4. the physical limit: `iiopbench bench tcp` streams and iperf3 with the
     same write sizes, beside the fastest ORB pair at that size;
  5. latency: ping and echo 64 KiB p50, ours -> ours against the raw-TCP
     round trip that waits the same way, and ours vs the omniORB client on
     the omniORB server;
  6. buffered oneways: our client with `--oneway-buffer` (CORBA's
     SYNC_NONE with a byte limit, as TAO offers it; omniORB's client has
     no such mode) on each server, against the omniORB client's per-call
     oneways on that server and against omniORB -> omniORB; on our
     server, beside the raw-TCP stream that writes the same batches
     (--baseline). Its pairs run in the same rounds as the others but
     stay out of sections 1-4;
  7. coalesced oneways: our client with `--coalesce-oneways` (one write
     per oneway, as in sections 1-4, but Nagle on between them, as the
     raw stream and iperf3 send) on each server, against the same two
     baselines; it is one write per call, so section 4's fastest pair
     may be this client (`--coalesced off` leaves it out).

    benches/compare/run.py [--quick] [--reps 3] [--servers ours,omniorb,jacorb,tao]
                           [--doc docs/performance.md] [--json docs/perf/compare.json]
    benches/compare/run.py --from-json docs/perf/compare.json [--doc ...]
                           (no measuring: the report again from saved results)

Never quotes an absolute figure without its baseline next to it.
"""
import argparse, datetime, html, json, math, os, platform, shutil, signal, socket, statistics, subprocess, sys, tempfile, time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# The most optimised build (Cargo.toml's maxperf profile): comparison
# figures are taken with it, not with the quicker release build.
IIOPBENCH = os.path.join(ROOT, "target", "maxperf", "iiopbench")
ORBS = os.path.join(ROOT, "scripts", "orbs")
NAMES = {"ours": "iiopbench", "omniorb": "omniORB", "jacorb": "JacORB", "tao": "TAO"}
# Our client with --oneway-buffer: a client of its own in the pairs
# (oneway points only).
BUFFERED = "ours-buffered"
# Our client with --coalesce-oneways: one write per oneway, Nagle on
# between them (oneway points only; section 7).
COALESCED = "ours-coalesced"
CLIENT_NAMES = {COALESCED: "iiopbench --coalesce-oneways"}
med = statistics.median


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


def installed(orb):
    """Installed and built (or buildable) here, per scripts/orbs/<orb>/status."""
    if orb == "ours":
        return True
    status = os.path.join(ORBS, orb, "status")
    if not os.path.exists(status):
        return False
    out = subprocess.run([status], capture_output=True, text=True).stdout
    return "installed=yes" in out


class Server:
    """A bench.idl server: ours (`iiopbench serve`) or a vendor's
    (scripts/orbs/<orb>/start), pinned with taskset; ready when it prints
    `ready`."""

    def __init__(self, orb, cpus, ours_args=()):
        self.orb = orb
        self.ior_file = tempfile.mktemp(suffix=f".{orb}.ior")
        port = free_port()
        if orb == "ours":
            cmd = [IIOPBENCH, "serve", "--listen", f"127.0.0.1:{port}", "--ior-file", self.ior_file] + list(ours_args)
        else:
            cmd = [os.path.join(ORBS, orb, "start"), "--host", "127.0.0.1", "--port", str(port), "--ior-file", self.ior_file]
        # A session of its own, so that pause() and resume() reach every
        # process of it (a vendor script's JVM or ORB).
        self.p = subprocess.Popen(taskset(cpus, cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        deadline = time.time() + 90
        for line in self.p.stdout:
            if line.strip() == "ready":
                break
            if time.time() > deadline:
                self.stop()
                raise RuntimeError(f"{orb} server not ready after 90 s")
        else:
            raise RuntimeError(f"{orb} server exited: {self.p.stderr.read()[-2000:]}")

    def signal(self, sig):
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, sig)
            except ProcessLookupError:
                pass

    def pause(self):
        self.signal(signal.SIGSTOP)

    def resume(self):
        self.signal(signal.SIGCONT)

    def stop(self):
        self.resume()
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.p.kill()
        if os.path.exists(self.ior_file):
            os.unlink(self.ior_file)


def only(running, keep, idle):
    """Before a run against server `keep`: with `idle` "pause", every other
    server is stopped (SIGSTOP) and `keep` continued, so that nothing else
    runs on the server CPUs. An idle JVM there (JacORB's: JIT and GC
    threads) took CPU from whichever server ran: omniORB's, which leaves
    CPU idle, read later and its client's kernel joined 1.4-5.4 chars
    calls per segment, a cheaper stream, while ours, which polls, read
    every segment: 8 KiB oneways measured 0.90-1.01x of omniORB's server
    with the JVM there and 0.91-1.06x without it."""
    if idle != "pause":
        return
    for name, srv in running.items():
        if name != keep:
            srv.pause()
    running[keep].resume()


def data_segments():
    """TCP segments with new data sent on this machine so far (TcpExt
    TCPOrigDataSent), None where the kernel does not say."""
    try:
        lines = [l.split() for l in open("/proc/net/netstat") if l.startswith("TcpExt:")]
        return int(dict(zip(lines[0][1:], lines[1][1:]))["TCPOrigDataSent"])
    except (OSError, IndexError, KeyError, ValueError):
        return None


def per_segment(calls, before, after):
    """Calls per data segment over a run, None when unknown."""
    if calls is None or before is None or after is None or after <= before:
        return None
    return calls / (after - before)


def share(cpu_seconds, seconds):
    """A server's CPU seconds per second of receiving, None if unknown."""
    return cpu_seconds / seconds if cpu_seconds is not None and seconds else None


class Clients:
    def __init__(self, a):
        self.a = a
        self.waited = set()

    def omniorb_throughput(self, ior, mode, ty, size):
        """(Mbit/s, the server's CPU seconds per second or None, calls, None)."""
        op = {"oneway": "oneway", "twoway": "send"}[mode]
        o = last_json(run(taskset(self.a.client_cpus, [os.path.join(ORBS, "omniorb", "client"), "--target", ior, "--mode", "throughput", "--op", op, "--type", ty, "--size", str(size), "--total", str(self.a.total), "--min-duration", str(self.a.min_duration)])))
        return o.get("receiver_mbps") or o["mbps"], share(o.get("server_cpu_seconds"), o.get("receiver_seconds") or o.get("seconds")), o.get("calls"), None

    def ours(self, args):
        # One run per call: this script interleaves its own rounds.
        out = run(taskset(self.a.client_cpus, [IIOPBENCH, "bench"] + args + ["--runs", "1", "--wait-strategy", self.a.wait_strategy, "--quiet", "--json", "-"]))
        r = json.loads(out)
        self.waited.add(r["params"].get("wait_strategy", "?"))
        return r

    def ours_throughput(self, ior, mode, ty, size, extra=()):
        """As omniorb_throughput, and last the raw-TCP baseline beside the
        point (`--baseline` in `extra`): the physical limit (`limit`; a
        file of schema 4 or older calls it `baseline`), else None."""
        # --server-cpus says where the external server runs, so the
        # results record the placement (and auto's wait strategy follows it).
        r = self.ours(["throughput", "--target", ior, "--server-cpus", self.a.server_cpus, "--type", ty, "--size", str(size), "--mode", mode, "--total", str(self.a.total), "--min-duration", f"{self.a.min_duration}s"] + list(extra))
        c = r["cases"][0]
        if c["errors"]:
            raise RuntimeError(f"our client reported {c['errors']} errors against {ior}")
        secs = (c.get("extra") or {}).get("receiver_seconds") or c.get("seconds")
        return c.get("receiver_throughput_mbps") or c["throughput_mbps"], share((c.get("cpu") or {}).get("server_s"), secs), c.get("calls"), c.get("limit") or c.get("baseline")

    def throughput(self, client, ior, mode, ty, size, beside_raw=False):
        """(Mbit/s, the server's CPU share or None, oneway calls per TCP
        data segment or None, the raw baseline or None): nothing else sends
        on this machine while a run lasts, so the machine's count of data
        segments is the run's (replies would count too: twoways get None;
        so would the raw stream of a run `beside_raw`, our client's
        `--baseline`)."""
        if client == "omniorb":
            f = self.omniorb_throughput
        else:
            extra = {BUFFERED: ["--oneway-buffer", self.a.oneway_buffer], COALESCED: ["--coalesce-oneways"]}.get(client, [])
            f = lambda *p: self.ours_throughput(*p, extra=extra + (["--baseline"] if beside_raw else []))
        before = data_segments()
        mbps, cpu, calls, raw = f(ior, mode, ty, size)
        per = per_segment(calls, before, data_segments()) if mode == "oneway" and not beside_raw else None
        return mbps, cpu, per, raw


def cpu_list(spec):
    """CPUs of a taskset-style list (`1`, `0,2`, `2-3`)."""
    out = set()
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def our_server_args(a):
    """`iiopbench serve` flags for --our-server."""
    kind = a.our_server
    if kind == "auto":
        kind = "threads-spin" if not cpu_list(a.server_cpus) & cpu_list(a.client_cpus) else "reactor"
    return kind, {"reactor": [], "threads": ["--server-model", "threads"],
                  "threads-spin": ["--server-model", "threads", "--spin-limit", "1ms"]}[kind]


def rotated(rep, items):
    k = rep % len(items)
    return items[k:] + items[:k]


def round_order(rep, servers, clients):
    """The (client, server) runs of round `rep` of one point. A ratio
    divides two runs, and this VM changes speed for seconds at a time
    (one 8 KiB stream run after another: lag-1 correlation 0.7, gone by
    lag 10), so the runs a ratio divides go as close together as they
    can: a server's runs together (the client ratios, at most 3 runs
    apart), omniORB's server in the middle (every server ratio at most
    two servers away). Rounds rotate the other servers and the clients,
    so that no run always goes first; a rotation of the whole list would
    put one pair's two runs at the two ends of some round."""
    others = rotated(rep, [s for s in servers if s != "omniorb"])
    if "omniorb" in servers:
        others.insert(len(others) // 2, "omniorb")
    return [(c, s) for s in others for c in rotated(rep, clients)]


def per_segment_note(d):
    """`; N per segment` for a section 4 entry that counted its frames
    per TCP data segment (files before schema 11 did not)."""
    per = d.get("calls_per_segment")
    return f"; {per:.1f} per segment" if per else ""


def summary(ratios):
    """The median of some ratios and their range, None for none."""
    rs = sorted(ratios)
    if not rs:
        return None
    return {"median": med(rs), "min": rs[0], "max": rs[-1]}


def paired(xs, ys):
    """Median of the per-round ratios x/y, and their range."""
    return summary(x / y for x, y in zip(xs, ys) if y)


def spread(xs):
    m = med(xs)
    return (max(xs) - min(xs)) / m if m else None


def throughput_row(mode, ty, size, servers, samples, cpu, segs, buffered, raw_batched):
    """One point of the tables from its rounds: per "client>server" pair
    the receiver's Mbit/s (`samples`), server CPU shares (`cpu`) and
    calls per segment (`segs`), one value per round; `buffered`: our
    buffering client ran too; `raw_batched`: the raw streams measured
    beside it (`--baseline` results)."""
    row = {"mode": mode, "type": ty, "size": size, "rounds": len(next(iter(samples.values()), [])), "samples": samples, "server_cpu": cpu, "calls_per_segment": segs,
           "pairs": {k: {"median": med(v), "spread": spread(v)} for k, v in samples.items()},
           "client_ratio": {s: paired(samples[f"ours>{s}"], samples[f"omniorb>{s}"]) for s in servers},
           "server_ratio": {c: {s: paired(samples[f"{c}>{s}"], samples[f"{c}>omniorb"]) for s in servers if s != "omniorb"} if "omniorb" in servers else {} for c in ["ours", "omniorb"]},
           "both_ratio": paired(samples["ours>ours"], samples["omniorb>omniorb"]) if "omniorb" in servers and "ours" in servers else None}
    if buffered:
        # Each server under our buffering client / under the omniORB
        # client (per call), and against omniORB -> omniORB.
        row["buffered_ratio"] = {s: paired(samples[f"{BUFFERED}>{s}"], samples[f"omniorb>{s}"]) for s in servers}
        if raw_batched:
            # Our buffering pair against the raw stream written in the
            # same batches, slice by slice.
            row["buffered_vs_raw"] = {"ratio": summary(b["ratio"] for b in raw_batched), "raw_mbps": med(b["baseline_value"] for b in raw_batched)}
        if "omniorb" in servers:
            row["buffered_vs_omniorb"] = {s: paired(samples[f"{BUFFERED}>{s}"], samples["omniorb>omniorb"]) for s in servers}
    if any(k.startswith(COALESCED + ">") for k in samples):
        # The same for our coalescing client (section 7).
        row["coalesced_ratio"] = {s: paired(samples[f"{COALESCED}>{s}"], samples[f"omniorb>{s}"]) for s in servers}
        if "omniorb" in servers:
            row["coalesced_vs_omniorb"] = {s: paired(samples[f"{COALESCED}>{s}"], samples["omniorb>omniorb"]) for s in servers}
    return row


def iperf3(size, secs, a):
    """iperf3's loopback figure with SIZE-byte writes, or None when absent."""
    if not shutil.which("iperf3"):
        return None
    port = free_port()
    srv = subprocess.Popen(taskset(a.server_cpus, ["iperf3", "-s", "-1", "-p", str(port)]), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.3)  # iperf3 -s prints nothing machine-readable when ready
        out = run(taskset(a.client_cpus, ["iperf3", "-c", "127.0.0.1", "-p", str(port), "-l", str(size), "-t", str(secs), "-J"]), timeout=60)
        return json.loads(out)["end"]["sum_received"]["bits_per_second"] / 1e6
    finally:
        if srv.poll() is None:
            srv.kill()
        srv.wait()


def machine():
    model = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True).stdout.strip()
    return {"cpu": model, "cpus": os.cpu_count(), "kernel": platform.release(), "commit": commit + ("+dirty" if dirty else ""), "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


# ---------------------------------------------------------------- figures

def svg_bars(title, labels, series, path, ref=1.0):
    """Grouped horizontal bars of ratios, one group per label, one bar per
    series; a vertical line at `ref`. Plain SVG, no plotting library."""
    colors = ["#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377"]
    names = list(series)
    bar, gap, left, width = 9, 8, 210, 420
    vals = [v for s in series.values() for v in s if v is not None]
    top = max(vals + [ref]) * 1.1 if vals else 2 * ref
    group = bar * len(names) + gap
    height = 50 + group * len(labels) + 20 * len(names)
    x = lambda v: left + width * v / top
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 60}" height="{height}" font-family="sans-serif" font-size="11">',
           f'<text x="10" y="18" font-size="13" font-weight="bold">{html.escape(title)}</text>']
    y = 34
    for i, label in enumerate(labels):
        out.append(f'<text x="{left - 6}" y="{y + group / 2}" text-anchor="end">{html.escape(label)}</text>')
        for j, n in enumerate(names):
            v = series[n][i]
            if v is None:
                continue
            out.append(f'<rect x="{left}" y="{y + j * bar}" width="{x(v) - left:.1f}" height="{bar - 1}" fill="{colors[j % len(colors)]}"/>')
            out.append(f'<text x="{x(v) + 3:.1f}" y="{y + j * bar + bar - 2}" font-size="9">{v:.2f}</text>')
        y += group
    out.append(f'<line x1="{x(ref):.1f}" y1="28" x2="{x(ref):.1f}" y2="{y}" stroke="#000" stroke-dasharray="3,3"/>')
    out.append(f'<text x="{x(ref):.1f}" y="{y + 12}" text-anchor="middle">{ref:g}x</text>')
    for j, n in enumerate(names):
        yy = y + 28 + 16 * j
        out.append(f'<rect x="{left}" y="{yy - 9}" width="10" height="10" fill="{colors[j % len(colors)]}"/><text x="{left + 14}" y="{yy}">{html.escape(n)}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


# ---------------------------------------------------------------- document

def ratio_text(r):
    return "-" if r is None else f"{r['median']:.2f}x [{r['min']:.2f}–{r['max']:.2f}]"


def client_row(r, servers, client, key, both, note):
    """One row of sections 6 and 7: `client` (our buffering or coalescing
    one) on each server, Mbit/s with `note(server)` after it and its
    ratio to the omniORB client there (`<key>_ratio`); with `both`, its
    pair on our server over omniORB -> omniORB (`<key>_vs_omniorb`)."""
    cells = []
    for s in servers:
        p = r["pairs"].get(f"{client}>{s}")
        cells.append("- | -" if not p else f"{p['median']:.0f}{note(s)} | {ratio_text(r[key + '_ratio'].get(s))}")
    line = f"| {r['mode']} {r['type']} {r['size'] // 1024} KiB | " + " | ".join(cells) + " |"
    if both:
        line += f" {ratio_text((r.get(key + '_vs_omniorb') or {}).get('ours'))} |"
    return line


def measured(row, what, pair):
    """A pair's per-round values of `what` ("calls_per_segment",
    "server_cpu") that were measured (a round without one holds None)."""
    return [x for x in (row.get(what) or {}).get(pair) or [] if x is not None]


def per_segment_text(row, client, server):
    """` [N/seg]`: the pair's median calls per TCP segment, or nothing."""
    segs = measured(row, "calls_per_segment", f"{client}>{server}")
    return f" [{med(segs):.1f}/seg]" if segs else ""


def cpu_text(row, client, server):
    """` (0.42)`: the median server CPU share of a pair's rounds, if known."""
    xs = measured(row, "server_cpu", f"{client}>{server}")
    return f" ({med(xs):.2f})" if xs else ""


def segment_table(rows, servers):
    """Lines of the oneway calls-per-segment table (empty when unmeasured)."""
    ow = [r for r in rows if r["mode"] == "oneway" and any(x for v in (r.get("calls_per_segment") or {}).values() for x in v)]
    if not ow:
        return []
    L = ["Oneway calls per TCP segment (the medians of each pair's rounds: calls over the machine's data segments while the run lasted). A sender's kernel joins messages queued behind a segment not yet sent, so above 1 a segment carried several calls and each call paid less of a send; how many depends on how promptly the receiver reads and acknowledges, and at small sizes Mbit/s follow it.\n"]
    L.append("| case | " + " | ".join(f"{NAMES[s]} server: omniORB client | ours" for s in servers) + " |")
    L.append("|---|" + "---|---|" * len(servers))
    for r in ow:
        cells = []
        for s in servers:
            for c in ["omniorb", "ours"]:
                xs = measured(r, "calls_per_segment", f"{c}>{s}")
                cells.append(f"{med(xs):.1f}" if xs else "-")
        L.append(f"| {r['type']} {r['size'] // 1024} KiB | " + " | ".join(cells) + " |")
    L.append("")
    return L


def flags_of(a):
    """The point-choosing flags of an invocation, as the report quotes them."""
    return (" --quick" if a.quick else "") + (f" --types {a.types}" if a.types else "") + (f" --sizes {a.sizes}" if a.sizes else "")


def schema_version(res):
    """N of a results file's `iiopbench-compare/N` (0 when unreadable)."""
    try:
        return int(str(res.get("schema", "")).rsplit("/", 1)[1])
    except (IndexError, ValueError):
        return 0


def run_settings(res, a):
    """How the results were taken: from the results themselves (schema 8
    on), else from this invocation's arguments (older files carry only
    some of it)."""
    run = dict(res.get("run") or {})
    run.setdefault("flags", flags_of(a))
    run.setdefault("total", a.total)
    run.setdefault("min_duration", a.min_duration)
    run.setdefault("wait_strategy", a.wait_strategy)
    pl = res.get("placement") or {}
    run.setdefault("server_cpus", pl.get("server_cpus", a.server_cpus))
    run.setdefault("client_cpus", pl.get("client_cpus", a.client_cpus))
    run.setdefault("reps", res.get("reps", a.reps))
    run.setdefault("max_reps", res.get("max_reps", run["reps"]))
    run.setdefault("spread_limit", res.get("spread_limit", a.spread_limit))
    # Before schema 9 every server ran throughout.
    run.setdefault("idle_servers", "run" if schema_version(res) < 9 else a.idle_servers)
    return run


# The targets the report checks itself against: ours -> ours over
# omniORB -> omniORB, per element type (any other type: DEFAULT_BOTH).
BOTH_TARGETS = {"perfstruct": 2.0, "char": 10.0}
# Frames shorter than this fit one loopback segment (MSS 65 483), so Nagle
# decides whether they are joined: section 4 measures them written apart
# too (`bench tcp --stream-writes separate`), the limit of one write per
# call with TCP_NODELAY.
SEPARATE_BELOW = 65536
DEFAULT_BOTH = 1.0
PING_TARGET, ECHO_TARGET = 1.05, 1.5
# Per mode, the raw-TCP run that makes one call the way section 3's
# clients do: its key in a section 4 entry, its name there, what it
# moved, and the client it bounds.
ONE_CALL = {
    "oneway": {"key": "separate", "name": "separate writes",
               "raw": "raw TCP written a frame per write with Nagle off",
               "column": "for oneways shorter than a segment, what raw TCP moved written the same way, a frame per write with Nagle off (section 4's separate writes)",
               "client": "writes each oneway when it is made with TCP_NODELAY"},
    "twoway": {"key": "ack", "name": "acks",
               "raw": "raw TCP's round trips of a request of that size and an empty reply, both sides polling,",
               "column": "for twoways, what raw TCP moved in round trips of a request of the same size and an empty reply, one at a time, both sides polling (section 4's acks)",
               "client": "waits for each twoway's reply before the next call"},
}


def case(r):
    """A throughput row's label in prose and figures: `oneway char 1KiB`."""
    return f"{r['mode']} {r['type']} {r['size'] // 1024}KiB"


def targets(res):
    """Lines of the targets table: for each target, how many of its rows
    meet it in these results and which fall short (worst first)."""
    rows, servers = res["throughput"], res["servers"]
    out = []

    def line(what, checks, ratios=True):
        """checks: (label, value, limit, higher_is_better); value None: not
        measured, else a ratio summary ({median, min, max} of the rounds)
        or a lone number. `ratios`: values are ratios, printed after the
        label (else the label says all)."""
        checks = [c for c in checks if c[1] is not None]
        if not checks:
            return
        mid = lambda v: v["median"] if isinstance(v, dict) else v
        fails = lambda x, lim, hi: x < lim if hi else x > lim
        short = [c for c in checks if fails(mid(c[1]), c[2], c[3])]
        # Worst first: by ratio to the limit, or (spreads, which are
        # already relative) by how far over it.
        short.sort(key=lambda c: (mid(c[1]) / c[2] if c[3] else c[2] / mid(c[1])) if ratios else c[2] - c[1])
        # Two places, or three where two would print the limit itself.
        fmt = lambda v, lim: f" {v:.3f}x" if f"{v:.2f}" == f"{lim:.2f}" else f" {v:.2f}x"

        def listed(cs):
            return ", ".join(lbl + (fmt(mid(v), lim) if ratios else "") for lbl, v, lim, _ in cs[:6]) + (f", and {len(cs) - 6} more" if len(cs) > 6 else "")
        # Short in every round: even the round nearest the target missed
        # it. The other short rows had a round that met it: noise can
        # explain them, these it cannot.
        ranged = [c for c in short if isinstance(c[1], dict)]
        every = [c for c in ranged if fails(c[1]["max"] if c[3] else c[1]["min"], c[2], c[3])]
        verdict = "yes" if not short else "no"
        steady = "n/a" if not ranged else f"{len(every)} of {len(short)}" + (f": {listed(every)}" if every else "")
        out.append(f"| {what} | {verdict} | {len(checks) - len(short)} of {len(checks)} | {listed(short) or '-'} | {steady if short else '-'} |")

    line("our client ≥ 1.0x the omniORB client (section 1)",
         [(f"{case(r)} on {NAMES[s]}", r["client_ratio"].get(s), 1.0, True) for r in rows for s in servers])
    # (row label, our client's spread, the omniORB client's, our client's
    # ratio to it or None) where both spreads were measured.
    spreads = [(f"{case(r)} on {NAMES[s]}", u["spread"], o["spread"], (r["client_ratio"].get(s) or {}).get("median"))
               for r in rows for s in servers
               for u, o in [(r["pairs"].get(f"ours>{s}"), r["pairs"].get(f"omniorb>{s}"))]
               if u and o and u["spread"] is not None and o["spread"] is not None]
    line("our client's spread no wider than the omniORB client's (section 1)",
         [(f"{lbl} ({u:.0%} vs {o:.0%})", u, o, False) for lbl, u, o, _ in spreads], ratios=False)
    if "omniorb" in servers and "ours" in servers:
        line("our server ≥ 1.0x omniORB's, under the omniORB client (section 2)",
             [(case(r), r["server_ratio"].get("omniorb", {}).get("ours"), 1.0, True) for r in rows])
    if "tao" in servers and "ours" in servers:
        line("our server ≥ 1.0x TAO's, under the omniORB client",
             [(case(r), paired(r["samples"]["omniorb>ours"], r["samples"]["omniorb>tao"]), 1.0, True) for r in rows])
    line("raw TCP at least as fast as the fastest ORB pair: ORB / bench tcp ≤ 1.0x (section 4)",
         [(f"{t['size'] // 1024} KiB", t["fastest"]["ratio"], 1.0, False) for t in res["tcp"] if t.get("fastest")])
    vs = (res.get("latency") or {}).get("vs_tcp") or {}
    for name, limit in [("ping", PING_TARGET), ("echo 64 KiB", ECHO_TARGET)]:
        sl = (vs.get(name) or {}).get("sliced") or []
        if sl:
            line(f"{name} p50 ≤ {limit}x raw TCP waiting the same way (section 5, sliced)", [(name, summary(sl), limit, False)])
    # Rows of sections 3 and 7 whose target raw TCP cannot reach here.
    past, past_joined = [], []
    if "omniorb" in servers and "ours" in servers:
        past, past_joined = beyond_one_call(res, rows), beyond_joined(res, rows)

        def both(r, v, beyond=()):
            marked = any(lbl == target_label(r) for lbl, *_ in beyond)
            return (target_label(r, marked), v, BOTH_TARGETS.get(r["type"], DEFAULT_BOTH), True)
        goal = ", ".join(f"{t} ≥ {x:g}x" for t, x in BOTH_TARGETS.items()) + f", any other type ≥ {DEFAULT_BOTH:g}x"
        line(f"ours → ours / omniORB → omniORB, one write per call: {goal} (section 3)",
             [both(r, r.get("both_ratio"), past) for r in rows])
        line("the same, our client buffering oneways (section 6)",
             [both(r, (r.get("buffered_vs_omniorb") or {}).get("ours")) for r in rows if r.get("buffered_vs_omniorb")])
        line("the same, our client coalescing oneways: one write per call, Nagle on between them (section 7)",
             [both(r, (r.get("coalesced_vs_omniorb") or {}).get("ours"), past_joined) for r in rows if r.get("coalesced_vs_omniorb")])
    if not out:
        return []
    paras = [spread_note([(u, o, x) for _, u, o, x in spreads])]
    if past:
        ways = [w for m, w in ONE_CALL.items() if any(m == pm for *_, pm in past)]
        paras.append(beyond_paragraph(
            "Beyond one call at a time", 3, "the same way (section 4's " + " and ".join(w["name"] for w in ways), past, lambda m: ONE_CALL[m]["raw"],
            "No client that " + " or ".join(w["client"] for w in ways)
            + " can meet them here" + ("; sections 6 and 7 show our client meeting the oneway ones when it may join oneways." if ONE_CALL["oneway"] in ways else ".")))
    if past_joined:
        paras.append(beyond_paragraph(
            "Beyond joining oneways as the kernel does", 7, "written that way (section 4's stream", past_joined, lambda _: COALESCED_RAW,
            "No client that writes each oneway when it is made, Nagle on or off, can meet them here; section 6's buffering client, which writes many oneways at once, is not bound so."))
    joined = joined_by_a_busy_server(rows, servers)
    if joined:
        paras.append(
            "Where a busy server joined the client's calls: "
            + "; ".join(f"{lbl} against {NAMES[s]}'s server ({v:.2f}x): the omniORB client's segments carried {theirs:.1f} calls each to {NAMES[s]}'s server, busy {cpu:.2f} of the run, and {ours:.1f} to ours" for lbl, s, v, theirs, ours, cpu in joined)
            + ". A server that reads late lets data wait in the connection, and the client's kernel joins the sends queued meanwhile into large segments, so each call pays a fraction of a segment's sending and receiving; ours reads each segment as it arrives, and each of the client's sends pays a whole segment. Where the omniORB client is the bottleneck (its CPU, not the server's), the other server's lateness makes the client's calls cheaper: such a row says how the two servers' reading shapes that client's sends, not which server does more per call.")
    note = "\n\n".join(p for p in paras if p)
    marked = ""
    if past or past_joined:
        marked = f" Marked \"{BEYOND_MARK.lstrip(', ')}\": a row whose target asks for more than raw TCP moved on this machine written the way that row's client writes (beneath the table): no client that writes so can meet it here, whatever its ORB."
    return (["## Targets: what this run shows\n",
             "Each target against the rows of this run that it covers (medians of paired ratios, as in the sections below); a row short of its target is listed, worst first. Short in every round: of the short rows, those whose every round missed the target (for ratios, even the round nearest it; their ranges are in the sections below); each other short row had a round that met it, so this run cannot tell it from the machine's noise." + marked + "\n",
             "| target | holds | rows that meet it | short of it | short in every round |", "|---|---|---|---|---|"] + out + [""] + ([note, ""] if note else []))


def beyond_paragraph(lead, section, source, past, raw, tail):
    """The note beneath the targets table on `past`, rows of section
    `section` whose target raw TCP did not reach written as their client
    writes (`source`: how, opening the bracket that names section 4's
    run; `raw(mode)`: that run in prose), ending with `tail`."""
    n = len(past)
    return (f"{lead}: {n} of the rows short of section {section}'s target {'asks' if n == 1 else 'ask'} for more than raw TCP moved {source}, its fastest run): "
            + ", ".join(f"{lbl} needs {need:.0f} Mbit/s, {raw(m)} moved at most {most:.0f}" for lbl, need, most, m in past)
            + ". " + tail)


def one_call_limits(res):
    """Per (mode, size), what raw TCP moved the way section 3's clients
    make one call: oneways, section 4's separate-writes stream (results
    from `/13` on); twoways, its ack round trips (from `/14` on)."""
    return {(mode, t["size"]): t[w["key"]] for t in res.get("tcp") or [] for mode, w in ONE_CALL.items() if t.get(w["key"])}


# How the targets table marks a row whose target asks for more than raw
# TCP moved written the way that row's client writes.
BEYOND_MARK = ", more than raw TCP moved"
# What section 7's rows are bounded by: our coalescing client writes each
# oneway when it is made with Nagle on between them, as section 4's stream
# writes frames shorter than a segment.
COALESCED_RAW = "raw TCP written a frame per write with Nagle on"


def target_label(r, marked=False):
    """A row of sections 3, 6 and 7 with its target: `oneway char 1KiB
    (≥ 10x)`; `marked`: with [`BEYOND_MARK`] in the brackets."""
    return f"{case(r)} (≥ {BOTH_TARGETS.get(r['type'], DEFAULT_BOTH):g}x{BEYOND_MARK if marked else ''})"


def beyond_one_call(res, rows):
    """Rows of section 3 short of their target whose target asks for more
    than raw TCP moved the same way (a oneway per write with TCP_NODELAY,
    a twoway per round trip): see [`beyond_raw`]."""
    return beyond_raw(rows, one_call_limits(res), lambda r: r.get("both_ratio"))


def beyond_joined(res, rows):
    """Rows of section 7 short of their target whose target asks for more
    than raw TCP moved written as our coalescing client writes (a oneway
    per write with Nagle on: section 4's stream, for frames shorter than a
    segment): see [`beyond_raw`]."""
    stream = {("oneway", t["size"]): t for t in res.get("tcp") or [] if t["size"] < SEPARATE_BELOW and t.get("samples")}
    return beyond_raw(rows, stream, lambda r: (r.get("coalesced_vs_omniorb") or {}).get("ours"))


def beyond_raw(rows, ceil, ratio):
    """Rows whose `ratio` (ours over omniORB -> omniORB) is short of their
    target while the target asks for more than the raw-TCP run `ceil` has
    for their (mode, size) moved in any run: (label, Mbit/s the target
    needs, the most raw TCP moved so, mode)."""
    out = []
    for r in rows:
        v = ratio(r)
        c, o = ceil.get((r["mode"], r["size"])), r["pairs"].get("omniorb>omniorb")
        if not (c and o and v):
            continue
        limit = BOTH_TARGETS.get(r["type"], DEFAULT_BOTH)
        need, most = limit * o["median"], max(c["samples"])
        if v["median"] < limit and need > most:
            out.append((target_label(r), need, most, r["mode"]))
    return out


# A server "joined" the client's calls on a row where its segments carried
# at least this many times as many calls as ours did, and at least
# JOINED_AT_LEAST each, while it was busy at least BUSY of the run.
JOINED_TIMES, JOINED_AT_LEAST, BUSY = 3.0, 2.0, 0.9


def joined_by_a_busy_server(rows, servers):
    """Rows where our server is short of another under the omniORB client
    (section 2's targets) while that server, busy, received the client's
    oneways joined into far fewer segments than ours did: (label, server,
    our ratio to it, its calls per segment, ours, its CPU share)."""
    out = []
    for r in rows:
        for s in servers:
            if s == "ours" or f"omniorb>{s}" not in r["samples"] or "omniorb>ours" not in r["samples"]:
                continue
            v = paired(r["samples"]["omniorb>ours"], r["samples"][f"omniorb>{s}"])
            theirs, ours = (measured(r, "calls_per_segment", f"omniorb>{k}") for k in (s, "ours"))
            busy = measured(r, "server_cpu", f"omniorb>{s}")
            if not (v and theirs and ours and busy) or v["median"] >= 1.0:
                continue
            t, o, c = med(theirs), med(ours), med(busy)
            if t >= JOINED_AT_LEAST and t >= JOINED_TIMES * o and c >= BUSY:
                out.append((case(r), s, v["median"], t, o, c))
    return out


def sign_test(k, n):
    """One-sided sign test: the chance of k or fewer successes in n fair
    coin tosses."""
    return sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n


# Our client "about as fast" as the omniORB client on a row: at most this
# many times its rate (the spread note splits the rows there).
ALIKE_RATE = 1.25


def spread_note(spreads):
    """The spread rows taken together. One row's spread is (max − min) /
    median of 3–6 rounds, and this VM changes speed for seconds at a time,
    so whether one client's rows come out narrower is close to a coin toss
    even when the clients are alike: the sign test says whether ours are
    wider more often than chance would make them. `spreads`: (ours,
    omniORB's, our client's rate over omniORB's or None) per row, as the
    targets table has them; rows where both are 0 say nothing either way.
    Then the same split by that rate: a client several times faster than
    the other leaves more of each run to the kernel's copies, which the
    VM's speed phases move (the raw streams of section 4 spread as
    widely), while the slower one is held by its own CPU."""
    rows = [(u, o, x) for u, o, x in spreads if u or o]
    if not rows:
        return None

    def count(rs):
        n, k = len(rs), sum(1 for u, o, _ in rs if u <= o)
        return k, n, sign_test(k, n)

    k, n, p = count(rows)
    ratios = [u / o for u, o, _ in rows if o]
    out = (f"Spreads taken together: ours no wider than the omniORB client's on {k} of {n} rows"
           + (f"; ours / omniORB's spread, median {med(ratios):.2f}x" if ratios else "")
           + f". Were the two clients alike, {k} or fewer of {n} would come out no wider with probability {p:.2f} (one-sided sign test): "
           + ("so ours vary more than the omniORB client's." if p < 0.05 else "no evidence that ours vary more than the omniORB client's."))
    alike = [r for r in rows if r[2] is not None and r[2] <= ALIKE_RATE]
    faster = [r for r in rows if r[2] is not None and r[2] > ALIKE_RATE]
    if alike and faster:
        (k1, n1, p1), (k2, n2, p2) = count(alike), count(faster)
        out += (f" By rate: where our client moved at most {ALIKE_RATE:g}x the omniORB client's Mbit/s, ours no wider on {k1} of {n1} (probability {p1:.2f}); "
                f"where it moved more, on {k2} of {n2} (probability {p2:.2f}): a client that outruns the other spends more of each run in the kernel's copies, which this VM's speed phases move (section 4's raw streams, which do nothing else, spread as well).")
    return out


def perf_dir(doc):
    """perf/ beside the report: its figures, and by default its results."""
    return os.path.join(os.path.dirname(os.path.abspath(doc)), "perf")


def default_json(doc):
    """Where a run's results go unless --json says: perf/compare.json
    beside the report, with its figures, so whoever has the report has
    the data behind it (and can render it again)."""
    return os.path.join(perf_dir(doc), "compare.json")


def write_doc(res, a, doc, data=None, rerendered=False):
    """The Markdown report and its figures, from results alone (`a` only
    fills in settings that results older than schema 8 did not record).
    `data`: the results file (written by this run, or `rerendered` from
    it), named in the report relative to it."""
    figdir = perf_dir(doc)
    os.makedirs(figdir, exist_ok=True)
    m = res["machine"]
    servers = res["servers"]
    run = run_settings(res, a)
    L = []
    L.append("# Performance: iiopbench against omniORB, JacORB, TAO and raw TCP\n")
    where = os.path.relpath(os.path.abspath(data), os.path.dirname(os.path.abspath(doc))) if data else None
    L.append("Generated by `benches/compare/run.py" + run["flags"] + "`; do not edit by hand — rerun it"
             + (f" (this copy re-rendered from `{where}`, without measuring again)" if rerendered and where else "") + "."
             + (f" The results behind every table: [`{where}`]({where}) (JSON, `{res.get('schema')}`, docs/results-schema.md); `run.py --from-json` renders this report again from them." if where else "") + "\n")
    L.append(f"- commit `{m['commit']}` (what was measured), {m['date']}; {m['cpus']} CPUs ({m['cpu']}), Linux {m['kernel']}")
    L.append(f"- placement: every server on CPUs {run['server_cpus']}, every client on CPUs {run['client_cpus']} (taskset); servers: " + ", ".join(NAMES[s] for s in servers)
             + ("; during each run every other server is paused (SIGSTOP), so nothing else runs on the server CPUs" if run["idle_servers"] == "pause"
                else "; every server runs throughout, idle ones beside the one measured"))
    extra = ""
    if run["max_reps"] > run["reps"]:
        n_more = sum(1 for r in res["throughput"] if r.get("rounds", run["reps"]) > run["reps"])
        extra = (f" (up to {run['max_reps']} where some pair's rounds spread more than {run['spread_limit']:.0%}, as this VM switches speed for seconds at a time:"
                 f" {n_more} of {len(res['throughput'])} points took more)")
    # Files before the order was recorded ran the whole list rotated.
    order = {"server-blocks": ", a server's runs together and omniORB's server in the middle (the two runs of a ratio close in time), in rotating order"}.get(run.get("order"), " in rotating order")
    L.append(f"- {run['reps']} rounds per point{extra}, each (client, server) pair once per round{order}; {run['total'] >> 20} MiB and at least {run['min_duration']} s per run")
    L.append(f"- our client's wait strategy: `--wait-strategy {run['wait_strategy']}` (ran as: {', '.join(sorted(res['our_wait']))})")
    ours = res.get("our_server") or {}
    if ours:
        how = {"reactor": "the default reactor", "threads": "a thread per connection",
               "threads-spin": "a thread per connection that, after each message, polls up to 1 ms for the next bytes before it blocks (its CPU is its own; the CPU figures of section 2 show what that costs)"}[ours["kind"]]
        L.append(f"- our server: `{' '.join(['iiopbench', 'serve'] + ours['serve_args'])}`: {how}")
    L.append("- Mbit/s: payload bytes the receiving server counted (bench.idl get_stats) per second; ratios: median of per-round paired ratios [min–max]; spread: (max − min) / median of one pair's rounds\n")
    rows = res["throughput"]
    L.extend(targets(res))

    def fig_rows():
        return [case(r) for r in rows]

    # 1. client vs client
    L.append("## 1. Client against client: ours / the omniORB C++ client, on each server\n")
    for s in servers:
        L.append(f"On the {NAMES[s]} server:\n")
        L.append("| case | omniORB client | ours | ratio | spread: ours | omniORB |")
        L.append("|---|---|---|---|---|---|")
        for r in rows:
            o, u = r["pairs"].get(f"omniorb>{s}"), r["pairs"].get(f"ours>{s}")
            if o and u:
                L.append(f"| {r['mode']} {r['type']} {r['size'] // 1024} KiB | {o['median']:.0f} | {u['median']:.0f} | {ratio_text(r['client_ratio'].get(s))} | {u['spread']:.0%} | {o['spread']:.0%} |")
        L.append("")
    svg_bars("Our client / omniORB's client (same server)", fig_rows(), {NAMES[s] + " server": [(r["client_ratio"].get(s) or {}).get("median") for r in rows] for s in servers}, os.path.join(figdir, "client-vs-client.svg"))
    L.append("\n![client vs client](perf/client-vs-client.svg)\n")
    below = [(r, s) for r in rows for s in servers if r["client_ratio"].get(s) and r["client_ratio"][s]["median"] < 1.0]
    L.append(f"Rows where our client is below the omniORB client: {len(below)} of {sum(1 for r in rows for s in servers if r['client_ratio'].get(s))}" + ("." if not below else ": " + ", ".join(f"{case(r)} on {NAMES[s]} {r['client_ratio'][s]['median']:.2f}x" for r, s in below) + ".") + "\n")

    # 2. server vs server
    others = [s for s in servers if s != "omniorb"]
    if "omniorb" in servers and others:
        L.append("## 2. Server against server: each server / omniORB's, under the same client\n")
        L.append("Mbit/s, and in brackets the server's CPU: seconds per second of the run (1.00 = one CPU busy throughout). Where the client is the bottleneck a server's quality shows in its CPU; a server that sleeps between segments costs its sender a wake-up for each.\n")
        for client in ["omniorb", "ours"]:
            L.append(f"Under the {'omniORB C++' if client == 'omniorb' else 'iiopbench'} client:\n")
            L.append("| case | omniORB server | " + " | ".join(f"{NAMES[s]} server | ratio" for s in others) + " |")
            L.append("|---|---|" + "---|---|" * len(others))
            for r in rows:
                base = r["pairs"].get(f"{client}>omniorb")
                cells = []
                for s in others:
                    p = r["pairs"].get(f"{client}>{s}")
                    cells.append("- | -" if not p or not base else f"{p['median']:.0f}{cpu_text(r, client, s)} | {ratio_text(r['server_ratio'][client].get(s))}")
                L.append(f"| {r['mode']} {r['type']} {r['size'] // 1024} KiB | {base['median']:.0f}{cpu_text(r, client, 'omniorb')} | " if base else f"| {r['mode']} {r['type']} {r['size'] // 1024} KiB | - | ")
                L[-1] += " | ".join(cells) + " |"
            L.append("")
        L.extend(segment_table(rows, servers))
        svg_bars("Each server / omniORB's server (omniORB C++ client)", fig_rows(), {NAMES[s] + " server": [(r["server_ratio"]["omniorb"].get(s) or {}).get("median") for r in rows] for s in others}, os.path.join(figdir, "server-vs-server.svg"))
        L.append("![server vs server](perf/server-vs-server.svg)\n")

    # 3. both ours vs both omniORB
    if "omniorb" in servers:
        L.append("## 3. Both ours against both omniORB\n")
        ceil = one_call_limits(res)
        if ceil:
            said = "; ".join(w["column"] for m, w in ONE_CALL.items() if any(k[0] == m for k in ceil))
            L.append(f"Both clients write each call when it is made, with TCP_NODELAY, and wait for each twoway's reply before the next call. The last column: {said}; the median of its runs. A ratio target that asks for more than it is beyond what one call at a time can reach on this machine.\n")
        L.append("| case | omniORB → omniORB | ours → ours | ratio |" + (" raw TCP, same way |" if ceil else ""))
        L.append("|---|---|---|---|" + ("---|" if ceil else ""))
        for r in rows:
            o, u = r["pairs"].get("omniorb>omniorb"), r["pairs"].get("ours>ours")
            if o and u:
                c = ceil.get((r["mode"], r["size"]))
                L.append(f"| {r['mode']} {r['type']} {r['size'] // 1024} KiB | {o['median']:.0f} | {u['median']:.0f} | {ratio_text(r['both_ratio'])} |"
                         + ((f" {c['mbps']:.0f} |" if c else " - |") if ceil else ""))
        L.append("")

    # 4. physical limit
    L.append("## 4. The physical limit: raw TCP beside the fastest ORB pair\n")
    L.append("`iiopbench bench tcp --pattern stream`: one write of a 12-byte header plus the payload per frame, from a buffer placed 64 bytes into a 4 KiB span (the kernel's copy of a send is slower from some offsets, 0.70x from 12 bytes before a span here, so the offset is chosen rather than left to the allocator; from 96 KiB on, its first KiB alone first, as our GIOP client writes large oneways), the client waiting as ours does; the server reads into a 128 KiB buffer and, having a CPU of its own, polls before each read (a receiver that sleeps in `recv` is woken per segment and paces the sender); frames smaller than a segment go with Nagle on, as TTCP and iperf3 send. iperf3: `-l SIZE` writes, its own server, same placement. After each spread: how many frames (calls) one TCP data segment carried, the median of the runs.\n")
    L.append(f"The fastest one-write-per-call oneway pair of sections 1–3 and 7 at each size is measured again between raw streams: each of {run['reps']} rounds runs raw, ORB, raw, ORB, raw, and each ORB run is divided by the mean of the two raw runs either side of it, so that both ran while the machine was at the same speed (the raw column: the median of all its runs); \"ORB / bench tcp\" is the median of those ratios [min–max]. Above 1.0x, an ORB moved the bytes faster than the baseline did beside it.\n")
    seps = any(t.get("separate") for t in res["tcp"])
    acks = any(t.get("ack") for t in res["tcp"])
    if seps:
        L.append("\"separate writes\": the same stream with Nagle off (`--stream-writes separate`), each frame in a segment of its own unless the window holds it back, as a client that writes each oneway with TCP_NODELAY sends them (omniORB's, and ours by default): the most one write per call can move. One run per round, after the others; frames of a segment or more leave at once either way, so only the sizes below one are run.\n")
    if acks:
        L.append("\"ack round trips\": `bench tcp --pattern ack`, a request of the size and an empty reply (a 12-byte header), one at a time, the client and the server each polling for the other's bytes: the most a client that waits for each twoway's reply can move (Mbit/s of requests, and the round trip's p50). One run per round, after the others.\n")
    L.append("| size | bench tcp stream |" + (" separate writes |" if seps else "") + (" ack round trips |" if acks else "") + " iperf3 | fastest oneway ORB pair, measured beside it | ORB / bench tcp |")
    L.append("|---|---|" + ("---|" if seps else "") + ("---|" if acks else "") + "---|---|---|")
    for t in res["tcp"]:
        fast = t.get("fastest")
        ip = f"{t['iperf3']:.0f}" if t.get("iperf3") else "not installed"
        sp = t.get("separate")
        sep_cell = (f" {sp['mbps']:.0f} (spread {sp['spread']:.0%}{per_segment_note(sp)}) |" if sp
                    else " as the stream |" if t["size"] >= SEPARATE_BELOW else " - |") if seps else ""
        ak = t.get("ack")
        ack_cell = (f" {ak['mbps']:.0f} (p50 {ak['p50_us']:.1f} µs, spread {ak['spread']:.0%}) |" if ak else " - |") if acks else ""
        L.append(f"| {t['size'] // 1024} KiB | {t['mbps']:.0f} (spread {t['spread']:.0%}{per_segment_note(t)}) |{sep_cell}{ack_cell} {ip} | " + (f"{fast['mbps']:.0f} (spread {fast['spread']:.0%}{per_segment_note(fast)}; {fast['pair']}, {fast['type']}) | {ratio_text(fast['ratio'])} |" if fast else "- | - |"))
    L.append("")

    # 5. latency
    lat = res["latency"]
    L.append("## 5. Latency (p50)\n")
    wait = {"epoll": "waits in epoll, as our default reactor server does", "recv": "blocks in recv, as a thread per connection does"}.get(lat.get("raw_server_wait"))
    L.append("Each run is `bench latency --baseline`: its calls go in 16 slices, each beside a slice of raw-TCP round trips whose client waits as ours does" + (f" and whose server {wait}" if wait else "") + ". \"sliced ratio\": the median and range over the rounds of each run's own ratio (the median of its slices' p50 ratios); \"ratio of p50s\": the per-round ratio of the two whole-run p50s.\n")
    L.append("| case | ours → ours | raw TCP, same wait | sliced ratio | ratio of p50s |")
    L.append("|---|---|---|---|---|")
    for k, v in lat["vs_tcp"].items():
        sl = v.get("sliced") or []
        sliced = {"median": med(sl), "min": min(sl), "max": max(sl)} if sl else None
        L.append(f"| {k} | {med(v['ours']):.1f} µs | {med(v['tcp']):.1f} µs | {ratio_text(sliced)} | {ratio_text(paired(v['ours'], v['tcp']))} |")
    if lat.get("omniorb_server"):
        v = lat["omniorb_server"]
        L.append(f"\nPing p50 on the omniORB server: our client {med(v['ours']):.1f} µs, the omniORB client {med(v['omniorb']):.1f} µs: {ratio_text(paired(v['ours'], v['omniorb']))} (lower is better for us).\n")

    # 6. buffered oneways
    brows = [r for r in rows if r.get("buffered_ratio")]
    if brows:
        L.append("## 6. Buffered oneways: what each server takes when the client does not write per call\n")
        L.append(f"Our client with `bench throughput --oneway-buffer {res['oneway_buffer']}`: CORBA Messaging's SYNC_NONE with a byte limit (TAO's BUFFER_MESSAGE_BYTES constraint): each oneway is queued, and the queue goes to the kernel in one write once it holds {res['oneway_buffer']}; the get_stats() that ends each slice lets the rest out. The omniORB client has no such mode, and sections 1–4 compare clients that write each oneway when it is made (SYNC_WITH_TRANSPORT, every ORB's default). Its runs are in the same rounds as theirs. Ratios: each server under our buffering client / under the omniORB client; then our buffering client → our server / omniORB → omniORB; then, for that pair, the raw-TCP stream that writes the same frames in the same batches (`bench throughput --oneway-buffer --baseline`, in slices beside it: the physical limit for these writes) and the pair's sliced ratio to it.\n")
        both = "omniorb" in servers and "ours" in servers
        raw = any(r.get("buffered_vs_raw") for r in brows)
        head = ["case"] + [x for s in servers for x in (f"{NAMES[s]} server", "ratio")]
        head += ["ours buffered → ours / omniORB → omniORB"] if both else []
        head += ["raw TCP, same writes", "ours buffered → ours / it"] if raw else []
        L.append("| " + " | ".join(head) + " |")
        L.append("|" + "---|" * len(head))
        for r in brows:
            line = client_row(r, servers, BUFFERED, "buffered", both, lambda s: cpu_text(r, BUFFERED, s))
            if raw:
                b = r.get("buffered_vs_raw")
                line += f" {b['raw_mbps']:.0f} | {ratio_text(b['ratio'])} |" if b else " - | - |"
            L.append(line)
        L.append("")
        svg_bars("Each server under our buffering client / under the omniORB client", [f"{r['type']} {r['size'] // 1024}KiB" for r in brows], {NAMES[s] + " server": [(r["buffered_ratio"].get(s) or {}).get("median") for r in brows] for s in servers}, os.path.join(figdir, "buffered-oneways.svg"))
        L.append("![buffered oneways](perf/buffered-oneways.svg)\n")

    # 7. coalesced oneways
    crows = [r for r in rows if r.get("coalesced_ratio")]
    if crows:
        L.append("## 7. Coalesced oneways: one write per call, joined by the kernel\n")
        L.append("Our client with `bench throughput --coalesce-oneways`: each oneway is written when it is made (SYNC_WITH_TRANSPORT, as in sections 1–4), but with Nagle's algorithm on between oneways shorter than a TCP segment, so the oneways made while earlier bytes wait for their ACK leave together in fuller segments, as the raw stream of section 4 and iperf3's are sent; the get_stats() that ends each slice turns TCP_NODELAY back on first, which pushes what is held, so no answer waits for a delayed ACK. The omniORB client has no such mode (it sets TCP_NODELAY). Its runs are in the same rounds as the others, and section 4's fastest pair may be this client. Ratios: each server under our coalescing client / under the omniORB client; then our coalescing client → our server / omniORB → omniORB; calls per TCP segment in brackets after the Mbit/s.\n")
        both = "omniorb" in servers and "ours" in servers
        head = ["case"] + [x for s in servers for x in (f"{NAMES[s]} server", "ratio")]
        head += ["ours coalescing → ours / omniORB → omniORB"] if both else []
        L.append("| " + " | ".join(head) + " |")
        L.append("|" + "---|" * len(head))
        for r in crows:
            line = client_row(r, servers, COALESCED, "coalesced", both, lambda s: per_segment_text(r, COALESCED, s))
            L.append(line)
        L.append("")
        svg_bars("Each server under our coalescing client / under the omniORB client", [f"{r['type']} {r['size'] // 1024}KiB" for r in crows], {NAMES[s] + " server": [(r["coalesced_ratio"].get(s) or {}).get("median") for r in crows] for s in servers}, os.path.join(figdir, "coalesced-oneways.svg"))
        L.append("![coalesced oneways](perf/coalesced-oneways.svg)\n")
    with open(doc, "w") as f:
        f.write("\n".join(L) + "\n")


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--max-reps", type=int, help="rounds at most for a point whose pairs' rounds disagree (default: twice --reps)")
    ap.add_argument("--spread-limit", type=float, default=0.3, help="a pair's (max - min) / median of its rounds above which a point gets more rounds (default 0.3)")
    ap.add_argument("--idle-servers", choices=["pause", "run"], default="pause", help="servers not being measured: `pause` (SIGSTOP, the default: nothing else on the server CPUs) or `run` (all up throughout, as before schema 9)")
    ap.add_argument("--quick", action="store_true", help="octet/double/char at 1KiB and 64KiB, 16 MiB and 0.3 s per run")
    ap.add_argument("--types", help="comma-separated element types (default: octet,double,long,perfstruct,char)")
    ap.add_argument("--sizes", help="comma-separated sizes in bytes (default: 1024,8192,65536,131072)")
    ap.add_argument("--modes", default="oneway,twoway")
    ap.add_argument("--servers", default="ours,omniorb,jacorb,tao", help="servers to measure, where installed")
    ap.add_argument("--server-cpus", default="1")
    ap.add_argument("--client-cpus", default="0")
    ap.add_argument("--wait-strategy", default="auto", help="our client's --wait-strategy")
    ap.add_argument("--oneway-buffer", default="64KiB", help="our buffering client's --oneway-buffer in section 6 (0: leave section 6 out)")
    ap.add_argument("--coalesced", choices=["on", "off"], default="on", help="run our client with --coalesce-oneways on every server's oneway points too (section 7; off: leave it out)")
    ap.add_argument("--our-server", default="auto", choices=["auto", "reactor", "threads", "threads-spin"],
                    help="how our server runs: the reactor, a thread per connection, or one that polls up to 1 ms for the next bytes after each message (auto: threads-spin when the server CPUs are apart from the client's, else reactor)")
    ap.add_argument("--json", dest="out", help="where to write the results (JSON; default: perf/compare.json beside --doc, so the report's data travel with it)")
    # The old spelling, accepted for one release (as iiopbench's own, docs/cli.md).
    ap.add_argument("--out", dest="old_out", help=argparse.SUPPRESS)
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs", "performance.md"), help="the Markdown report (figures go to perf/ beside it)")
    ap.add_argument("--no-install", action="store_true", help="do not install iperf3 (benches/compare/install)")
    ap.add_argument("--from-json", metavar="FILE", help="measure nothing: write --doc and its figures again from results a run wrote (its --json)")
    a = ap.parse_args()
    if a.old_out is not None:
        print("warning: `--out` is deprecated for `benches/compare/run.py`; use `--json`", file=sys.stderr)
        a.out = a.old_out
    if a.out is None:
        a.out = default_json(a.doc)
    types = (a.types or ("octet,double,char" if a.quick else "octet,double,long,perfstruct,char")).split(",")
    sizes = [int(s) for s in (a.sizes or ("1024,65536" if a.quick else "1024,8192,65536,131072")).split(",")]
    modes = a.modes.split(",")
    if a.max_reps is None:
        a.max_reps = 2 * a.reps
    a.total, a.min_duration = (16 << 20, 0.3) if a.quick else (64 << 20, 1.0)
    if a.from_json:
        try:
            with open(a.from_json) as f:
                res = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(f"run.py: cannot read results from {a.from_json}: {e}")
        if not str(res.get("schema", "")).startswith("iiopbench-compare/"):
            sys.exit(f"run.py: {a.from_json} is not a results file of this script (schema {res.get('schema')!r})")
        write_doc(res, a, a.doc, data=a.from_json, rerendered=True)
        print(f"wrote {a.doc} from {a.from_json}")
        return 0
    if not a.no_install:
        subprocess.run([os.path.join(ROOT, "benches", "compare", "install")], check=True)
    subprocess.run(["cargo", "build", "--profile", "maxperf", "-q", "-p", "iiopbench"], cwd=ROOT, check=True)
    subprocess.run([os.path.join(ORBS, "omniorb", "build")], check=True, stdout=subprocess.DEVNULL)
    wanted = a.servers.split(",")
    servers = [s for s in wanted if installed(s)]
    skipped = [s for s in wanted if s not in servers]
    if skipped:
        print(f"# not installed here, left out: {', '.join(NAMES.get(s, s) for s in skipped)}", file=sys.stderr)
    clients = ["ours", "omniorb"]
    cl = Clients(a)
    our_kind, our_args = our_server_args(a)
    res = {"schema": "iiopbench-compare/14", "machine": machine(), "placement": {"server_cpus": a.server_cpus, "client_cpus": a.client_cpus}, "reps": a.reps, "max_reps": a.max_reps, "spread_limit": a.spread_limit, "servers": servers,
           "run": {"flags": flags_of(a), "total": a.total, "min_duration": a.min_duration, "wait_strategy": a.wait_strategy, "idle_servers": a.idle_servers, "order": "server-blocks"},
           "our_server": {"kind": our_kind, "serve_args": our_args}, "oneway_buffer": a.oneway_buffer, "coalesced": a.coalesced == "on", "throughput": [], "tcp": [], "latency": {}}
    running = {}
    try:
        for s in servers:
            running[s] = Server(s, a.server_cpus, our_args)
        for mode in modes:
            buffered = mode == "oneway" and a.oneway_buffer not in ("", "0")
            coalesced = mode == "oneway" and a.coalesced == "on"
            point_clients = clients + ([BUFFERED] if buffered else []) + ([COALESCED] if coalesced else [])
            pairs = round_order(0, servers, point_clients)
            for ty in types:
                for size in sizes:
                    samples = {f"{c}>{s}": [] for c, s in pairs}
                    cpu = {f"{c}>{s}": [] for c, s in pairs}
                    segs = {f"{c}>{s}": [] for c, s in pairs}
                    raw_batched = []
                    # --reps rounds; then, while some pair's rounds
                    # disagree by more than --spread-limit (this VM
                    # switches speed for seconds at a time, and one
                    # phase can catch two of three rounds of one pair),
                    # more rounds of every pair, up to --max-reps.
                    rep = 0
                    while rep < a.reps or (rep < a.max_reps and any(spread(v) > a.spread_limit for v in samples.values())):
                        for c, s in round_order(rep, servers, point_clients):
                            # Our buffering pair on our own server runs
                            # beside the raw stream that writes the same
                            # batches.
                            beside = c == BUFFERED and s == "ours"
                            only(running, s, a.idle_servers)
                            mbps, share, per, raw = cl.throughput(c, running[s].ior_file, mode, ty, size, beside_raw=beside)
                            if raw:
                                raw_batched.append(raw)
                            samples[f"{c}>{s}"].append(mbps)
                            cpu[f"{c}>{s}"].append(share)
                            segs[f"{c}>{s}"].append(per)
                        rep += 1
                    row = throughput_row(mode, ty, size, servers, samples, cpu, segs, buffered, raw_batched)
                    res["throughput"].append(row)
                    cr = "  ".join(f"{NAMES[s]}: {ratio_text(row['client_ratio'][s])}" for s in servers)
                    print(f"{mode:7} {ty:10} {size:>7}  ours/omniORB client  {cr}", flush=True)
        if "omniorb" in servers:
            lat = {"ours": [], "omniorb": []}
            only(running, "omniorb", a.idle_servers)
            for i in range(a.reps * 4):
                for c in rotated(i, ["ours", "omniorb"]):
                    if c == "omniorb":
                        o = last_json(run(taskset(a.client_cpus, [os.path.join(ORBS, "omniorb", "client"), "--target", running["omniorb"].ior_file, "--mode", "latency", "--op", "ping", "--count", "5000", "--warmup", "500"])))
                        lat["omniorb"].append(o["latency_us"]["p50"])
                    else:
                        r = cl.ours(["latency", "--target", running["omniorb"].ior_file, "--server-cpus", a.server_cpus, "--count", "5000", "--warmup", "500"])
                        lat["ours"].append(r["cases"][0]["latency_us"]["p50"])
            res["latency"]["omniorb_server"] = lat
        # Raw TCP and iperf3 at the same sizes, beside the fastest oneway
        # ORB pair of the tables above, measured again in the same rounds:
        # its best median there is biased upward by being the best of
        # many, and a ratio means something only between runs taken side
        # by side.
        pin = ["--client-cpus", a.client_cpus, "--server-cpus", a.server_cpus]
        for size in sizes:
            best = None
            for row in res["throughput"]:
                if row["mode"] == "oneway" and row["size"] == size:
                    for k, p in row["pairs"].items():
                        if k.startswith(BUFFERED + ">"):
                            continue  # section 6: not one write per call
                        if best is None or p["median"] > best["median"]:
                            best = {"median": p["median"], "key": k, "type": row["type"]}
            xs, ip, orb, ratios, raw_segs, orb_segs = [], [], [], [], [], []
            if best:
                c, s = best["key"].split(">")
                only(running, s, a.idle_servers)

            sep, sep_segs, acks, ack_p50 = [], [], [], []

            def raw_tcp(*args):
                """The one case of `bench tcp` at this size, pinned as the rest."""
                return json.loads(run([IIOPBENCH, "bench", "tcp", *args, "--size", str(size), "--min-duration", f"{a.min_duration}s", "--runs", "1", "--quiet", "--json", "-"] + pin))["cases"][0]

            def raw_stream(writes="joined", into=xs, segs=raw_segs):
                c = raw_tcp("--pattern", "stream", "--stream-writes", writes, "--total", str(a.total))
                x = c.get("receiver_throughput_mbps") or c["throughput_mbps"]
                into.append(x)
                per = (c.get("extra") or {}).get("calls_per_segment")
                if per:
                    segs.append(per)
                return x

            for rep in range(a.reps):
                # Raw, ORB, raw, ORB, raw: each ORB run against the mean of
                # the raw runs on either side of it. A machine whose speed
                # switches between regimes for seconds to minutes (this
                # project's VM: 64 KiB frames at ~30 or ~12 Gbit/s, raw TCP
                # and ORBs alike) then pairs runs of one regime; runs a
                # round apart did not, and an ORB "beat" raw TCP by 1.26x.
                before = raw_stream()
                for _ in range(2 if best else 0):
                    o, _, per, _ = cl.throughput(c, running[s].ior_file, "oneway", best["type"], size)
                    orb.append(o)
                    if per:
                        orb_segs.append(per)
                    after = raw_stream()
                    ratios.append(o / ((before + after) / 2))
                    before = after
                v = iperf3(size, max(1, round(a.min_duration)), a)
                if v is not None:
                    ip.append(v)
                # A frame shorter than a segment, written with Nagle off:
                # the most a client that writes each oneway with
                # TCP_NODELAY can move (section 3's ceiling). Larger frames
                # go at once either way.
                if size < SEPARATE_BELOW:
                    raw_stream("separate", sep, sep_segs)
                # Round trips of a request and an empty reply, both sides
                # polling: the most a client that waits for each twoway's
                # reply can move (section 3's twoway ceiling).
                if "twoway" in modes:
                    ack = raw_tcp("--pattern", "ack", "--count", "10000", "--warmup", "1000")
                    acks.append(ack["throughput_mbps"])
                    ack_p50.append(ack["latency_us"]["p50"])
            fastest = None
            if best:
                fastest = {"mbps": med(orb), "samples": orb, "spread": spread(orb), "pair": f"{CLIENT_NAMES.get(c) or NAMES[c]} → {NAMES[s]}", "type": best["type"],
                           "ratio": summary(ratios), "ratios": ratios, "tables_mbps": best["median"],
                           "calls_per_segment": med(orb_segs) if orb_segs else None}
            res["tcp"].append({"size": size, "mbps": med(xs), "samples": xs, "spread": spread(xs), "iperf3": med(ip) if ip else None, "iperf3_samples": ip, "fastest": fastest,
                               "calls_per_segment": med(raw_segs) if raw_segs else None,
                               "separate": {"mbps": med(sep), "samples": sep, "spread": spread(sep), "calls_per_segment": med(sep_segs) if sep_segs else None} if sep else None,
                               "ack": {"mbps": med(acks), "samples": acks, "spread": spread(acks), "p50_us": med(ack_p50), "p50_samples": ack_p50} if acks else None})
            print(f"raw tcp {size:>7}: bench tcp {med(xs):.0f}" + (f", iperf3 {med(ip):.0f}" if ip else ", iperf3 not installed") + (f", fastest ORB pair {fastest['mbps']:.0f} ({fastest['pair']}, {fastest['type']}): {ratio_text(fastest['ratio'])} of bench tcp" if fastest else ""), flush=True)
    finally:
        for s in running.values():
            s.stop()
    # Latency, ours -> ours against raw TCP waiting the same way.
    vs = {"ping": {"ours": [], "tcp": []}, "echo 64 KiB": {"ours": [], "tcp": []}}
    for rep in range(a.reps):
        for name, args in [("ping", ["--op", "ping"]), ("echo 64 KiB", ["--op", "echo", "--size", "64KiB"])]:
            r = cl.ours(["latency"] + args + ["--count", "5000", "--warmup", "500", "--baseline"] + pin)
            vs[name]["ours"].append(r["cases"][0]["latency_us"]["p50"])
            vs[name]["tcp"].append(r["cases"][1]["latency_us"]["p50"])
            # The run's own ratio: the median of its slices' p50 ratios,
            # each slice beside its raw round trips.
            b = r["cases"][0].get("baseline")
            if b:
                vs[name].setdefault("sliced", []).append(b["ratio"])
            res["latency"]["raw_server_wait"] = r["params"].get("baseline_server_wait")
    res["latency"]["vs_tcp"] = vs
    res["our_wait"] = sorted(cl.waited)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    write_doc(res, a, a.doc, data=a.out)
    print(f"wrote {a.out} and {a.doc}")


if __name__ == "__main__":
    sys.exit(main())
