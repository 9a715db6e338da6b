"""Tests of run.py's report: the targets table and re-rendering from saved
results (`--from-json`), on small results built here. Nothing is measured.

    python3 -m unittest discover -s benches/compare -p 'test_*.py'
"""
import json, os, subprocess, sys, tempfile, time, unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402

SERVERS = ["ours", "omniorb"]


def row(mode, ty, size, samples, buffered=None, coalesced=None):
    """A throughput row as run.py's main loop builds it, from per-round
    Mbit/s per "client>server" pair (and our buffering and coalescing
    clients' per server)."""
    samples = dict(samples)
    for s, v in (buffered or {}).items():
        samples[f"{run.BUFFERED}>{s}"] = v
    for s, v in (coalesced or {}).items():
        samples[f"{run.COALESCED}>{s}"] = v
    nones = {k: [None] * len(v) for k, v in samples.items()}
    return run.throughput_row(mode, ty, size, SERVERS, samples, nones, nones, bool(buffered), [])


def results():
    # octet 1 KiB: our client 1.10x and 0.90x; our server 1.0x; both 1.2x.
    octet = row("oneway", "octet", 1024, {
        "ours>ours": [1200, 1200, 1200], "omniorb>ours": [1000, 1000, 1000],
        "ours>omniorb": [900, 900, 900], "omniorb>omniorb": [1000, 1000, 1000]},
        buffered={"ours": [9000, 9000, 9000], "omniorb": [8000, 8000, 8000]},
        coalesced={"ours": [5000, 5000, 5000], "omniorb": [4000, 4000, 4000]})
    # char 8 KiB: both 5x, short of 10x; buffered 12x; coalesced 9x.
    char = row("oneway", "char", 8192, {
        "ours>ours": [5000, 5000, 5000], "omniorb>ours": [1100, 1100, 1100],
        "ours>omniorb": [1000, 1000, 1000], "omniorb>omniorb": [1000, 1000, 1000]},
        buffered={"ours": [12000, 12000, 12000], "omniorb": [1000, 1000, 1000]},
        coalesced={"ours": [9000, 9000, 9000], "omniorb": [1000, 1000, 1000]})
    return {"schema": "iiopbench-compare/11",
            "machine": {"cpu": "test CPU", "cpus": 2, "kernel": "6.0", "commit": "abc1234", "date": "2026-01-01 00:00 UTC"},
            "placement": {"server_cpus": "1", "client_cpus": "0"}, "reps": 3, "max_reps": 6, "spread_limit": 0.3,
            "servers": SERVERS, "our_server": {"kind": "threads", "serve_args": ["--server-model", "threads"]},
            "oneway_buffer": "64KiB", "run": {"flags": "", "total": 64 << 20, "min_duration": 1.0, "wait_strategy": "auto", "idle_servers": "pause"},
            "throughput": [octet, char],
            "tcp": [{"size": 1024, "mbps": 8000, "samples": [8000], "spread": 0.0, "iperf3": None, "iperf3_samples": [], "calls_per_segment": 33.6,
                     "fastest": {"mbps": 1200, "samples": [1200], "spread": 0.0, "pair": "iiopbench → iiopbench", "type": "octet",
                                 "ratio": {"median": 0.15, "min": 0.15, "max": 0.15}, "ratios": [0.15], "tables_mbps": 1200,
                                 "calls_per_segment": 1.0}}],
            "latency": {"vs_tcp": {"ping": {"ours": [24.0], "tcp": [23.0], "sliced": [1.0504]},
                                   "echo 64 KiB": {"ours": [130.0], "tcp": [115.0], "sliced": [1.13]}},
                        "raw_server_wait": "epoll"},
            "our_wait": ["spin"]}


def table(lines):
    """target -> (holds, rows, short, short in every round) from the
    targets table's lines."""
    out = {}
    for line in lines:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 5 and cells[1] in ("yes", "no"):
            out[cells[0]] = tuple(cells[1:])
    return out


