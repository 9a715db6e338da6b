//! bench.idl's valuetypes on our side (its VALUETYPES section): `Node`,
//! `TaggedNode`, `LongBox` and `NodeSeq` as TypeCodes for the dynamic
//! skeleton, and as [`Nodes`], an arena of nodes with links by index
//! (so sharing and cycles are plain data), for the typed skeleton and
//! client, written and read through [`iiop_cdr::valuetype`].

use std::collections::HashMap;

use iiop_cdr::typecode::TcDef;
use iiop_cdr::valuetype::{TypeInfo, ValueReader, ValueStart, ValueStyle, ValueWriter};
use iiop_cdr::{CdrError, Reader, TypeCode, Writer};

/// `Bench::Node`.
pub const NODE_ID: &str = "IDL:Bench/Node:1.0";
/// `Bench::TaggedNode`, a truncatable `Node`.
pub const TAGGED_NODE_ID: &str = "IDL:Bench/TaggedNode:1.0";
/// `Bench::LongBox`.
pub const LONG_BOX_ID: &str = "IDL:Bench/LongBox:1.0";
/// `Bench::NodeSeq`.
pub const NODE_SEQ_ID: &str = "IDL:Bench/NodeSeq:1.0";

/// `valuetype Node { public long id; public string label; public Node next; };`
pub fn node_typecode() -> TypeCode {
    TypeCode::value_tc(
        NODE_ID,
        "Node",
        0,
        None,
        vec![
            ("id", TypeCode::long(), 1),
            ("label", TypeCode::string(0), 1),
            ("next", TypeCode::recursive(NODE_ID), 1),
        ],
    )
}

/// `valuetype TaggedNode : truncatable Node { public string tag; };`
pub fn tagged_node_typecode() -> TypeCode {
    TypeCode::value_tc(
        TAGGED_NODE_ID,
        "TaggedNode",
        3,
        Some(node_typecode()),
        vec![("tag", TypeCode::string(0), 1)],
    )
}

/// `valuetype LongBox long;`
pub fn long_box_typecode() -> TypeCode {
    TypeCode::value_box(LONG_BOX_ID, "LongBox", TypeCode::long())
}

/// `typedef sequence<Node> NodeSeq;`
pub fn node_seq_typecode() -> TypeCode {
    TypeCode::alias(
        NODE_SEQ_ID,
        "NodeSeq",
        TypeCode::sequence(node_typecode(), 0),
    )
}

/// One node. `tag` is `Some` for a TaggedNode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeData {
    pub id: i32,
    pub label: String,
    /// The node `next` refers to (an index into [`Nodes::nodes`]), or null.
    pub next: Option<usize>,
    pub tag: Option<String>,
}

/// Nodes as one message carries them: each node once, links by index, so
/// a node referred to twice is one node and a cycle is a link back. The
/// arguments (or elements) are roots: `Option<usize>`, `None` for null.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Nodes {
    pub nodes: Vec<NodeData>,
}

/// How [`Nodes`] are written, beyond the [`ValueWriter`]'s own style.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeEncoding {
    /// Chunk every value (otherwise only TaggedNodes and what they hold).
    pub chunk_all: bool,
    /// No type information for a Node (omniORB's way) instead of its
    /// repository id (JacORB's).
    pub omit_ids: bool,
    /// Write TaggedNodes under this repository id instead of
    /// [`TAGGED_NODE_ID`], still truncatable to Node: a type the receiver
    /// cannot know, which it must truncate.
    pub tagged_id: Option<String>,
    /// The writer's style (indirected ids, coalesced end tags, chunk size)
    /// for a [`ValueWriter`] made for one message.
    pub style: ValueStyle,
}

impl NodeEncoding {
    /// A writer for one message in this encoding's style.
    pub fn writer(&self) -> ValueWriter {
        ValueWriter::new(self.style)
    }
}

impl Nodes {
    /// Add a node; its index.
    pub fn push(&mut self, id: i32, label: &str, next: Option<usize>) -> usize {
        self.nodes.push(NodeData {
            id,
            label: label.into(),
            next,
            tag: None,
        });
        self.nodes.len() - 1
    }

