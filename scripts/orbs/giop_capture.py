#!/usr/bin/env python3
"""GIOP capture helpers for fixtures/giop/jacorb and fixtures/giop/tao (used by
scripts/orbs/{jacorb,tao}/capture).

  giop_capture.py send HOST PORT
      A raw GIOP sender (no ORB): on one connection, sends hand-encoded,
      big-endian GIOP messages to a JacORB bench server -- a 1.2 Request for
      an operation Perf does not have (JacORB answers BAD_OPERATION), 1.2 and
      1.0 LocateRequests for a known and an unknown key, a 1.2 Request for an
      unknown key -- and prints each reply's header.

  giop_capture.py extract PCAP OUTDIR PREFIX SERVERPORT SERVER-ORB CLIENT-ORB
      Reassembles each TCP direction of PCAP (tshark fields), splits it into
      GIOP messages by their 12-byte headers, writes each message exactly as
      on the wire to OUTDIR/PREFIX-NN-<sender>-<type>.bin, and prints one
      manifest line per file (tab-separated: file, direction, sender ORB,
      GIOP version, byte order, what it is).
"""
import socket
import struct
import subprocess
import sys

MSG_TYPES = ["Request", "Reply", "CancelRequest", "LocateRequest", "LocateReply",
             "CloseConnection", "MessageError", "Fragment"]
REPLY_STATUS = ["NO_EXCEPTION", "USER_EXCEPTION", "SYSTEM_EXCEPTION", "LOCATION_FORWARD",
                "LOCATION_FORWARD_PERM", "NEEDS_ADDRESSING_MODE"]
LOCATE_STATUS = ["UNKNOWN_OBJECT", "OBJECT_HERE", "OBJECT_FORWARD", "OBJECT_FORWARD_PERM",
                 "LOC_SYSTEM_EXCEPTION", "LOC_NEEDS_ADDRESSING_MODE"]
CONTEXT_NAMES = {0: "TransactionService", 1: "CodeSets", 5: "BI_DIR_IIOP", 11: "FT_REQUEST",
                 14: "ExceptionDetailMessage", 15: "SecurityAttributeService",
                 0x4A414301: "JacORB-SERVICE_PADDING_CONTEXT"}


# ---- encoding (big-endian, alignment from the start of the message) -----

class Enc:
    def __init__(self):
        self.b = bytearray(12)  # room for the GIOP header

    def align(self, n):
        while len(self.b) % n:
            self.b.append(0)

    def u8(self, v):
        self.b.append(v)

    def u16(self, v):
        self.align(2)
        self.b += struct.pack(">H", v)

    def u32(self, v):
        self.align(4)
        self.b += struct.pack(">I", v)

    def octets(self, data):
        self.u32(len(data))
        self.b += data

    def string(self, s):
        self.u32(len(s) + 1)
        self.b += s.encode("ascii") + b"\0"

    def message(self, minor, msg_type):
        body = len(self.b) - 12
        self.b[0:12] = b"GIOP" + bytes([1, minor, 0, msg_type]) + struct.pack(">I", body)
        return bytes(self.b)


def request_12(req_id, key, op):
    e = Enc()
    e.u32(req_id)
    e.u8(3)               # response_flags: twoway
    e.b += b"\0\0\0"      # reserved
    e.u16(0)              # TargetAddress: KeyAddr
    e.octets(key)
    e.string(op)
    e.u32(0)              # no service contexts; empty body, no padding
    return e.message(2, 0)


def locate_request(minor, req_id, key):
    e = Enc()
    e.u32(req_id)
    if minor >= 2:
        e.u16(0)          # TargetAddress: KeyAddr
    e.octets(key)
    return e.message(minor, 3)


def read_message(sock):
    head = b""
    while len(head) < 12:
        chunk = sock.recv(12 - len(head))
        if not chunk:
            raise EOFError("peer closed the connection after %d header bytes" % len(head))
        head += chunk
    if head[:4] != b"GIOP":
        raise ValueError("reply does not start with GIOP: %r" % head)
    order = "<" if head[6] & 1 else ">"
    size = struct.unpack(order + "I", head[8:12])[0]
    if size > 64 << 20:
        raise ValueError("reply size %d above the 64 MiB limit" % size)
    body = b""
    while len(body) < size:
        chunk = sock.recv(size - len(body))
        if not chunk:
            raise EOFError("peer closed the connection at body byte %d of %d" % (len(body), size))
        body += chunk
    return head + body


