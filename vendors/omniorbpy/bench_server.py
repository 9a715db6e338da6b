#!/usr/bin/env python3
"""bench.idl server on omniORBpy, per docs/vendor-protocol.md.

    bench_server.py --host HOST [--port PORT] [--ior-file FILE] [-ORB... options]

PORT 0 (the default) binds an ephemeral port, read back from the IOR.

Stubs come from `omniidl -bpython` (scripts/orbs/omniorbpy/build writes them
to target/vendor/omniorbpy/gen; BENCH_PY_STUBS overrides the directory).
Object keys are fixed through omniINSPOA (key = ObjectId). Counters follow
the COUNTERS section of fixtures/idl/bench.idl, computed from the decoded
Python values; a lock guards them since omniORBpy dispatches on several
threads (one per connection).
"""

import os
import random
import resource
import signal
import struct
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
STUBS = os.environ.get(
    "BENCH_PY_STUBS",
    os.path.join(HERE, "..", "..", "target", "vendor", "omniorbpy", "gen"),
)
sys.path.insert(0, STUBS)

import omniORB  # noqa: E402
from omniORB import CORBA, PortableServer  # noqa: E402

try:
    import Bench  # noqa: E402
    import Bench__POA  # noqa: E402
except ImportError as e:  # pragma: no cover - setup error
    sys.exit(f"bench_server.py: no bench.idl stubs in {STUBS} ({e}); run scripts/orbs/omniorbpy/build")

# 512 MiB: omniORB's default giopMaxMsgSize (2 MiB) rejects large sequences.
MAX_MSG = 512 * 1024 * 1024

# Wire stride of fixed-size element types (bench.idl COUNTERS).
STRIDE = {
    "short": 2, "ushort": 2, "long": 4, "ulong": 4, "float": 4, "longlong": 8,
    "ulonglong": 8, "double": 8, "char": 1, "octet": 1, "boolean": 1, "wchar": 2,
    "perfstruct": 24, "cd": 16, "charstruct": 1, "floatstruct": 4, "longstruct": 4,
    "doublestruct": 8, "longquad": 16, "mixedquad": 16, "floatpair": 8, "color": 4,
}
TOKENS = list(STRIDE) + ["string", "wstring", "mystruct", "variant"]


def str_bytes(s):
    """string on the wire: length field, characters (ISO-8859-1), NUL."""
    return 4 + len(s.encode("latin-1")) + 1


def variant_bytes(v):
    d = v._d
    if d == 1:
        return 4 + 4
    if d == 2:
        return 4 + 8
    if d == 3:
        return 4 + str_bytes(v._v)
    return 4 + 1


def payload_bytes(tok, seq):
    """Payload bytes of a decoded sequence by bench.idl's COUNTERS rules."""
    if tok in STRIDE:
        return len(seq) * STRIDE[tok]
    if tok == "string":
        return sum(str_bytes(s) for s in seq)
    if tok == "wstring":
        # UTF-16 code units: 2 bytes each (surrogate pairs count twice).
        return sum(4 + len(s.encode("utf-16-le")) for s in seq)
    if tok == "mystruct":
        return sum(1 + str_bytes(m.s) + 4 for m in seq)
    if tok == "variant":
        return sum(variant_bytes(v) for v in seq)
    raise ValueError(tok)


class Counters:
    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        with self.lock:
            self.calls = 0
            self.oneways = 0
            self.bytes = 0
            self.last_mark = 0
            self.disorder = 0
            self.cpu_base = cpu_seconds()

    def call(self, nbytes=0):
        with self.lock:
            self.calls += 1
            self.bytes += nbytes

    def oneway(self, nbytes=0):
        with self.lock:
            self.oneways += 1
            self.bytes += nbytes

    def mark(self, n):
        with self.lock:
            self.oneways += 1
            if n != self.last_mark + 1:
                self.disorder += 1
            self.last_mark = n

    def stats(self):
        with self.lock:
            return Bench.Stats(self.calls, self.oneways, self.bytes,
                               cpu_seconds() - self.cpu_base, self.last_mark, self.disorder)


def cpu_seconds():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def spend(us, spin):
    """Spends `us` microseconds sleeping or spinning; returns the time spent."""
    t0 = time.monotonic()
    if us > 60e6:  # more than a minute: refuse, as the C++ servers do
        raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO)
    if us > 0:  # also false for NaN
        if spin:
            end = t0 + us / 1e6
            while time.monotonic() < end:
                pass
        else:
            time.sleep(us / 1e6)
    return (time.monotonic() - t0) * 1e6