    /// Write the value `root` refers to (a node already written in this
    /// stream becomes an indirection to it).
    pub fn write(
        &self,
        w: &mut Writer<'_>,
        vw: &mut ValueWriter,
        root: Option<usize>,
        enc: &NodeEncoding,
    ) -> Result<(), CdrError> {
        let Some(i) = root else {
            return vw.null(w);
        };
        let n = self.nodes.get(i).ok_or_else(|| CdrError::Unrepresentable {
            what: format!("a link to node {i} of {}", self.nodes.len()),
            codeset: "Bench::Node",
        })?;
        if vw.shared(w, i as u64)? {
            return Ok(());
        }
        let (ids, chunked) = match &n.tag {
            Some(_) => {
                let id = enc.tagged_id.as_deref().unwrap_or(TAGGED_NODE_ID);
                (TypeInfo::List(vec![id.into(), NODE_ID.into()]), true)
            }
            None if enc.omit_ids => (TypeInfo::None, enc.chunk_all),
            None => (TypeInfo::Single(NODE_ID.into()), enc.chunk_all),
        };
        let chunked = chunked || vw.level() > 0;
        let token = vw.begin(w, Some(i as u64), None, &ids, chunked)?;
        vw.data(w)?;
        w.write_i32(n.id);
        vw.data(w)?;
        w.write_string(&n.label)?;
        self.write(w, vw, n.next, enc)?;
        if let Some(tag) = &n.tag {
            vw.data(w)?;
            w.write_string(tag)?;
        }
        vw.end(w, token)
    }

    /// Read a Node (or TaggedNode, or a truncatable type derived from
    /// Node, cut down to its Node part) where one may stand; `numbers`
    /// maps the stream's value numbers to node indices (one map per
    /// message). `None` for null.
    pub fn read(
        &mut self,
        r: &mut Reader<'_>,
        vr: &mut ValueReader,
        numbers: &mut HashMap<u32, usize>,
    ) -> Result<Option<usize>, CdrError> {
        let at = r.position();
        let head =
            match vr.start(r)? {
                ValueStart::Null => return Ok(None),
                ValueStart::Shared { number } => {
                    return numbers.get(&number).copied().map(Some).ok_or_else(|| {
                        CdrError::BadValue {
                            offset: at,
                            reason: format!("indirection to value {number}, which is not a Node"),
                        }
                    })
                }
                ValueStart::Value(head) => head,
            };
        // The first id we know, and whether it is not the first (then the
        // rest of the state is skipped).
        let pick = match &head.ids {
            TypeInfo::None => Some((false, 0)),
            ids => ids
                .ids()
                .iter()
                .enumerate()
                .find_map(|(k, id)| match &**id {
                    NODE_ID => Some((false, k)),
                    TAGGED_NODE_ID => Some((true, k)),
                    _ => None,
                }),
        };
        let Some((tagged, k)) = pick else {
            return Err(CdrError::BadValue {
                offset: head.offset,
                reason: format!(
                    "a value of type {} where a Node is expected",
                    head.ids.ids().join(", ")
                ),
            });
        };
        let truncating = k > 0;
        if truncating && !head.chunked {
            return Err(CdrError::BadValue {
                offset: head.offset,
                reason: "an unchunked value that would have to be truncated".into(),
            });
        }
        let index = self.nodes.len();
        self.nodes.push(NodeData {
            id: 0,
            label: String::new(),
            next: None,
            tag: None,
        });
        numbers.insert(head.number, index);
        r.enter()?;
        vr.member(r, &head)?;
        let id = r.read_i32()?;
        vr.member(r, &head)?;
        let label = r.read_string()?;
        vr.member(r, &head)?;
        let next = self.read(r, vr, numbers)?;
        let tag = if tagged {
            vr.member(r, &head)?;
            Some(r.read_string()?)
        } else {
            None
        };
        vr.end(r, &head, !truncating)?;
        r.leave();
        self.nodes[index] = NodeData {
            id,
            label,
            next,
            tag,
        };
        Ok(Some(index))
    }

