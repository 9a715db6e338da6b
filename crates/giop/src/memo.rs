//! Request headers remembered per connection, so that a call like the one
//! before costs neither side a header's encoding or decoding.
//!
//! A client calling one operation on one object sends the same Request
//! header every time but for the request id. On a loopback ping, encoding
//! it was a sixth of the client's own instructions per call and decoding
//! it a third of the server's (callgrind, beside `iiopbench orbs compare`), and
//! those instructions are most of what a GIOP round trip costs beyond a
//! raw TCP one.
//! Each keeps the last [`HEADS_KEPT`] headers, so that a client calling a
//! few operations in turn finds each again:
//! - [`RequestHeadCache`] (client): a header's bytes, copied with the new
//!   request id when a request has the same target, operation, response
//!   mode and encoding, and no service contexts.
//! - [`RequestHeadMemo`] (server): a header decoded, taken again when a
//!   Request's bytes are the same up to the header's end (the request id
//!   aside), once they came a second time. Decoding reads its bytes in order and decides
//!   each step by the bytes read so far, the message's version and byte
//!   order and the connection's options only, so the same bytes under the
//!   same settings decode to the same header and end at the same place:
//!   nothing is trusted that a full decode would have refused.
//!
//! Both hold copies, never the connection's buffers, and neither
//! allocates on a call that matches.

use bytes::{Bytes, BytesMut};
use iiop_cdr::{ByteOrder, Options, Reader};

use crate::context::{ServiceContext, ServiceContextList};
use crate::error::Result;
use crate::header::{Header, MsgType, Version, HEADER_LEN};
use crate::message::{
    begin, begin_request, body_pending, decode_request_header, read_u32_at, request_after_header,
    u32_bytes, Message, Pending, RequestHead, RequestHeader, ResponseMode, TargetAddress,
};

/// How many headers each side keeps per connection: a client that calls a
/// few operations in turn (get, set, …) finds each of them again.
pub const HEADS_KEPT: usize = 4;

/// After this many misses in a row with a full table, a side stops
/// looking for [`BYPASS_CALLS`] calls: a connection calling more
/// operations in turn than it keeps would otherwise pay for looking on
/// every call (5 operations in turn: 231 ns a header encoded and decoded
/// without keeping, 305 ns with, in `benches/header.rs`).
pub const MISSES_BEFORE_BYPASS: u32 = 16;

/// How many calls go the full way before keeping is tried again.
pub const BYPASS_CALLS: u32 = 1024;

/// What a header's bytes depend on besides the header: the message's
/// version and byte order and the connection's CDR options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Encoding {
    version: Version,
    order: ByteOrder,
    opts: Options,
}

/// Up to [`HEADS_KEPT`] entries, the oldest replaced first, and when to
/// stop looking among them.
#[derive(Debug)]
struct Kept<T> {
    entries: Vec<T>,
    /// The entry a new one replaces next (round robin).
    next: usize,
    /// Misses in a row with a full table.
    misses: u32,
    /// Calls left that go the full way without looking.
    skip: u32,
}

impl<T> Default for Kept<T> {
    fn default() -> Self {
        Kept {
            entries: Vec::new(),
            next: 0,
            misses: 0,
            skip: 0,
        }
    }
}

impl<T> Kept<T> {
    /// Whether this call looks among the entries (else it goes the full
    /// way, and counts down the bypass).
    fn look(&mut self) -> bool {
        if self.skip == 0 {
            return true;
        }
        self.skip -= 1;
        false
    }

    /// The first entry `is` holds for, counting the look as a hit or a
    /// miss.
    fn find(&mut self, is: impl Fn(&T) -> bool) -> Option<usize> {
        let found = self.entries.iter().position(is);
        match found {
            Some(_) => self.misses = 0,
            None if self.entries.len() == HEADS_KEPT => {
                self.misses += 1;
                if self.misses >= MISSES_BEFORE_BYPASS {
                    self.misses = 0;
                    self.skip = BYPASS_CALLS;
                }
            }
            None => {}
        }
        found
    }

