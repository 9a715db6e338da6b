//! The suite's valuetype checks (bench.idl's VALUETYPES): our client sends
//! values in the encodings a peer must read — unchunked and chunked, a
//! chunk per member with coalesced end tags, repository ids indirected,
//! null, one value twice (an indirection), a cycle, a truncatable type
//! the server knows and one it cannot know — and checks that what comes
//! back is the same graph, sharing and cycles included. The server
//! encodes its reply as it likes; each check says how it did (chunked or
//! not, which type information), and a failure shows the bytes both ways.

use std::collections::HashMap;

use bytes::BytesMut;
use iiop_bench_idl::bench::values::{read_long_box, write_long_box, NodeEncoding, Nodes};
use iiop_bench_idl::client::{BenchClient, BenchError};
use iiop_cdr::valuetype::{ValueReader, CHUNKED, CODEBASE_URL, ID_LIST, SINGLE_ID, VALUE_TAG};
use iiop_cdr::{ByteOrder, CdrError, Reader, ValueStyle, Writer};
use iiop_giop::message::Body;
use iiop_giop::Version;
use iiop_transport::client::ClientError;

use super::check::{describe, hex, Check, Verdict, PADDING_RULE};

/// A repository id no server can know: a truncatable type derived from
/// Node, which the server must cut down to its Node part.
pub const UNKNOWN_NODE_ID: &str = "IDL:iiopbench/UnknownNode:1.0";

/// Bytes of a request or reply shown in a failure's detail.
const HEX_MAX: usize = 160;

/// What one check sends.
enum Call {
    /// `echo_node(root)`.
    Node(Option<usize>),
    /// `echo_nodes(roots)`.
    Nodes(Vec<Option<usize>>),
    /// `same_node(a, b)`, the answer expected.
    Same(Option<usize>, Option<usize>, bool),
    /// `echo_box(b)`.
    Box(Option<i32>),
}

/// One check: its name, the graph, the call and the encoding.
struct Case {
    name: &'static str,
    call: Call,
    enc: NodeEncoding,
    /// What the server must return instead of the input graph (a
    /// truncated one).
    expect: Option<Nodes>,
}

/// The nodes every check draws on: a chain a → b → c, a cycle x → y → x,
/// a TaggedNode t → a, two TaggedNodes u, v, and p, q equal but two.
struct Graph {
    nodes: Nodes,
    a: usize,
    x: usize,
    t: usize,
    u: usize,
    v: usize,
    p: usize,
    q: usize,
}

fn graph() -> Graph {
    let mut n = Nodes::default();
    let c = n.push(3, "c", None);
    let b = n.push(2, "b", Some(c));
    let a = n.push(1, "a", Some(b));
    let x = n.push(10, "x", None);
    let y = n.push(11, "y", Some(x));
    n.nodes[x].next = Some(y);
    let t = n.push(20, "tagged", Some(a));
    n.nodes[t].tag = Some("t-tag".into());
    let u = n.push(30, "u", None);
    n.nodes[u].tag = Some("u-tag".into());
    let v = n.push(31, "v", Some(u));
    n.nodes[v].tag = Some("v-tag".into());
    let p = n.push(5, "same", None);
    let q = n.push(5, "same", None);
    Graph {
        nodes: n,
        a,
        x,
        t,
        u,
        v,
        p,
        q,
    }
}