    /// The same graph as `other`, node for node, from roots `a` (here) and
    /// `b` (there): the same values, the same sharing, the same cycles.
    /// `None` if so, else the first difference, in words.
    pub fn differs(
        &self,
        a: &[Option<usize>],
        other: &Nodes,
        b: &[Option<usize>],
    ) -> Option<String> {
        if a.len() != b.len() {
            return Some(format!("{} roots, {} expected", b.len(), a.len()));
        }
        // Pair nodes as first met, depth first; a node met again must
        // meet its partner again.
        let mut pair: HashMap<usize, usize> = HashMap::new();
        let mut back: HashMap<usize, usize> = HashMap::new();
        let mut stack: Vec<(Option<usize>, Option<usize>, String)> = a
            .iter()
            .zip(b)
            .enumerate()
            .rev()
            .map(|(k, (&x, &y))| (x, y, format!("root {k}")))
            .collect();
        while let Some((x, y, path)) = stack.pop() {
            let (x, y) = match (x, y) {
                (None, None) => continue,
                (Some(x), Some(y)) => (x, y),
                (Some(_), None) => return Some(format!("{path}: null, a node expected")),
                (None, Some(_)) => return Some(format!("{path}: a node, null expected")),
            };
            match (pair.get(&x), back.get(&y)) {
                (Some(&p), _) if p == y => continue,
                (None, None) => {}
                _ => {
                    return Some(format!(
                    "{path}: the sharing differs (a node met before is not the same node as then)"
                ))
                }
            }
            pair.insert(x, y);
            back.insert(y, x);
            let (n, m) = match (self.nodes.get(x), other.nodes.get(y)) {
                (Some(n), Some(m)) => (n, m),
                _ => return Some(format!("{path}: a link outside the nodes")),
            };
            if (n.id, &n.label, &n.tag) != (m.id, &m.label, &m.tag) {
                return Some(format!(
                    "{path}: id {} label {:?} tag {:?}, expected id {} label {:?} tag {:?}",
                    m.id, m.label, m.tag, n.id, n.label, n.tag
                ));
            }
            stack.push((n.next, m.next, format!("{path}.next")));
        }
        None
    }

    /// The graph with every TaggedNode cut down to a Node (what a reader
    /// that does not know the tagged type keeps).
    pub fn truncated(&self) -> Nodes {
        Nodes {
            nodes: self
                .nodes
                .iter()
                .map(|n| NodeData {
                    tag: None,
                    ..n.clone()
                })
                .collect(),
        }
    }
}

/// `LongBox` where one may stand: `None` for null.
pub fn write_long_box(
    w: &mut Writer<'_>,
    vw: &mut ValueWriter,
    v: Option<i32>,
    enc: &NodeEncoding,
) -> Result<(), CdrError> {
    let Some(x) = v else {
        return vw.null(w);
    };
    let ids = if enc.omit_ids {
        TypeInfo::None
    } else {
        TypeInfo::Single(LONG_BOX_ID.into())
    };
    let token = vw.begin(w, None, None, &ids, enc.chunk_all || vw.level() > 0)?;
    vw.data(w)?;
    w.write_i32(x);
    vw.end(w, token)
}

/// Read a `LongBox`: `None` for null. An indirection to a box read before
/// gives its value (a box is a value: it may be shared).
pub fn read_long_box(
    r: &mut Reader<'_>,
    vr: &mut ValueReader,
    boxes: &mut HashMap<u32, i32>,
) -> Result<Option<i32>, CdrError> {
    let at = r.position();
    let head = match vr.start(r)? {
        ValueStart::Null => return Ok(None),
        ValueStart::Shared { number } => {
            return boxes
                .get(&number)
                .copied()
                .map(Some)
                .ok_or_else(|| CdrError::BadValue {
                    offset: at,
                    reason: format!("indirection to value {number}, which is not a LongBox"),
                })
        }
        ValueStart::Value(head) => head,
    };
    if head.ids.ids().iter().any(|id| &**id != LONG_BOX_ID) {
        return Err(CdrError::BadValue {
            offset: head.offset,
            reason: format!(
                "a value of type {} where a LongBox is expected",
                head.ids.ids().join(", ")
            ),
        });
    }
    vr.member(r, &head)?;
    let x = r.read_i32()?;
    vr.end(r, &head, true)?;
    boxes.insert(head.number, x);
    Ok(Some(x))
}

/// The value TypeCodes a dynamic reader of bench.idl should know (the
/// derived types a `Node` may arrive as).
pub fn value_typecodes() -> Vec<TypeCode> {
    let v = vec![tagged_node_typecode(), long_box_typecode()];
    debug_assert!(v
        .iter()
        .all(|t| matches!(t.def(), TcDef::Value { .. } | TcDef::ValueBox { .. })));
    v
}