class Targets(unittest.TestCase):
    def setUp(self):
        self.t = table(run.targets(results()))

    def find(self, prefix):
        hits = [v for k, v in self.t.items() if k.startswith(prefix)]
        self.assertEqual(len(hits), 1, (prefix, list(self.t)))
        return hits[0]

    def test_client_rows_short_of_one_are_listed_worst_first(self):
        holds, rows, short, every = self.find("our client ≥ 1.0x")
        self.assertEqual((holds, rows), ("no", "3 of 4"))
        self.assertEqual(short, "oneway octet 1KiB on omniORB 0.90x")
        # 900 against 1000 in each of the three rounds.
        self.assertEqual(every, "1 of 1: oneway octet 1KiB on omniORB 0.90x")

    def test_server_rows(self):
        self.assertEqual(self.find("our server ≥ 1.0x omniORB's")[:2], ("yes", "2 of 2"))

    def test_per_type_targets_of_both_ours(self):
        holds, rows, short, _ = self.find("ours → ours / omniORB → omniORB, one write per call")
        self.assertEqual((holds, rows), ("no", "1 of 2"))
        self.assertEqual(short, "oneway char 8KiB (≥ 10x) 5.00x")
        self.assertEqual(self.find("the same, our client buffering")[:2], ("yes", "2 of 2"))
        holds, rows, short, _ = self.find("the same, our client coalescing")
        self.assertEqual((holds, rows, short), ("no", "1 of 2", "oneway char 8KiB (≥ 10x) 9.00x"))

    def test_a_value_that_prints_as_its_limit_gets_a_third_place(self):
        holds, rows, short, every = self.find("ping p50")
        self.assertEqual((holds, short), ("no", "ping 1.050x"))
        self.assertEqual(every, "1 of 1: ping 1.050x")
        self.assertEqual(self.find("echo 64 KiB p50")[0], "yes")

    def test_a_target_met_everywhere_has_nothing_short_in_every_round(self):
        self.assertEqual(self.find("our server ≥ 1.0x omniORB's")[3], "-")

    def test_spreads_have_no_rounds_to_tell_noise_by(self):
        res = results()
        res["throughput"][0]["pairs"]["ours>ours"]["spread"] = 0.5
        t = table(run.targets(res))
        [(_, _, _, every)] = [v for k, v in t.items() if k.startswith("our client's spread")]
        self.assertEqual(every, "n/a")

    def test_raw_tcp_ahead_of_the_fastest_pair_holds(self):
        self.assertEqual(self.find("raw TCP at least as fast")[:2], ("yes", "1 of 1"))

    def test_zero_spread_against_zero_spread_holds(self):
        self.assertEqual(self.find("our client's spread")[:2], ("yes", "4 of 4"))


class ShortInEveryRound(unittest.TestCase):
    """A short row whose rounds straddle the target is noise the run
    cannot rule out; one whose every round missed is not."""

    def every(self, ours_on_ours, ours_on_omniorb):
        res = results()
        res["throughput"] = [row("oneway", "long", 1024, {
            "ours>ours": ours_on_ours, "omniorb>ours": [1000, 1000, 1000],
            "ours>omniorb": ours_on_omniorb, "omniorb>omniorb": [1000, 1000, 1000]})]
        [(_, _, short, every)] = [v for k, v in table(run.targets(res)).items() if k.startswith("our client ≥ 1.0x")]
        return short, every

    def test_a_round_that_met_the_target_keeps_a_row_out(self):
        # On our server 0.95, 0.97, 1.02: median short, one round met it.
        # On omniORB's 0.96, 0.97, 0.98: short in every round.
        short, every = self.every([950, 970, 1020], [960, 970, 980])
        self.assertEqual(short, "oneway long 1KiB on iiopbench 0.97x, oneway long 1KiB on omniORB 0.97x")
        self.assertEqual(every, "1 of 2: oneway long 1KiB on omniORB 0.97x")

    def test_none_short_in_every_round(self):
        self.assertEqual(self.every([950, 970, 1020], [990, 980, 1010])[1], "0 of 2")

    def test_lower_is_better_targets_use_the_round_nearest_from_below(self):
        res = results()
        res["latency"]["vs_tcp"]["ping"]["sliced"] = [1.04, 1.07, 1.08]
        [(holds, _, _, every)] = [v for k, v in table(run.targets(res)).items() if k.startswith("ping p50")]
        self.assertEqual((holds, every), ("no", "0 of 1"))