fn cases(g: &Graph) -> Vec<Case> {
    let plain = NodeEncoding::default();
    let chunked = NodeEncoding {
        chunk_all: true,
        ..NodeEncoding::default()
    };
    let per_member = NodeEncoding {
        chunk_all: true,
        omit_ids: true,
        style: ValueStyle {
            coalesce_end_tags: true,
            chunk_size: Some(1),
            ..ValueStyle::default()
        },
        ..NodeEncoding::default()
    };
    let shared_ids = NodeEncoding {
        style: ValueStyle {
            share_ids: true,
            ..ValueStyle::default()
        },
        ..NodeEncoding::default()
    };
    let case = |name, call, enc: &NodeEncoding| Case {
        name,
        call,
        enc: enc.clone(),
        expect: None,
    };
    // Unchunked first, then chunked: a server that cannot read a
    // chunked value and closes (or dies) costs only the checks after it.
    vec![
        case(
            "value: echo_node chain, unchunked",
            Call::Node(Some(g.a)),
            &plain,
        ),
        case(
            "value: echo_node chain, no type information",
            Call::Node(Some(g.a)),
            &NodeEncoding {
                omit_ids: true,
                ..NodeEncoding::default()
            },
        ),
        case("value: echo_node null", Call::Node(None), &plain),
        case(
            "value: echo_nodes one value twice (indirection)",
            Call::Nodes(vec![Some(g.a), Some(g.a), None]),
            &plain,
        ),
        case("value: echo_node cycle", Call::Node(Some(g.x)), &plain),
        case(
            "value: echo_nodes repository ids indirected",
            Call::Nodes(vec![Some(g.a), Some(g.x)]),
            &shared_ids,
        ),
        case(
            "value: same_node one value twice",
            Call::Same(Some(g.a), Some(g.a), true),
            &plain,
        ),
        case(
            "value: same_node two equal values",
            Call::Same(Some(g.p), Some(g.q), false),
            &plain,
        ),
        case("value: echo_box 42", Call::Box(Some(42)), &plain),
        case("value: echo_box null", Call::Box(None), &plain),
        case("value: echo_box chunked", Call::Box(Some(-1)), &chunked),
        case(
            "value: echo_node cycle, chunked",
            Call::Node(Some(g.x)),
            &chunked,
        ),
        case(
            "value: echo_node TaggedNode (truncatable, chunked)",
            Call::Node(Some(g.t)),
            &plain,
        ),
        case(
            "value: echo_nodes TaggedNodes, id list indirected",
            Call::Nodes(vec![Some(g.v), Some(g.u)]),
            &shared_ids,
        ),
        Case {
            name: "value: echo_node unknown truncatable type, truncated to Node",
            call: Call::Node(Some(g.t)),
            enc: NodeEncoding {
                tagged_id: Some(UNKNOWN_NODE_ID.into()),
                ..NodeEncoding::default()
            },
            expect: Some(g.nodes.truncated()),
        },
        case(
            "value: echo_node chain, chunked",
            Call::Node(Some(g.a)),
            &chunked,
        ),
        case(
            "value: echo_node chain, a chunk per member, end tags coalesced",
            Call::Node(Some(g.a)),
            &per_member,
        ),
    ]
}

/// The operation a call invokes.
fn op(call: &Call) -> &'static str {
    match call {
        Call::Node(_) => "echo_node",
        Call::Nodes(_) => "echo_nodes",
        Call::Same(..) => "same_node",
        Call::Box(_) => "echo_box",
    }
}

/// Write a call's arguments (one valuetype scope for all of them).
fn args(g: &Graph, call: &Call, enc: &NodeEncoding, w: &mut Writer<'_>) -> Result<(), CdrError> {
    let mut vw = enc.writer();
    match call {
        Call::Node(root) => g.nodes.write(w, &mut vw, *root, enc),
        Call::Nodes(roots) => {
            w.write_len(roots.len())?;
            for &r in roots {
                g.nodes.write(w, &mut vw, r, enc)?;
            }
            Ok(())
        }
        Call::Same(a, b, _) => {
            g.nodes.write(w, &mut vw, *a, enc)?;
            g.nodes.write(w, &mut vw, *b, enc)
        }
        Call::Box(b) => write_long_box(w, &mut vw, *b, enc),
    }
}

/// How a value header at the start of `body` (after `skip` bytes) is
/// encoded, in words: `chunked, repository id` and the like.
fn encoding_of(body: &Body, skip: usize) -> String {
    let mut r = body.reader(Default::default());
    if r.take(skip).is_err() || r.align(4).is_err() {
        return "empty".into();
    }
    let Ok(tag) = r.read_u32() else {
        return "empty".into();
    };
    match tag {
        0 => "null".into(),
        0xffff_ffff => "an indirection".into(),
        t if t >= VALUE_TAG => {
            let mut s = String::from(if t & CHUNKED != 0 {
                "chunked"
            } else {
                "unchunked"
            });
            s.push_str(match t & ID_LIST {
                0 => ", no type information",
                SINGLE_ID => ", a repository id",
                ID_LIST => ", a repository id list",
                _ => ", undefined type information",
            });
            if t & CODEBASE_URL != 0 {
                s.push_str(", a codebase URL");
            }
            s
        }
        t => format!("tag 0x{t:08x}"),
    }
}