def send(host, port):
    msgs = [
        ("1.2 Request no_such_op on Bench", request_12(1, b"Bench", "no_such_op")),
        ("1.2 LocateRequest Bench", locate_request(2, 2, b"Bench")),
        ("1.0 LocateRequest Bench", locate_request(0, 3, b"Bench")),
        ("1.2 LocateRequest NoSuchKey", locate_request(2, 4, b"NoSuchKey")),
        ("1.2 Request ping on NoSuchKey", request_12(5, b"NoSuchKey", "ping")),
        ("1.2 LocateRequest full POA key", locate_request(2, 6, b"iiopbench/bench/Bench")),
    ]
    with socket.create_connection((host, port), timeout=10) as s:
        for what, m in msgs:
            s.sendall(m)
            reply = read_message(s)
            print("%-32s -> %s" % (what, describe(reply)))


# ---- decoding for the manifest ------------------------------------------

class Dec:
    def __init__(self, msg):
        self.m = msg
        self.le = bool(msg[6] & 1) if msg[5] >= 1 else bool(msg[6])
        self.o = "<" if self.le else ">"
        self.p = 12

    def align(self, n):
        self.p = (self.p + n - 1) // n * n

    def take(self, n):
        if self.p + n > len(self.m):
            raise ValueError("need %d bytes at offset %d, message has %d" % (n, self.p, len(self.m)))
        v = self.m[self.p:self.p + n]
        self.p += n
        return v

    def u8(self):
        return self.take(1)[0]

    def u16(self):
        self.align(2)
        return struct.unpack(self.o + "H", self.take(2))[0]

    def u32(self):
        self.align(4)
        return struct.unpack(self.o + "I", self.take(4))[0]

    def octets(self):
        return self.take(self.u32())

    def string(self):
        return self.octets().rstrip(b"\0").decode("latin-1")

    def contexts(self):
        n = self.u32()
        ids = []
        for _ in range(n):
            ids.append(self.u32())
            self.octets()
        return ids

    def target(self):
        disc = self.u16()
        if disc == 0:
            return self.octets()
        return "<TargetAddress %d>" % disc


def ctx_names(ids):
    return ",".join(CONTEXT_NAMES.get(i, str(i)) for i in ids) or "none"


def key_text(k):
    if isinstance(k, str):
        return k
    return k.decode("latin-1").encode("unicode_escape").decode("ascii")


def describe(msg):
    d = Dec(msg)
    minor, t = msg[5], msg[7]
    name = MSG_TYPES[t] if t < len(MSG_TYPES) else "type%d" % t
    try:
        if t == 0:  # Request
            if minor >= 2:
                rid = d.u32()
                flags = d.u8()
                d.take(3)
                key = d.target()
                op = d.string()
                ctx = d.contexts()
                resp = {0: "oneway", 1: "sync-with-server", 3: "twoway"}.get(flags, "flags %d" % flags)
            else:
                ctx = d.contexts()
                rid = d.u32()
                resp = "twoway" if d.u8() else "oneway"
                if minor == 1:
                    d.take(3)
                key = d.octets()
                op = d.string()
                d.octets()
            body = len(msg) - d.p
            return ("Request id=%d %s op=%s key=%s contexts=%s, %d bytes after the header fields"
                    % (rid, resp, op, key_text(key), ctx_names(ctx), body))
        if t == 1:  # Reply
            if minor >= 2:
                rid = d.u32()
                status = d.u32()
                ctx = d.contexts()
            else:
                ctx = d.contexts()
                rid = d.u32()
                status = d.u32()
            st = REPLY_STATUS[status] if status < len(REPLY_STATUS) else str(status)
            extra = ""
            if status in (1, 2):
                if minor >= 2 and d.p < len(msg):
                    d.align(8)
                extra = " " + d.string()
                if status == 2:
                    minor_code = d.u32()
                    completed = d.u32()
                    extra += " minor=0x%08x completed=%s" % (
                        minor_code, ["YES", "NO", "MAYBE"][completed] if completed < 3 else completed)
            else:
                extra = ", %d body bytes" % (len(msg) - d.p)
            return "Reply id=%d %s%s contexts=%s" % (rid, st, extra, ctx_names(ctx))
        if t == 3:
            rid = d.u32()
            key = d.target() if minor >= 2 else d.octets()
            return "LocateRequest id=%d key=%s" % (rid, key_text(key))
        if t == 4:
            rid = d.u32()
            status = d.u32()
            st = LOCATE_STATUS[status] if status < len(LOCATE_STATUS) else str(status)
            return "LocateReply id=%d %s, %d body bytes after status" % (rid, st, len(msg) - d.p)
        return name
    except (ValueError, IndexError, UnicodeDecodeError) as e:
        return "%s (not decoded: %s)" % (name, e)


