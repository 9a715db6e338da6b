//! bench.idl's valuetype operations as typed client calls (its VALUETYPES
//! section): the arguments written with a [`NodeEncoding`], each call one
//! valuetype scope, the replies read back into [`Nodes`].

use std::collections::HashMap;

use iiop_cdr::valuetype::ValueReader;
use iiop_cdr::Writer;

use crate::bench::values::{read_long_box, write_long_box, NodeEncoding, Nodes};
use crate::client::{BenchClient, BenchError};

impl BenchClient {
    /// `echo_node(n)` with `n` the value `root` refers to in `nodes`: the
    /// nodes that came back and the returned root.
    pub async fn echo_node(
        &self,
        nodes: &Nodes,
        root: Option<usize>,
        enc: &NodeEncoding,
    ) -> Result<(Nodes, Option<usize>), BenchError> {
        let args = |w: &mut Writer<'_>| nodes.write(w, &mut enc.writer(), root, enc);
        self.call_decoded("echo_node", args, |r| {
            let mut back = Nodes::default();
            let root = back.read(r, &mut ValueReader::new(), &mut HashMap::new())?;
            Ok((back, root))
        })
        .await
    }

    /// `echo_nodes(s)` with `s` the values `roots` refer to.
    pub async fn echo_nodes(
        &self,
        nodes: &Nodes,
        roots: &[Option<usize>],
        enc: &NodeEncoding,
    ) -> Result<(Nodes, Vec<Option<usize>>), BenchError> {
        let args = |w: &mut Writer<'_>| {
            let mut vw = enc.writer();
            w.write_len(roots.len())?;
            for &root in roots {
                nodes.write(w, &mut vw, root, enc)?;
            }
            Ok(())
        };
        self.call_decoded("echo_nodes", args, |r| {
            let n = r.read_len(4)?;
            let mut back = Nodes::default();
            let (mut vr, mut numbers) = (ValueReader::new(), HashMap::new());
            let mut out = Vec::with_capacity(n);
            for _ in 0..n {
                out.push(back.read(r, &mut vr, &mut numbers)?);
            }
            Ok((back, out))
        })
        .await
    }

    /// `echo_box(b)`: `None` is the null value.
    pub async fn echo_box(
        &self,
        b: Option<i32>,
        enc: &NodeEncoding,
    ) -> Result<Option<i32>, BenchError> {
        let args = |w: &mut Writer<'_>| write_long_box(w, &mut enc.writer(), b, enc);
        self.call_decoded("echo_box", args, |r| {
            read_long_box(r, &mut ValueReader::new(), &mut HashMap::new())
        })
        .await
    }

    /// `same_node(a, b)` with the values `a` and `b` refer to, written in
    /// one scope (the same node twice: the second an indirection).
    pub async fn same_node(
        &self,
        nodes: &Nodes,
        a: Option<usize>,
        b: Option<usize>,
        enc: &NodeEncoding,
    ) -> Result<bool, BenchError> {
        let args = |w: &mut Writer<'_>| {
            let mut vw = enc.writer();
            nodes.write(w, &mut vw, a, enc)?;
            nodes.write(w, &mut vw, b, enc)
        };
        self.call_decoded("same_node", args, |r| r.read_bool())
            .await
    }
}