class Perf(Bench__POA.Perf):
    def __init__(self, counters, singles):
        self.c = counters
        self.singles = singles

    def ping(self):
        self.c.call()

    def reset(self):
        self.c.reset()

    def get_stats(self):
        return self.c.stats()

    def mark(self, n):
        self.c.mark(n)

    def work(self, service_us, dist, kind):
        self.c.call()
        us = service_us
        if dist == Bench.DIST_EXPONENTIAL and us > 0:
            us = random.expovariate(1.0 / us)
        return spend(us, kind == Bench.KIND_SPIN)

    def get_single(self, index):
        self.c.call()
        if index >= len(self.singles):
            raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO)
        return self.singles[index]

    def pass_cd(self, s):
        self.c.call(payload_bytes("cd", s))

    def pass_both(self, c, d):
        self.c.call(payload_bytes("char", c) + payload_bytes("double", d))

    def pass_chars(self, c):
        self.c.call(payload_bytes("char", c))

    def pass_doubles(self, d):
        self.c.call(payload_bytes("double", d))

    # Valuetypes (bench.idl's VALUETYPES): what came in goes back, so the
    # ORB marshals the same graph, sharing and cycles included. Counted as
    # calls, not bytes.
    def echo_node(self, n):
        self.c.call()
        return n

    def echo_nodes(self, s):
        self.c.call()
        return s

    def echo_box(self, b):
        self.c.call()
        return b

    def same_node(self, a, b):
        self.c.call()
        return a is b

    # ---- user exception and any (bench.idl's ANY AND USER EXCEPTIONS) ----
    def raise_user(self, code, reason, detail_len):
        self.c.call()
        if detail_len > 1 << 20:
            raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO)
        detail = bytes(i & 0xFF for i in range(detail_len))
        raise Bench.BenchError(code, reason, detail)

    def echo_any(self, a):
        self.c.call()
        return a
    # ---- end of user exception and any ----

    # Bidirectional GIOP (bench.idl's CALLBACKS) is not set up here: the
    # omniORB core would call back over a connection of its own unless its
    # POA had the BiDir policy, and this server's fixed keys live in
    # omniINSPOA, which has none. NO_IMPLEMENT says so; the interop suite
    # reports it as a skip.
    def call_back(self, cb, n):
        raise CORBA.NO_IMPLEMENT(0, CORBA.COMPLETED_NO)


def _add_payload_ops(cls):
    """send_oneway_T / send_T / echo_T for every token T."""
    for tok in TOKENS:
        def oneway(self, s, tok=tok):
            self.c.oneway(payload_bytes(tok, s))

        def send(self, s, tok=tok):
            self.c.call(payload_bytes(tok, s))

        def echo(self, s, tok=tok):
            self.c.call(payload_bytes(tok, s))
            return s

        setattr(cls, "send_oneway_" + tok, oneway)
        setattr(cls, "send_" + tok, send)
        setattr(cls, "echo_" + tok, echo)


_add_payload_ops(Perf)


class Single(Bench__POA.Single):
    def op(self):
        pass


def _noop(self):
    pass


class Dispatch50(Bench__POA.Dispatch50):
    pass


class Dispatch500(Bench__POA.Dispatch500):
    pass


for _i in range(50):
    setattr(Dispatch50, "m%02d" % _i, _noop)
for _i in range(500):
    setattr(Dispatch500, "m%03d" % _i, _noop)


def usage(why):
    sys.stderr.write(f"bench_server.py: {why}\n"
                     "usage: bench_server.py --host HOST [--port PORT] [--ior-file FILE]\n")
    sys.exit(2)


def parse_args(argv):
    host, port, ior_file, orb_args = "127.0.0.1", 0, None, []
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in ("--host", "--port", "--ior-file"):
            if i + 1 >= len(argv):
                usage(f"{a} needs a value")
            v = argv[i + 1]
            i += 2
            if a == "--host":
                host = v
            elif a == "--port":
                if not v.isdigit() or not 0 <= int(v) <= 65535:
                    usage("--port must be 0..65535 (0: an ephemeral port)")
                port = int(v)
            else:
                ior_file = v
        elif a.startswith("-ORB"):
            orb_args += argv[i:i + 2]
            i += 2
        else:
            usage(f"unknown argument {a}")
    return host, port, ior_file, orb_args