class SpreadNote(unittest.TestCase):
    def note(self, ours, omniorb, rows=6):
        res = results()
        res["throughput"] = [row("oneway", "long", 1024 << i, {
            "ours>ours": ours, "omniorb>ours": omniorb,
            "ours>omniorb": ours, "omniorb>omniorb": omniorb}) for i in range(rows)]
        return [l for l in run.targets(res) if l.startswith("Spreads taken together")]

    def test_ours_wider_on_every_row_is_more_than_chance(self):
        # 12 rows (6 points x 2 servers), ours 20 % wide, omniORB's 10 %.
        [note] = self.note([900, 1000, 1100], [950, 1000, 1050])
        self.assertIn("on 0 of 12 rows", note)
        self.assertIn("median 2.00x", note)
        self.assertIn("probability 0.00", note)
        self.assertIn("so ours vary more", note)

    def test_half_and_half_is_no_evidence(self):
        res = results()
        wide, narrow = [900, 1000, 1100], [950, 1000, 1050]
        res["throughput"] = [row("oneway", "long", 1024 << i, {
            "ours>ours": wide if i % 2 else narrow, "omniorb>ours": narrow if i % 2 else wide,
            "ours>omniorb": narrow, "omniorb>omniorb": wide}) for i in range(4)]
        [note] = [l for l in run.targets(res) if l.startswith("Spreads taken together")]
        # ours no wider: 2 of 4 on our server, 4 of 4 on omniORB's.
        self.assertIn("on 6 of 8 rows", note)
        self.assertAlmostEqual(run.sign_test(6, 8), 247 / 256)
        self.assertIn("no evidence", note)

    def test_no_note_when_every_spread_is_zero(self):
        self.assertEqual(self.note([1000] * 3, [1000] * 3), [])

    def test_the_rows_split_by_how_much_faster_our_client_ran(self):
        res = results()
        # Three points where ours is as fast and narrower, three where it
        # is 5x as fast and wider; 6 rows each (2 servers).
        steady, wide = [950, 1000, 1050], [900, 1000, 1100]
        res["throughput"] = [row("oneway", "long", 1024 << i, {
            "ours>ours": [5 * x for x in wide] if i % 2 else steady, "omniorb>ours": wide if i % 2 == 0 else steady,
            "ours>omniorb": [5 * x for x in wide] if i % 2 else steady, "omniorb>omniorb": wide if i % 2 == 0 else steady}) for i in range(6)]
        [note] = [l for l in run.targets(res) if l.startswith("Spreads taken together")]
        self.assertIn("on 6 of 12 rows", note)
        self.assertIn("where our client moved at most 1.25x the omniORB client's Mbit/s, ours no wider on 6 of 6 (probability 1.00)", note)
        self.assertIn(f"where it moved more, on 0 of 6 (probability {run.sign_test(0, 6):.2f})", note)
        # One kind of row only: nothing to split.
        [note] = self.note([900, 1000, 1100], [950, 1000, 1050])
        self.assertNotIn("By rate", note)


class RoundOrder(unittest.TestCase):
    """The two runs a ratio divides run close together in every round."""
    SERVERS = ["ours", "omniorb", "jacorb", "tao"]
    CLIENTS = ["ours", "omniorb", run.BUFFERED, run.COALESCED]

    def rounds(self, servers, n=8):
        return [run.round_order(rep, servers, self.CLIENTS) for rep in range(n)]

    def test_every_pair_runs_once_per_round(self):
        every = sorted((c, s) for s in self.SERVERS for c in self.CLIENTS)
        for order in self.rounds(self.SERVERS):
            self.assertEqual(sorted(order), every)

    def test_the_runs_of_each_ratio_stay_close(self):
        for order in self.rounds(self.SERVERS):
            at = {p: i for i, p in enumerate(order)}
            for s in self.SERVERS:
                for c in ["ours", run.BUFFERED, run.COALESCED]:
                    # client ratios: both runs on the same server's block
                    self.assertLessEqual(abs(at[(c, s)] - at[("omniorb", s)]), 3)
                for c in ["ours", "omniorb"]:
                    # server ratios: at most one server between
                    self.assertLessEqual(abs(at[(c, s)] - at[(c, "omniorb")]), 8)

    def test_no_run_always_goes_first(self):
        firsts = {order[0] for order in self.rounds(self.SERVERS)}
        self.assertGreater(len({c for c, _ in firsts}), 1)
        self.assertGreater(len({s for _, s in firsts}), 1)

    def test_without_omniorbs_server(self):
        for order in self.rounds(["ours", "jacorb"]):
            self.assertEqual(len(order), 8)
            self.assertEqual(len({s for _, s in order[:4]}), 1)


