//! The reference server's valuetype operations (bench.idl's VALUETYPES):
//! `echo_node`, `echo_nodes`, `echo_box`, `same_node`, in the typed
//! skeleton ([`Nodes`], read and written through
//! [`iiop_cdr::valuetype`]) and the dynamic one ([`Value`]s). Each
//! request is one valuetype scope, so `same_node`'s second argument may
//! be an indirection to its first; replies carry repository ids and are
//! chunked only where they must be (a TaggedNode).

use std::collections::HashMap;
use std::sync::OnceLock;

use iiop_cdr::value::ValueScope;
use iiop_cdr::valuetype::{ValueReader, ValueWriter};
use iiop_cdr::{CdrError, Reader, TypeCode, Value, Writer};
use iiop_transport::server::arguments_end_body;

use crate::bench::ops::Op;
use crate::bench::values::{
    long_box_typecode, node_seq_typecode, node_typecode, read_long_box, value_typecodes,
    write_long_box, NodeEncoding, Nodes,
};

/// The arguments did not decode, or bytes other than padding follow them.
fn end(body: &Reader<'_>) -> Result<(), CdrError> {
    if arguments_end_body(body) {
        Ok(())
    } else {
        Err(CdrError::TrailingData {
            offset: body.position(),
            remaining: body.remaining(),
        })
    }
}

/// The typed skeleton's answer to `op` (one of the valuetype operations).
pub(super) fn typed(op: Op, body: &mut Reader<'_>, reply: &mut Writer<'_>) -> Result<(), CdrError> {
    let mut vr = ValueReader::new();
    let mut numbers = HashMap::new();
    let mut nodes = Nodes::default();
    let mut vw = ValueWriter::default();
    let enc = NodeEncoding::default();
    match op {
        Op::EchoNode => {
            let root = nodes.read(body, &mut vr, &mut numbers)?;
            end(body)?;
            nodes.write(reply, &mut vw, root, &enc)
        }
        Op::EchoNodes => {
            // Each element is at least a tag.
            let n = body.read_len(4)?;
            let mut roots = Vec::with_capacity(n);
            for _ in 0..n {
                roots.push(nodes.read(body, &mut vr, &mut numbers)?);
            }
            end(body)?;
            reply.write_len(n)?;
            for root in roots {
                nodes.write(reply, &mut vw, root, &enc)?;
            }
            Ok(())
        }
        Op::EchoBox => {
            let b = read_long_box(body, &mut vr, &mut HashMap::new())?;
            end(body)?;
            write_long_box(reply, &mut vw, b, &enc)
        }
        Op::SameNode => {
            let a = nodes.read(body, &mut vr, &mut numbers)?;
            let b = nodes.read(body, &mut vr, &mut numbers)?;
            end(body)?;
            reply.write_bool(a == b);
            Ok(())
        }
        other => unreachable!("{other:?} is not a valuetype operation"),
    }
}

struct Tcs {
    node: TypeCode,
    nodes: TypeCode,
    long_box: TypeCode,
    known: Vec<TypeCode>,
}

fn tcs() -> &'static Tcs {
    static TCS: OnceLock<Tcs> = OnceLock::new();
    TCS.get_or_init(|| Tcs {
        node: node_typecode(),
        nodes: node_seq_typecode(),
        long_box: long_box_typecode(),
        known: value_typecodes(),
    })
}

/// The dynamic skeleton's answer to `op`: the arguments decoded as
/// [`Value`]s driven by TypeCodes, in one scope that knows bench.idl's
/// value types.
pub(super) fn dynamic(
    op: Op,
    body: &mut Reader<'_>,
    reply: &mut Writer<'_>,
) -> Result<(), CdrError> {
    let t = tcs();
    let scope = || ValueScope::with_types(&t.known);
    let echo = |tc: &TypeCode, body: &mut Reader<'_>, reply: &mut Writer<'_>| {
        let v = Value::decode_in(tc, body, &mut scope())?;
        end(body)?;
        v.encode_in(tc, reply, &mut scope())
    };
    match op {
        Op::EchoNode => echo(&t.node, body, reply),
        Op::EchoNodes => echo(&t.nodes, body, reply),
        Op::EchoBox => echo(&t.long_box, body, reply),
        Op::SameNode => {
            let mut s = scope();
            let a = Value::decode_in(&t.node, body, &mut s)?;
            let b = Value::decode_in(&t.node, body, &mut s)?;
            end(body)?;
            let same = match (&a, &b) {
                (Value::Null, Value::Null) => true,
                (Value::Valuetype(o), Value::ValueRef(n)) => o.number == *n,
                _ => false,
            };
            reply.write_bool(same);
            Ok(())
        }
        other => unreachable!("{other:?} is not a valuetype operation"),
    }
}