def iiop_port(ior):
    """The port of the first TAG_INTERNET_IOP profile of a stringified IOR
    (decoded by hand, like cxx-common/ior_addr.h): with --port 0 omniORB
    binds an ephemeral port and only the IOR tells which."""
    data = bytes.fromhex(ior[4:])

    def reader(buf):
        order = "<" if buf[0] else ">"
        pos = [1]

        def u32():
            pos[0] = (pos[0] + 3) & ~3
            v = struct.unpack_from(order + "I", buf, pos[0])[0]
            pos[0] += 4
            return v

        def u16():
            pos[0] = (pos[0] + 1) & ~1
            v = struct.unpack_from(order + "H", buf, pos[0])[0]
            pos[0] += 2
            return v

        def octets():
            n = u32()
            b = buf[pos[0]:pos[0] + n]
            if len(b) != n:
                raise ValueError("IOR truncated")
            pos[0] += n
            return b

        def skip(n):
            pos[0] += n

        return u32, u16, octets, skip

    u32, _, octets, _ = reader(data)
    octets()  # type_id
    for _ in range(u32()):
        tag, body = u32(), octets()
        if tag == 0:  # TAG_INTERNET_IOP: version, host, port, ...
            _, pu16, poctets, pskip = reader(body)
            pskip(2)
            poctets()
            return pu16()
    raise ValueError("no IIOP profile in " + ior)


def set_timer_slack():
    """work(KIND_SLEEP) accuracy: Linux lets a sleep overshoot by the timer
    slack (50 us by default); 1 ns, set before the ORB starts its threads,
    which inherit it. Returns the value for the config line."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(29, ctypes.c_ulong(1), 0, 0, 0) == 0:  # PR_SET_TIMERSLACK
            return "1"
    except (OSError, AttributeError):
        pass
    return "default"


def main(argv):
    host, port, ior_file, orb_args = parse_args(argv)
    slack = set_timer_slack()
    # Handlers first, so a stop signal right after `ready` still ends cleanly.
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    # Port 0: `giop:tcp:HOST:` (no port) makes omniORB bind an ephemeral one.
    endpoint = f"giop:tcp:{host}:{port or ''}"
    # Our settings first; -ORB options given on the command line come later
    # and win. maxServerThreadPerConnection 1 keeps one connection's requests
    # in arrival order (mark() disorder counting).
    args = [argv[0], "-ORBendPoint", endpoint, "-ORBgiopMaxMsgSize", str(MAX_MSG),
            "-ORBmaxServerThreadPerConnection", "1"] + orb_args
    orb = CORBA.ORB_init(args, CORBA.ORB_ID)
    poa = orb.resolve_initial_references("omniINSPOA")

    counters = Counters()
    singles = []
    for i in range(500):
        oid = f"Single{i}".encode()
        poa.activate_object_with_id(oid, Single())
        singles.append(poa.id_to_reference(oid))
    perf = Perf(counters, singles)
    poa.activate_object_with_id(b"Bench", perf)
    poa.activate_object_with_id(b"Dispatch50", Dispatch50())
    poa.activate_object_with_id(b"Dispatch500", Dispatch500())
    perf_ref = poa.id_to_reference(b"Bench")
    poa._get_the_POAManager().activate()

    ior = orb.object_to_string(perf_ref)
    ephemeral = port == 0
    if ephemeral:
        port = iiop_port(ior)
    if ior_file:
        with open(ior_file, "w") as f:
            f.write(ior + "\n")
    out = sys.stdout
    config = [
        ("orb", f"omniORBpy {omniORB.__version__}"),
        ("python", sys.version.split()[0]),
        ("endpoint", endpoint),
        ("max_message_size", str(MAX_MSG)),
        ("threads", "thread-per-connection"),
        ("maxServerThreadPerConnection", "1"),
        ("poa", "omniINSPOA (object key = ObjectId)"),
        ("timer_slack_ns", slack),
    ]
    if ephemeral:
        config.append(("port", f"{port} (ephemeral)"))
    for k, v in config:
        out.write(f"config {k}={v}\n")
    out.write(ior + "\n")
    for key in ("Bench", "Dispatch50", "Dispatch500", "Single0"):
        out.write(f"corbaloc {key} corbaloc:iiop:{host}:{port}/{key}\n")
    out.write("ready\n")
    out.flush()

    while not stop.wait(0.5):
        pass
    orb.shutdown(True)
    s = counters.stats()
    out.write(f"stats calls={s.calls} oneways={s.oneways} bytes={s.bytes}\n")
    out.flush()
    orb.destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