class IdleServers(unittest.TestCase):
    class Fake:
        def __init__(self, log, name):
            self.log, self.name = log, name

        def pause(self):
            self.log.append(("pause", self.name))

        def resume(self):
            self.log.append(("resume", self.name))

    def test_only_the_measured_server_runs(self):
        log = []
        running = {n: self.Fake(log, n) for n in ["ours", "omniorb", "jacorb"]}
        run.only(running, "omniorb", "pause")
        self.assertEqual(sorted(log), [("pause", "jacorb"), ("pause", "ours"), ("resume", "omniorb")])
        log.clear()
        run.only(running, "omniorb", "run")
        self.assertEqual(log, [])

    def test_a_real_process_is_paused_and_resumed(self):
        # A child that counts; paused, the count stands still.
        def read(path):
            with open(path) as f:
                return f.read()

        def changes(path, within):
            first, end = read(path), time.time() + within
            while time.time() < end:
                if read(path) != first:
                    return True
                time.sleep(0.02)
            return False

        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "n")
            code = f"import time\nn=0\nwhile True:\n n+=1\n open({out!r},'w').write(str(n))\n time.sleep(0.01)"
            srv = run.Server.__new__(run.Server)
            srv.p = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
            srv.ior_file = os.path.join(d, "none.ior")
            try:
                end = time.time() + 20
                while not os.path.exists(out) and time.time() < end:
                    time.sleep(0.02)
                self.assertTrue(changes(out, 10), "the child never counted")
                srv.pause()
                time.sleep(0.1)
                self.assertFalse(changes(out, 0.3), "paused, it still counted")
                srv.resume()
                self.assertTrue(changes(out, 10), "resumed, it did not count")
            finally:
                srv.pause()
                srv.stop()  # resumes, then SIGTERM
            self.assertIsNotNone(srv.p.poll())

    def test_the_report_says_how_idle_servers_were_kept(self):
        res = results()
        self.assertIn("every other server is paused (SIGSTOP)", "\n".join(self.doc(res)))
        res["schema"] = "iiopbench-compare/8"
        del res["run"]["idle_servers"]
        self.assertIn("every server runs throughout", "\n".join(self.doc(res)))

    def test_the_report_says_which_order_the_runs_went_in(self):
        res = results()
        res["run"]["order"] = "server-blocks"
        self.assertTrue(any("a server's runs together" in l for l in self.doc(res)))
        del res["run"]["order"]  # a file from before: the whole list rotated
        lines = self.doc(res)
        self.assertFalse(any("a server's runs together" in l for l in lines))
        self.assertTrue(any("pair once per round in rotating order;" in l for l in lines))

    def doc(self, res):
        with tempfile.TemporaryDirectory() as d:
            doc = os.path.join(d, "performance.md")
            src = os.path.join(d, "r.json")
            with open(src, "w") as f:
                json.dump(res, f)
            p = subprocess.run([sys.executable, run.__file__, "--from-json", src, "--doc", doc], capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(doc) as f:
                return f.read().splitlines()


def with_separate(res, size, samples):
    """`res` with a section 4 entry at `size` whose separate-writes raw
    stream moved `samples` (Mbit/s, one per round)."""
    res["tcp"].append({"size": size, "mbps": 20000, "samples": [20000], "spread": 0.0, "iperf3": None, "iperf3_samples": [],
                       "calls_per_segment": 4.0, "fastest": None,
                       "separate": {"mbps": run.med(samples), "samples": samples, "spread": run.spread(samples), "calls_per_segment": 1.0}})
    return res


def with_acks(res, size, samples, twoway=None):
    """`res` with ack round trips at `size` that moved `samples` (Mbit/s,
    one per round) in section 4, and a twoway char row at that size with
    `twoway` per-round Mbit/s per "client>server" pair."""
    t = next((t for t in res["tcp"] if t["size"] == size), None)
    if t is None:
        t = {"size": size, "mbps": 20000, "samples": [20000], "spread": 0.0, "iperf3": None, "iperf3_samples": [], "calls_per_segment": 4.0, "fastest": None, "separate": None}
        res["tcp"].append(t)
    t["ack"] = {"mbps": run.med(samples), "samples": samples, "spread": run.spread(samples), "p50_us": 12.5, "p50_samples": [12.5] * len(samples)}
    if twoway:
        res["throughput"].append(row("twoway", "char", size, twoway))
    return res


# Twoway chars at 1 KiB: omniORB -> omniORB 100, ours -> ours 600 (6x of 10x).
TWOWAY_CHARS = {"ours>ours": [600, 600, 600], "omniorb>ours": [100, 100, 100], "ours>omniorb": [100, 100, 100], "omniorb>omniorb": [100, 100, 100]}


class BeyondOneCallAtATime(unittest.TestCase):
    def note(self, res):
        return [l for l in run.targets(res) if l.startswith("Beyond one call at a time")]

    def test_a_target_past_what_raw_tcp_moves_written_the_same_way_is_named(self):
        # chars at 8 KiB: omniORB -> omniORB 1000, so 10x needs 10000;
        # raw TCP with a write per frame moved at most 3400.
        lines = self.note(with_separate(results(), 8192, [3000, 3400, 3200]))
        self.assertEqual(len(lines), 1)
        self.assertIn("1 of the rows short of section 3's target asks for more than raw TCP moved the same way (section 4's separate writes, its fastest run)", lines[0])
        self.assertIn("oneway char 8KiB (≥ 10x) needs 10000 Mbit/s, raw TCP written a frame per write with Nagle off moved at most 3400", lines[0])
        self.assertIn("No client that writes each oneway when it is made with TCP_NODELAY can meet them here; sections 6 and 7", lines[0])

    def test_a_twoway_target_past_the_raw_round_trip_is_named(self):
        # 10x of 100 needs 1000; raw round trips moved at most 900.
        lines = self.note(with_acks(with_separate(results(), 8192, [3000, 3400, 3200]), 1024, [800, 900, 850], TWOWAY_CHARS))
        self.assertEqual(len(lines), 1)
        self.assertIn("2 of the rows short of section 3's target ask for more than raw TCP moved the same way (section 4's separate writes and acks, its fastest run)", lines[0])
        self.assertIn("twoway char 1KiB (≥ 10x) needs 1000 Mbit/s, raw TCP's round trips of a request of that size and an empty reply, both sides polling, moved at most 900", lines[0])
        self.assertIn("No client that writes each oneway when it is made with TCP_NODELAY or waits for each twoway's reply before the next call can meet them here", lines[0])
        # Twoways alone: nothing said of joining oneways.
        only = self.note(with_acks(results(), 1024, [800, 900, 850], TWOWAY_CHARS))
        self.assertEqual(len(only), 1)
        self.assertTrue(only[0].endswith("waits for each twoway's reply before the next call can meet them here."), only[0])

    def test_a_twoway_target_within_the_raw_round_trip_is_not(self):
        self.assertEqual(self.note(with_acks(results(), 1024, [800, 1100], TWOWAY_CHARS)), [])

    def test_a_target_within_reach_is_not(self):
        self.assertEqual(self.note(with_separate(results(), 8192, [9000, 12000])), [])
        # Nor where the separate writes were not measured (files before /13).
        self.assertEqual(self.note(results()), [])

    def test_the_report_puts_the_ceiling_beside_section_3_and_in_section_4(self):
        lines = IdleServers.doc(self, with_separate(results(), 8192, [3000, 3400, 3200]))
        self.assertIn("| oneway char 8 KiB | 1000 | 5000 | 5.00x [5.00–5.00] | 3200 |", lines)
        self.assertIn("| oneway octet 1 KiB | 1000 | 1200 | 1.20x [1.20–1.20] | - |", lines)
        self.assertIn("| 8 KiB | 20000 (spread 0%; 4.0 per segment) | 3200 (spread 12%; 1.0 per segment) | not installed | - | - |", lines)
        # Not measured at 1 KiB here; a frame of a segment or more goes at
        # once either way.
        self.assertTrue(any(l.startswith("| 1 KiB | 8000 (spread 0%; 33.6 per segment) | - |") for l in lines))
        res = with_separate(results(), 8192, [3000])
        res["tcp"].append(dict(res["tcp"][0], size=65536))
        lines = IdleServers.doc(self, res)
        self.assertTrue(any(l.startswith("| 64 KiB | 8000 (spread 0%; 33.6 per segment) | as the stream |") for l in lines))

    def test_the_report_puts_the_round_trip_beside_twoways_and_in_section_4(self):
        lines = IdleServers.doc(self, with_acks(results(), 1024, [800, 900, 850], TWOWAY_CHARS))
        self.assertIn("| twoway char 1 KiB | 100 | 600 | 6.00x [6.00–6.00] | 850 |", lines)
        self.assertIn("| oneway octet 1 KiB | 1000 | 1200 | 1.20x [1.20–1.20] | - |", lines)
        self.assertTrue(any(l.startswith("| 1 KiB | 8000 (spread 0%; 33.6 per segment) | 850 (p50 12.5 µs, spread 12%) | not installed |") for l in lines), [l for l in lines if l.startswith("| 1 KiB")])
        self.assertTrue(any("for twoways, what raw TCP moved in round trips" in l for l in lines))
        self.assertFalse(any("for oneways shorter than a segment" in l for l in lines))


def paragraphs(lines):
    """The targets section's lines, its notes split into paragraphs."""
    return [p for l in lines for p in l.split("\n\n")]


class MarkedBeyondRawTcp(unittest.TestCase):
    """Rows whose target asks for more than raw TCP moved written the way
    their client writes are marked in the targets table, and section 7's
    are named beneath it against the raw stream."""

    SECTION_3 = "ours → ours / omniORB → omniORB, one write per call"
    SECTION_7 = "the same, our client coalescing oneways"

    def cells(self, res, prefix):
        hits = [v for k, v in table(run.targets(res)).items() if k.startswith(prefix)]
        self.assertEqual(len(hits), 1, prefix)
        return hits[0]

    def test_a_section_3_row_past_the_separate_writes_is_marked(self):
        res = with_separate(results(), 8192, [3000, 3400, 3200])
        _, _, short, every = self.cells(res, self.SECTION_3)
        self.assertIn("oneway char 8KiB (≥ 10x, more than raw TCP moved) 5.00x", short)
        self.assertIn("oneway char 8KiB (≥ 10x, more than raw TCP moved) 5.00x", every)
        intro = run.targets(res)[1]
        self.assertIn('Marked "more than raw TCP moved": a row whose target asks for more than raw TCP moved', intro)

    def test_a_row_within_reach_is_not_marked(self):
        for res in (with_separate(results(), 8192, [9000, 12000]), results()):
            lines = run.targets(res)
            _, _, short, _ = self.cells(res, self.SECTION_3)
            self.assertIn("oneway char 8KiB (≥ 10x) 5.00x", short)
            self.assertNotIn("more than raw TCP moved", "\n".join(lines))

    def test_a_section_7_row_past_the_raw_stream_is_marked_and_named(self):
        # Coalesced chars at 8 KiB: 9x of 10x, so 10000 Mbit/s needed; the
        # raw stream, a frame per write with Nagle on, moved at most 8000.
        res = with_separate(results(), 8192, [9000, 12000])
        res["tcp"][-1].update(mbps=7500, samples=[7000, 8000, 7500])
        _, _, short, _ = self.cells(res, self.SECTION_7)
        self.assertIn("oneway char 8KiB (≥ 10x, more than raw TCP moved) 9.00x", short)
        # Section 3's row is within the separate writes' reach: unmarked.
        self.assertIn("oneway char 8KiB (≥ 10x) 5.00x", self.cells(res, self.SECTION_3)[2])
        named = [p for p in paragraphs(run.targets(res)) if p.startswith("Beyond joining oneways")]
        self.assertEqual(len(named), 1)
        self.assertIn("1 of the rows short of section 7's target asks for more than raw TCP moved written that way (section 4's stream, its fastest run): "
                      "oneway char 8KiB (≥ 10x) needs 10000 Mbit/s, raw TCP written a frame per write with Nagle on moved at most 8000", named[0])
        self.assertFalse(any(p.startswith("Beyond one call at a time") for p in paragraphs(run.targets(res))))

    def test_a_section_7_row_within_the_raw_stream_is_not(self):
        res = with_separate(results(), 8192, [9000, 12000])
        _, _, short, _ = self.cells(res, self.SECTION_7)
        self.assertIn("oneway char 8KiB (≥ 10x) 9.00x", short)
        self.assertFalse(any(p.startswith("Beyond joining oneways") for p in paragraphs(run.targets(res))))


class JoinedByABusyServer(unittest.TestCase):
    """A server short of another under the omniORB client where the other,
    busy, got the client's oneways joined into far fewer segments."""

    def res(self, their_segs, their_cpu, their_mbps=(1100, 1100, 1100)):
        samples = {"ours>ours": [1200] * 3, "omniorb>ours": [1000] * 3, "ours>omniorb": [1000] * 3,
                   "omniorb>omniorb": [1000] * 3, "ours>tao": [1000] * 3, "omniorb>tao": list(their_mbps)}
        r = run.throughput_row("oneway", "char", 1024, SERVERS + ["tao"], samples,
                               {k: [their_cpu if k == "omniorb>tao" else 0.98] * 3 for k in samples},
                               {k: [their_segs if k == "omniorb>tao" else 1.0] * 3 for k in samples}, False, [])
        res = results()
        res["servers"] = SERVERS + ["tao"]
        res["throughput"] = [r]
        return res

    def note(self, res):
        return [l for l in run.targets(res) if l.startswith("Where a busy server")]

    def test_a_busy_server_that_joined_calls_is_named_with_its_figures(self):
        lines = self.note(self.res(17.7, 0.99))
        self.assertEqual(len(lines), 1)
        self.assertIn("oneway char 1KiB against TAO's server (0.91x): the omniORB client's segments carried 17.7 calls each to TAO's server, busy 0.99 of the run, and 1.0 to ours", lines[0])

    def test_not_where_the_other_server_was_idle_or_joined_as_few(self):
        self.assertEqual(self.note(self.res(17.7, 0.5)), [])
        self.assertEqual(self.note(self.res(2.5, 0.99)), [])
        # Nor where ours is not short of it.
        self.assertEqual(self.note(self.res(17.7, 0.99, (900, 900, 900))), [])
        # Nor from results without calls per segment (every round None).
        res = self.res(17.7, 0.99)
        res["throughput"][0]["calls_per_segment"] = {k: [None] * 3 for k in res["throughput"][0]["samples"]}
        self.assertEqual(self.note(res), [])


class FromJson(unittest.TestCase):
    def script(self, *args):
        return subprocess.run([sys.executable, run.__file__, *args], capture_output=True, text=True, timeout=60)

    def test_renders_the_report_and_figures_without_measuring(self):
        with tempfile.TemporaryDirectory() as d:
            src, doc = os.path.join(d, "r.json"), os.path.join(d, "performance.md")
            with open(src, "w") as f:
                json.dump(results(), f)
            p = self.script("--from-json", src, "--doc", doc)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(doc) as f:
                text = f.read()
            self.assertIn("commit `abc1234` (what was measured)", text)
            self.assertIn("(this copy re-rendered from `r.json`, without measuring again)", text)
            self.assertIn("The results behind every table: [`r.json`](r.json) (JSON, `iiopbench-compare/11`", text)
            self.assertIn("## Targets: what this run shows", text)
            self.assertIn("| oneway char 8 KiB | 1000 | 5000 | 5.00x [5.00–5.00] |", text)
            # Section 7: our coalescing client on each server.
            self.assertIn("## 7. Coalesced oneways", text)
            self.assertIn("| oneway char 8 KiB | 9000 | 8.18x [8.18–8.18] | 1000 | 1.00x [1.00–1.00] | 9.00x [9.00–9.00] |", text)
            # Section 4: frames per segment of both, where counted.
            self.assertIn("| 1 KiB | 8000 (spread 0%; 33.6 per segment) | not installed | 1200 (spread 0%; 1.0 per segment; iiopbench → iiopbench, octet) | 0.15x [0.15–0.15] |", text)
            for svg in ["client-vs-client.svg", "server-vs-server.svg", "buffered-oneways.svg", "coalesced-oneways.svg"]:
                self.assertTrue(os.path.getsize(os.path.join(d, "perf", svg)) > 0, svg)

    def test_results_go_beside_the_report_by_default(self):
        self.assertEqual(run.default_json("/x/docs/performance.md"), "/x/docs/perf/compare.json")

    def test_a_file_that_is_not_results_is_a_one_line_error(self):
        with tempfile.TemporaryDirectory() as d:
            bad, doc = os.path.join(d, "bad.json"), os.path.join(d, "performance.md")
            for content in ["not json", '{"schema": "other/1"}']:
                with open(bad, "w") as f:
                    f.write(content)
                p = self.script("--from-json", bad, "--doc", doc)
                self.assertEqual(p.returncode, 1)
                self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
                self.assertTrue(p.stderr.startswith("run.py: "), p.stderr)
                self.assertFalse(os.path.exists(doc))


if __name__ == "__main__":
    unittest.main()