    /// Room for a new entry: `fresh()` while there are fewer than
    /// [`HEADS_KEPT`], else the oldest, whose buffers the caller reuses.
    fn slot(&mut self, fresh: impl FnOnce() -> T) -> &mut T {
        let i = if self.entries.len() < HEADS_KEPT {
            self.entries.push(fresh());
            self.entries.len() - 1
        } else {
            let i = self.next;
            self.next = (i + 1) % HEADS_KEPT;
            i
        };
        &mut self.entries[i]
    }
}

/// The client's side: the last [`HEADS_KEPT`] Request headers encoded on a
/// connection whose target was an object key and which carried no service
/// contexts.
#[derive(Debug, Default)]
pub struct RequestHeadCache {
    kept: Kept<Encoded>,
}

/// One encoded header and what it was encoded from.
#[derive(Debug)]
struct Encoded {
    encoding: Encoding,
    response: ResponseMode,
    object_key: Bytes,
    operation: String,
    /// The header after the GIOP header, up to its end (the 1.2 body pad
    /// excluded).
    bytes: Vec<u8>,
}

impl RequestHeadCache {
    /// [`begin_request`]: the GIOP header, then the request header, copied
    /// from a kept one where only the id differs.
    pub fn begin_request(
        &mut self,
        buf: &mut BytesMut,
        version: Version,
        order: ByteOrder,
        opts: Options,
        head: &RequestHead<'_>,
    ) -> Result<Pending> {
        let TargetAddress::Key(object_key) = head.target else {
            return begin_request(buf, version, order, opts, head);
        };
        if !head.contexts.is_empty() || !self.kept.look() {
            return begin_request(buf, version, order, opts, head);
        }
        let encoding = Encoding {
            version,
            order,
            opts,
        };
        // The operation first: what differs between calls on one object.
        let found = self.kept.find(|e| {
            e.operation == head.operation
                && e.encoding == encoding
                && e.response == head.response
                && e.object_key == *object_key
        });
        // 1.2 leads with the id; 1.0 and 1.1 put the (empty) context list
        // first.
        let id_at = if version.is_12() { 0 } else { 4 };
        if let Some(i) = found {
            let start = begin(buf, version, order, MsgType::Request);
            let at = buf.len() + id_at;
            buf.extend_from_slice(&self.kept.entries[i].bytes);
            buf[at..at + 4].copy_from_slice(&u32_bytes(head.request_id, order));
            return Ok(body_pending(buf, version, order, opts, start, None));
        }
        let p = begin_request(buf, version, order, opts, head)?;
        let e = self.kept.slot(|| Encoded {
            encoding,
            response: head.response,
            object_key: Bytes::new(),
            operation: String::new(),
            bytes: Vec::new(),
        });
        e.encoding = encoding;
        e.response = head.response;
        e.object_key = object_key.clone();
        e.operation.clear();
        e.operation.push_str(head.operation);
        e.bytes.clear();
        e.bytes
            .extend_from_slice(&buf[p.start() + HEADER_LEN..p.head_end()]);
        Ok(p)
    }
}

/// The server's side: the last [`HEADS_KEPT`] Request headers decoded on
/// a connection.
#[derive(Debug, Default)]
pub struct RequestHeadMemo {
    kept: Kept<Decoded>,
}

/// A header's bytes and, once they came a second time, what they decode
/// to.
#[derive(Debug)]
struct Decoded {
    encoding: Encoding,
    /// The payload from its first byte to the header's end.
    bytes: Vec<u8>,
    /// Where in `bytes` the request id lies (excluded from the match).
    id_at: usize,
    /// The header, its bytes copied out of the message they came in.
    header: Option<RequestHeader>,
}

impl Decoded {
    fn matches(&self, encoding: &Encoding, payload: &[u8]) -> bool {
        let (n, at) = (self.bytes.len(), self.id_at);
        self.encoding == *encoding
            && payload.len() >= n
            && payload[..at] == self.bytes[..at]
            && payload[at + 4..n] == self.bytes[at + 4..]
    }
}