/// Decode a reply: what it holds, then check nothing but padding follows.
fn reply<T>(
    c: &BenchClient,
    body: &Body,
    f: impl FnOnce(&mut Reader<'_>) -> Result<T, CdrError>,
) -> Result<T, String> {
    let mut r = body.reader(c.options());
    let v = f(&mut r).map_err(|e| format!("the reply does not decode: {e}"))?;
    if !r.only_padding_left() {
        return Err(format!(
            "{} bytes after the result ({PADDING_RULE})",
            r.remaining()
        ));
    }
    Ok(v)
}

/// The verdict on a graph that came back: the graph expected passes; a
/// TaggedNode cut down to its Node part is a note (bench.idl allows a
/// server that knows only Node to truncate).
fn judge_graph(
    want: &Nodes,
    roots: &[Option<usize>],
    got: &Nodes,
    back: &[Option<usize>],
    detail: String,
    bytes: impl Fn() -> String,
) -> Result<(Verdict, String), String> {
    match want.differs(roots, got, back) {
        None => Ok((Verdict::Pass, detail)),
        Some(d) => match want.truncated().differs(roots, got, back) {
            None => Ok((
                Verdict::Note,
                format!("TaggedNodes came back truncated to Node (allowed); {detail}"),
            )),
            Some(_) => Err(format!("{d}; {}", bytes())),
        },
    }
}

/// Run one case: `Ok((verdict, detail))` or `Err(detail)` (a failure).
async fn run_case(c: &BenchClient, g: &Graph, case: &Case) -> Result<(Verdict, String), String> {
    let body = c
        .call(op(&case.call), |w| args(g, &case.call, &case.enc, w))
        .await
        .map_err(|e| describe(&e))?;
    let back = || format!("reply body {}", hex(&body.bytes, HEX_MAX));
    let want = case.expect.as_ref().unwrap_or(&g.nodes);
    match &case.call {
        Call::Node(root) => {
            let (nodes, r) = reply(c, &body, |r| {
                let mut n = Nodes::default();
                let root = n.read(r, &mut ValueReader::new(), &mut HashMap::new())?;
                Ok((n, root))
            })
            .map_err(|e| format!("{e}; {}", back()))?;
            let detail = format!(
                "{} node(s) back; reply {}",
                nodes.nodes.len(),
                encoding_of(&body, 0)
            );
            judge_graph(want, &[*root], &nodes, &[r], detail, back)
        }
        Call::Nodes(roots) => {
            let (nodes, r) = reply(c, &body, |r| {
                let k = r.read_len(4)?;
                let mut n = Nodes::default();
                let (mut vr, mut numbers) = (ValueReader::new(), HashMap::new());
                let mut out = Vec::with_capacity(k);
                for _ in 0..k {
                    out.push(n.read(r, &mut vr, &mut numbers)?);
                }
                Ok((n, out))
            })
            .map_err(|e| format!("{e}; {}", back()))?;
            let detail = format!(
                "{} node(s) back for {} elements; reply {}",
                nodes.nodes.len(),
                r.len(),
                encoding_of(&body, 4)
            );
            judge_graph(want, roots, &nodes, &r, detail, back)
        }
        Call::Same(_, _, expected) => {
            let same =
                reply(c, &body, |r| r.read_bool()).map_err(|e| format!("{e}; {}", back()))?;
            if same == *expected {
                Ok((Verdict::Pass, same.to_string()))
            } else {
                Err(format!("{same}, expected {expected}"))
            }
        }
        Call::Box(b) => {
            let got = reply(c, &body, |r| {
                read_long_box(r, &mut ValueReader::new(), &mut HashMap::new())
            })
            .map_err(|e| format!("{e}; {}", back()))?;
            if got == *b {
                Ok((
                    Verdict::Pass,
                    format!("{got:?}; reply {}", encoding_of(&body, 0)),
                ))
            } else {
                Err(format!("{got:?}, expected {b:?}; {}", back()))
            }
        }
    }
}

/// The request arguments as bytes (encoded from a GIOP 1.2 body's
/// 8-aligned start, as sent in 1.2), for a failure's detail.
fn request_hex(g: &Graph, case: &Case, order: ByteOrder) -> String {
    let mut buf = BytesMut::new();
    match args(g, &case.call, &case.enc, &mut Writer::new(&mut buf, order)) {
        Ok(()) => hex(&buf, HEX_MAX),
        Err(e) => format!("(not encodable: {e})"),
    }
}

/// Whether a call failed because the server has no such operation (a
/// server built from a bench.idl without valuetypes, or one that leaves
/// them out).
fn not_implemented(e: &BenchError) -> bool {
    matches!(e, BenchError::Call(ClientError::System(x))
        if matches!(x.name(), "BAD_OPERATION" | "NO_IMPLEMENT"))
}

/// How many valuetype checks there are.
pub fn count() -> usize {
    cases(&graph()).len()
}

/// Why every valuetype check is a skip on this server (it does not
/// implement the operations), or `None` to run them: one call of
/// `echo_node(null)` tells.
pub async fn probe(c: &BenchClient) -> Option<String> {
    match c
        .echo_node(&Nodes::default(), None, &NodeEncoding::default())
        .await
    {
        Err(e) if not_implemented(&e) => Some(format!(
            "the server does not implement bench.idl's valuetype operations ({})",
            describe(&e)
        )),
        _ => None,
    }
}

/// A peer's known valuetype defect, by its ORB (TAG_ORB_TYPE): what the
/// check runs into, and whether sending it would take the server down.
struct Defect {
    /// Not sent: the server aborts on it.
    fatal: bool,
    why: &'static str,
}

/// The defect of ORB `orb` that check `name` runs into, if any.
fn known_defect(orb: Option<&str>, name: &str) -> Option<Defect> {
    const OMNIORB_NESTED: &str = "omniORB (4.2.5, and 4.3.3 under omniORBpy) aborts \
        (assertion pd_nestLevel == 0 in cdrValueChunkStream.cc) on end tags back to back (a \
        chunked value nested in a chunked value that ends right after it, each with an end tag \
        of its own; one coalesced end tag it reads); the server dies, so the check is not sent; tracker: no \
        entry known, the gap is in omniORB's cdrValueChunkStream.cc";
    const TAO_CHUNKS: &str = "TAO (2.2.2) reads chunked values only as it writes them, a \
        nested value inside the enclosing chunk (chunks are never nested: a nested value ends the \
        enclosing chunk, CORBA 3.0, 15.3.4.6): a nested value's own chunk or end tag is MARSHAL \
        (with -ORBDebugLevel 10 it logs \"TAO_ChunkInfo::handle_chunking, received end tag ... > \
        value_nesting_level ...\"), and a chunked value box comes back as its chunk's length; \
        tracker: no entry known, the gap is in TAO's TAO_ChunkInfo (tao/Valuetype/ValueBase.cpp)";
    match (orb?, name) {
        (
            "omniORB",
            "value: echo_node cycle, chunked"
            | "value: echo_node chain, chunked"
            | "value: echo_node TaggedNode (truncatable, chunked)"
            | "value: echo_node unknown truncatable type, truncated to Node",
        ) => Some(Defect {
            fatal: true,
            why: OMNIORB_NESTED,
        }),
        (
            "TAO",
            "value: echo_node chain, chunked"
            | "value: echo_node chain, a chunk per member, end tags coalesced"
            | "value: echo_node cycle, chunked"
            | "value: echo_node TaggedNode (truncatable, chunked)"
            | "value: echo_node unknown truncatable type, truncated to Node"
            | "value: echo_nodes TaggedNodes, id list indirected",
        ) => Some(Defect {
            fatal: false,
            why: TAO_CHUNKS,
        }),
        ("TAO", "value: echo_box chunked") => Some(Defect {
            fatal: false,
            why: TAO_CHUNKS,
        }),
        ("JacORB", "value: echo_box chunked") => Some(Defect {
            fatal: false,
            why: "JacORB reads a chunked value box as if unchunked (it returns the chunk's \
                length as the value); tracker: no entry known, the gap is in JacORB's value reader",
        }),
        ("JacORB", "value: echo_nodes TaggedNodes, id list indirected") => Some(Defect {
            fatal: false,
            why: "JacORB cannot read an indirection in place of a repository id list \
                (NegativeArraySizeException: it takes the marker as the list's length); tracker: no \
                entry known, the gap is in JacORB's value reader",
        }),
        _ => None,
    }
}

/// A check that could not run: `why` (a connect failure) as its failure.
pub fn not_run(index: usize, why: String) -> Check {
    let g = graph();
    let case = &cases(&g)[index];
    Check::new(case.name, "echo").set(Verdict::Fail, why)
}

/// Valuetype check number `index` on connection `c` (GIOP `version`, the
/// host's byte order) to a server of ORB `orb` (its TAG_ORB_TYPE name); a
/// skip for `missing`'s reason if set (from [`probe`]). A check the ORB
/// is known to fail is a skip naming its defect, with the bytes (not sent
/// at all if it takes the server down); one it passes is a pass.
pub async fn check(
    c: &BenchClient,
    version: Version,
    index: usize,
    missing: Option<&str>,
    orb: Option<&str>,
) -> Check {
    let g = graph();
    let case = &cases(&g)[index];
    let mut k = Check::new(case.name, "echo");
    k.ty = "valuetype".into();
    k.giop = version.to_string();
    k.calls = 1;
    if let Some(why) = missing {
        return k.set(Verdict::Skip, why);
    }
    // The main connection speaks the host's byte order.
    let request = || request_hex(&g, case, ByteOrder::NATIVE);
    let defect = known_defect(orb, case.name);
    if let Some(d) = defect.as_ref().filter(|d| d.fatal) {
        k.calls = 0;
        return k.set(
            Verdict::Skip,
            format!("known defect: {}; request arguments {}", d.why, request()),
        );
    }
    let t = std::time::Instant::now();
    let r = run_case(c, &g, case).await;
    k.seconds = t.elapsed().as_secs_f64();
    match (r, defect) {
        (Ok((v, d)), _) => k.set(v, d),
        (Err(e), Some(d)) => k.set(
            Verdict::Skip,
            format!(
                "known defect: {}; {e}; request arguments {}",
                d.why,
                request()
            ),
        ),
        (Err(e), None) => k.set(
            Verdict::Fail,
            format!("{e}; request arguments {}", request()),
        ),
    }
}