def streams(pcap):
    """{(stream, srcport): bytes} in capture order, from tshark fields."""
    out = subprocess.run(
        ["tshark", "-r", pcap, "-Y", "tcp.len > 0", "-T", "fields", "-e", "tcp.stream",
         "-e", "tcp.srcport", "-e", "tcp.dstport", "-e", "tcp.seq", "-e", "tcp.payload"],
        check=True, capture_output=True, text=True).stdout
    data = {}
    seen = set()
    order = []
    for line in out.splitlines():
        stream, sport, dport, seq, payload = line.split("\t")
        k = (int(stream), int(sport), int(dport))
        if (k, seq) in seen:  # a retransmission
            continue
        seen.add((k, seq))
        if k not in data:
            data[k] = bytearray()
            order.append(k)
        data[k] += bytes.fromhex(payload.replace(":", ""))
    return order, data


def extract(pcap, outdir, prefix, server_port, server_orb, client_orb):
    order, data = streams(pcap)
    msgs = []  # (first-seen order, direction key, message)
    for k in order:
        buf = data[k]
        p = 0
        while p + 12 <= len(buf):
            if buf[p:p + 4] != b"GIOP":
                raise SystemExit("%s stream %s: no GIOP magic at offset %d" % (pcap, k, p))
            le = bool(buf[p + 6] & 1) if buf[p + 5] >= 1 else bool(buf[p + 6])
            size = struct.unpack("<I" if le else ">I", buf[p + 8:p + 12])[0]
            if p + 12 + size > len(buf):
                raise SystemExit("%s stream %s: message at %d truncated" % (pcap, k, p))
            msgs.append((k, bytes(buf[p:p + 12 + size])))
            p += 12 + size
        if p != len(buf):
            raise SystemExit("%s stream %s: %d trailing bytes" % (pcap, k, len(buf) - p))
    # Interleave the two directions of each connection in request/reply order:
    # a reply carries the request id of its request.
    n = 0
    for k, m in sorted_messages(msgs):
        n += 1
        from_server = k[1] == server_port
        sender = server_orb if from_server else client_orb
        receiver = client_orb if from_server else server_orb
        t = MSG_TYPES[m[7]] if m[7] < len(MSG_TYPES) else "type%d" % m[7]
        tag = "server" if from_server else "client"
        fname = "%s-%02d-%s-%s.bin" % (prefix, n, tag, t.lower())
        with open("%s/%s" % (outdir, fname), "wb") as f:
            f.write(m)
        le = bool(m[6] & 1) if m[5] >= 1 else bool(m[6])
        print("\t".join([fname, "%s -> %s" % (sender, receiver), sender, "1.%d" % m[5],
                         "little-endian" if le else "big-endian", describe(m)]))


def sorted_messages(msgs):
    """Client messages in order; each followed by the server messages that
    answer it (same request id), server messages without one at the end."""
    def rid(m):
        if m[7] in (0, 1, 3, 4) and len(m) >= 16:
            d = Dec(m)
            if m[7] == 0 and m[5] < 2:
                d.contexts()
            if m[7] == 1 and m[5] < 2:
                d.contexts()
            return d.u32()
        return None
    out = []
    used = set()
    for i, (k, m) in enumerate(msgs):
        if i in used or m[7] not in (0, 3):
            continue
        out.append((k, m))
        used.add(i)
        for j, (k2, m2) in enumerate(msgs):
            if j not in used and k2[0] == k[0] and k2[1] == k[2] and m2[7] in (1, 4) \
                    and rid(m2) == rid(m) and (m2[7] == 1) == (m[7] == 0):
                out.append((k2, m2))
                used.add(j)
                break
    out += [x for i, x in enumerate(msgs) if i not in used]
    return out


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "send":
        send(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) == 8 and sys.argv[1] == "extract":
        extract(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6], sys.argv[7])
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)