impl RequestHeadMemo {
    /// [`Message::decode_segmented`], the header of a Request taken from
    /// a kept one where the bytes are the same. Reassembled fragments
    /// (`segments`) are always decoded in full.
    pub fn decode(
        &mut self,
        header: &Header,
        payload: Bytes,
        segments: Option<std::sync::Arc<[usize]>>,
        opts: Options,
    ) -> Result<Message> {
        if header.msg_type != MsgType::Request || segments.is_some() || !self.kept.look() {
            return Message::decode_segmented(header, payload, segments, opts);
        }
        let (version, order) = (header.version, header.order);
        let encoding = Encoding {
            version,
            order,
            opts,
        };
        let mut r = Reader::from_bytes(&payload, order)
            .with_base(HEADER_LEN)
            .options(opts);
        let found = self.kept.find(|d| d.matches(&encoding, &payload));
        if let Some(d) = found.map(|i| &self.kept.entries[i]) {
            if let Some(known) = &d.header {
                let mut head = known.clone();
                head.request_id = read_u32_at(&payload, d.id_at, order);
                // The header's bytes were read when they were kept.
                let _ = r.take(d.bytes.len());
                let req = request_after_header(&mut r, version, head, &payload, &[]);
                return Ok(Message::Request(req));
            }
        }
        let (head, id_at) = decode_request_header(&mut r, version, &payload)?;
        let end = r.index();
        match found {
            // The second time: what the bytes decode to is kept too (the
            // same bytes end the header at the same place).
            Some(i) => {
                let d = &mut self.kept.entries[i];
                debug_assert_eq!((d.bytes.len(), d.id_at), (end, id_at));
                d.header = owned(&payload[..end], &head);
            }
            None => {
                let d = self.kept.slot(|| Decoded {
                    encoding,
                    bytes: Vec::new(),
                    id_at,
                    header: None,
                });
                d.encoding = encoding;
                d.id_at = id_at;
                d.header = None;
                d.bytes.clear();
                d.bytes.extend_from_slice(&payload[..end]);
            }
        }
        let req = request_after_header(&mut r, version, head, &payload, &[]);
        Ok(Message::Request(req))
    }
}

/// `head`, decoded from `bytes`, with its parts copied out of them; `None`
/// where the address is not an object key (the other addresses carry
/// whole profiles, which no client sends call after call) or a part does
/// not lie in `bytes`.
fn owned(bytes: &[u8], head: &RequestHeader) -> Option<RequestHeader> {
    let TargetAddress::Key(key) = &head.target else {
        return None;
    };
    let own = Bytes::copy_from_slice(bytes);
    let moved = |b: &Bytes| rebased(bytes, b).map(|r| own.slice(r));
    let contexts = head
        .contexts
        .0
        .iter()
        .map(|c| moved(&c.data).map(|data| ServiceContext { id: c.id, data }));
    Some(RequestHeader {
        request_id: 0,
        response: head.response,
        target: TargetAddress::Key(moved(key)?),
        operation: moved(&head.operation)?,
        contexts: ServiceContextList(contexts.collect::<Option<_>>()?),
        principal: moved(&head.principal)?,
    })
}

/// Where `part` lies in `within` (empty: anywhere); `None` if it is not
/// a slice of it.
fn rebased(within: &[u8], part: &[u8]) -> Option<std::ops::Range<usize>> {
    if part.is_empty() {
        return Some(0..0);
    }
    let at = (part.as_ptr() as usize).checked_sub(within.as_ptr() as usize)?;
    (at + part.len() <= within.len()).then(|| at..at + part.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const VERSIONS: [Version; 3] = [Version::V1_0, Version::V1_1, Version::V1_2];

    /// One call: which operation, object, response mode and contexts, and
    /// how many body bytes.
    #[derive(Debug, Clone)]
    struct Call {
        op: &'static str,
        key: &'static [u8],
        response: ResponseMode,
        contexts: bool,
        body: usize,
    }

    fn call() -> impl Strategy<Value = Call> {
        (
            prop::sample::select(vec!["ping", "echo_long", "x"]),
            prop::sample::select(vec![&b"K"[..], &b"BenchObject"[..], &b""[..]]),
            prop::sample::select(vec![ResponseMode::Twoway, ResponseMode::Oneway]),
            prop::bool::weighted(0.2),
            prop::sample::select(vec![0usize, 1, 5, 16]),
        )
            .prop_map(|(op, key, response, contexts, body)| Call {
                op,
                key,
                response,
                contexts,
                body,
            })
    }

    /// Calls that often repeat the one before (the memo's and the
    /// cache's case), with something else now and then.
    fn calls() -> impl Strategy<Value = Vec<Call>> {
        prop::collection::vec((call(), prop::bool::weighted(0.7)), 1..48).prop_map(|v| {
            let mut out: Vec<Call> = Vec::new();
            for (c, again) in v {
                let next = match (again, out.last()) {
                    (true, Some(last)) => last.clone(),
                    _ => c,
                };
                out.push(next);
            }
            out
        })
    }

    fn contexts(c: &Call) -> Vec<ServiceContext> {
        match c.contexts {
            true => vec![ServiceContext {
                id: 7,
                data: Bytes::from_static(&[0, 1, 2]),
            }],
            false => Vec::new(),
        }
    }

    /// The whole message for `c`, its header through `begin` (cached or
    /// not), then the body and the size.
    fn encode(
        begin: &mut dyn FnMut(&mut BytesMut, &RequestHead<'_>) -> Result<Pending>,
        c: &Call,
        id: u32,
    ) -> Vec<u8> {
        let target = TargetAddress::Key(Bytes::from_static(c.key));
        let contexts = contexts(c);
        let head = RequestHead {
            request_id: id,
            response: c.response,
            target: &target,
            operation: c.op,
            contexts: &contexts,
        };
        let mut buf = BytesMut::new();
        let p = begin(&mut buf, &head).unwrap();
        let mut w = p.writer(&mut buf);
        for i in 0..c.body {
            w.write_u8(i as u8);
        }
        p.finish(&mut buf).unwrap();
        buf.to_vec()
    }

    /// `ping()` on the object `key`.
    fn ping(key: &'static [u8]) -> Call {
        Call {
            op: "ping",
            key,
            response: ResponseMode::Twoway,
            contexts: false,
            body: 0,
        }
    }

    fn split(msg: &[u8]) -> (Header, Bytes) {
        let h = Header::parse(&msg[..HEADER_LEN]).unwrap();
        (h, Bytes::copy_from_slice(&msg[HEADER_LEN..]))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

        /// Every message the cache writes is byte for byte the one
        /// `begin_request` writes, whatever came before it.
        #[test]
        fn the_cache_writes_what_begin_request_writes(
            v in prop::sample::select(VERSIONS.to_vec()),
            big in any::<bool>(),
            calls in calls(),
        ) {
            let order = if big { ByteOrder::Big } else { ByteOrder::Little };
            let opts = Options::default();
            let mut cache = RequestHeadCache::default();
            for (i, c) in calls.iter().enumerate() {
                let id = 1000 + i as u32 * 7919;
                let cached = encode(&mut |b, h| cache.begin_request(b, v, order, opts, h), c, id);
                let plain = encode(&mut |b, h| begin_request(b, v, order, opts, h), c, id);
                prop_assert_eq!(cached, plain, "call {} {:?}", i, c);
            }
        }

        /// Every message the memo decodes is what a full decode gives,
        /// whatever came before it, also for a message cut short after a
        /// header the memo knows.
        #[test]
        fn the_memo_decodes_what_a_full_decode_gives(
            v in prop::sample::select(VERSIONS.to_vec()),
            big in any::<bool>(),
            calls in calls(),
            cuts in prop::collection::vec(0usize..40, 48),
        ) {
            let order = if big { ByteOrder::Big } else { ByteOrder::Little };
            let opts = Options::default();
            let mut memo = RequestHeadMemo::default();
            for (i, (c, cut)) in calls.iter().zip(&cuts).enumerate() {
                let msg = encode(&mut |b, h| begin_request(b, v, order, opts, h), c, i as u32);
                let (h, payload) = split(&msg);
                // A payload shorter than its header says (the codec never
                // passes one; the memo must not read past it either).
                let payload = match *cut {
                    0..=29 => payload,
                    n => payload.slice(..payload.len().saturating_sub(n - 29)),
                };
                let full = Message::decode(&h, payload.clone(), opts);
                let memo = memo.decode(&h, payload, None, opts);
                prop_assert_eq!(format!("{full:?}"), format!("{memo:?}"), "call {} {:?}", i, c);
            }
        }
    }

    /// Whether each kept header of `memo` is known (decoded), in order.
    fn known(memo: &RequestHeadMemo) -> Vec<bool> {
        memo.kept
            .entries
            .iter()
            .map(|d| d.header.is_some())
            .collect()
    }

    #[test]
    fn a_repeated_header_is_taken_from_the_memo_with_the_new_id() {
        let c = ping(b"BenchObject");
        let opts = Options::default();
        let mut memo = RequestHeadMemo::default();
        for id in 1..=3 {
            let msg = encode(
                &mut |b, h| begin_request(b, Version::V1_2, ByteOrder::Little, opts, h),
                &c,
                id,
            );
            let (h, payload) = split(&msg);
            let Message::Request(r) = memo.decode(&h, payload, None, opts).unwrap() else {
                panic!("not a request");
            };
            assert_eq!(r.header.request_id, id);
            assert_eq!(r.header.operation(), "ping");
            // Known after the second time.
            assert_eq!(known(&memo), [id >= 2], "call {id}");
        }
        // The memo's bytes are its own: not the last message's buffer.
        let d = &memo.kept.entries[0];
        let TargetAddress::Key(k) = &d.header.as_ref().unwrap().target else {
            panic!("not a key");
        };
        assert_eq!(&k[..], b"BenchObject");
    }

    #[test]
    fn operations_called_in_turn_are_all_kept_and_the_oldest_gives_way() {
        let ops = ["get", "set", "ping", "reset", "stats"];
        let opts = Options::default();
        let (mut memo, mut cache) = (RequestHeadMemo::default(), RequestHeadCache::default());
        let call = |memo: &mut RequestHeadMemo, cache: &mut RequestHeadCache, op, id| {
            let c = Call { op, ..ping(b"K") };
            let msg = encode(
                &mut |b, h| cache.begin_request(b, Version::V1_2, ByteOrder::Big, opts, h),
                &c,
                id,
            );
            let (h, payload) = split(&msg);
            let Ok(Message::Request(r)) = memo.decode(&h, payload, None, opts) else {
                panic!("not a request");
            };
            assert_eq!((r.header.operation(), r.header.request_id), (op, id));
        };
        // Four operations in turn, twice: all four known.
        for (id, op) in ops[..4].iter().cycle().take(8).enumerate() {
            call(&mut memo, &mut cache, op, id as u32);
        }
        assert_eq!(known(&memo), [true; 4]);
        assert_eq!(cache.kept.entries.len(), HEADS_KEPT);
        // A fifth takes the oldest place, not yet known.
        call(&mut memo, &mut cache, ops[4], 8);
        assert_eq!(known(&memo), [false, true, true, true]);
        let ops_kept: Vec<&str> = cache
            .kept
            .entries
            .iter()
            .map(|e| e.operation.as_str())
            .collect();
        assert_eq!(ops_kept, ["stats", "set", "ping", "reset"]);
        // Five in turn miss every time: after MISSES_BEFORE_BYPASS of them
        // both sides stop looking for a while, and every call still
        // decodes to what it said.
        let mut id = 9;
        for op in ops.iter().cycle().take(2 * MISSES_BEFORE_BYPASS as usize) {
            call(&mut memo, &mut cache, op, id);
            id += 1;
        }
        assert!(memo.kept.skip > 0 && cache.kept.skip > 0);
        let skipping = memo.kept.skip;
        call(&mut memo, &mut cache, "ping", id);
        assert_eq!(memo.kept.skip, skipping - 1);
    }

    #[test]
    fn other_options_decode_in_full() {
        let c = ping(b"K");
        let opts = Options::default();
        let mut memo = RequestHeadMemo::default();
        let msg = encode(
            &mut |b, h| begin_request(b, Version::V1_2, ByteOrder::Big, opts, h),
            &c,
            9,
        );
        let (h, payload) = split(&msg);
        for _ in 0..2 {
            memo.decode(&h, payload.clone(), None, opts).unwrap();
        }
        assert_eq!(known(&memo), [true]);
        let mut other = opts;
        other.limits.max_len = 3;
        // "ping" is longer than the other options allow: refused, as a
        // full decode refuses it, not taken from the memo.
        assert!(memo.decode(&h, payload.clone(), None, other).is_err());
        assert!(Message::decode(&h, payload, other).is_err());
    }
}
