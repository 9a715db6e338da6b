//! Shared by the integration tests: the omniORB IDL corpus and the
//! one-fact-per-line dump of a [`Spec`] that `omniidl_dump/idldump.py`
//! also produces from omniidl's AST.

#![allow(dead_code)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use iiop_idl::{CaseLabel, ConstValue, DefKind, InterfaceKind, Spec};

/// Where Debian's `omniorb-idl` installs omniORB's IDL.
pub const OMNI: &str = "/usr/share/idl/omniORB";

/// The crate's directory.
pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `fixtures/idl/bench.idl`.
pub fn bench_idl() -> PathBuf {
    crate_dir().join("../../fixtures/idl/bench.idl")
}

/// Every `.idl` file under `dir`, sorted.
pub fn idl_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    walk(dir, &mut out);
    out
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|e| e == "idl") {
            out.push(p);
        }
    }
}

/// Options as omniidl is run over its own IDL: both directories on the
/// search path and `__OMNIIDL__` defined (omniidl's cpp defines it).
pub fn omni_opts() -> iiop_idl::Options {
    iiop_idl::Options {
        include_dirs: vec![PathBuf::from(OMNI), PathBuf::from(OMNI).join("COS")],
        defines: vec!["__OMNIIDL__=4.2".to_string()],
    }
}

/// The omniORB files that no IDL compiler can parse as shipped: they
/// include `IOP.idl`, which the package lacks, or use names
/// (`CORBA::ServiceOption`, `CORBA::Environment`) that no file declares.
/// omniidl rejects exactly these too (see `omniidl_compare`).
pub const BROKEN_AS_SHIPPED: &[&str] = &[
    "COS/CosTSPortability.idl",
    "COS/DCE_CIOPSecurity.idl",
    "COS/NRService.idl",
    "COS/SECIOP.idl",
    "COS/SSLIOP.idl",
    "COS/Security.idl",
    "COS/SecurityAdmin.idl",
    "COS/SecurityLevel1.idl",
    "COS/SecurityLevel2.idl",
    "COS/SecurityReplaceable.idl",
];

fn text(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        let o = c as u32;
        if (0x20..0x7f).contains(&o) && c != '\\' {
            out.push(c);
        } else {
            out.push_str(&format!("\\x{{{o:x}}}"));
        }
    }
    out.push('"');
    out
}

fn value(spec: &Spec, v: &ConstValue) -> String {
    match v {
        ConstValue::Int(i) => i.to_string(),
        ConstValue::Float(f) => format!("f:{:016x}", f.to_bits()),
        ConstValue::Char(c) | ConstValue::WChar(c) => format!("c:{c}"),
        ConstValue::Str(s) | ConstValue::WStr(s) => text(s),
        ConstValue::Bool(b) => if *b { "TRUE" } else { "FALSE" }.to_string(),
        ConstValue::Enum(id) => spec.def(*id).scoped_name.clone(),
        ConstValue::Fixed(_) => "fixed".to_string(),
    }
}

fn ids(spec: &Spec, v: &[iiop_idl::DefId]) -> String {
    v.iter()
        .map(|i| spec.def(*i).scoped_name.clone())
        .collect::<Vec<_>>()
        .join(",")
}

/// The lines `idldump.py` prints for the same IDL.
pub fn dump(spec: &Spec) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (_, d) in spec.iter() {
        let sn = &d.scoped_name;
        let rid = &d.repo_id;
        match &d.kind {
            DefKind::Module { .. } => {
                out.insert(format!("module {sn} {rid}"));
            }
            DefKind::Interface(i) => {
                out.insert(format!("declared {sn} {rid}"));
                if i.defined {
                    let kind = match i.kind {
                        InterfaceKind::Abstract => "abstract",
                        InterfaceKind::Local => "local",
                        InterfaceKind::Plain => "plain",
                    };
                    let ops = own_ops(spec, &i.contents);
                    out.insert(format!(
                        "interface {sn} {rid} {kind} bases=[{}] ops=[{}]",
                        ids(spec, &i.bases),
                        ops.join(",")
                    ));
                }
            }
            DefKind::Struct(s) => {
                out.insert(format!("declared {sn} {rid}"));
                if s.defined {
                    out.insert(format!("struct {sn} {rid}"));
                    members(spec, sn, &s.members, &mut out);
                }
            }
            DefKind::Exception(s) => {
                out.insert(format!("exception {sn} {rid}"));
                members(spec, sn, &s.members, &mut out);
            }
            DefKind::Union(u) => {
                out.insert(format!("declared {sn} {rid}"));
                if u.defined {
                    out.insert(format!(
                        "union {sn} {rid} switch({})",
                        spec.type_name(&u.discriminator)
                    ));
                    for (i, c) in u.cases.iter().enumerate() {
                        let labels: Vec<String> = c
                            .labels
                            .iter()
                            .map(|l| match l {
                                CaseLabel::Default => "default".to_string(),
                                CaseLabel::Value(v) => value(spec, v),
                            })
                            .collect();
                        out.insert(format!(
                            "case {sn} #{i} {} {} {}",
                            labels.join(","),
                            c.name,
                            spec.type_name(&c.ty)
                        ));
                    }
                }
            }
            DefKind::Enum(names) => {
                out.insert(format!("enum {sn} {rid} {}", names.join(",")));
            }
            DefKind::Enumerator { .. } => {}
            DefKind::Typedef(t) => {
                out.insert(format!("typedef {sn} {rid} {}", spec.type_name(t)));
            }
            DefKind::Const { ty, value: v } => {
                out.insert(format!(
                    "const {sn} {rid} {} = {}",
                    spec.type_name(ty),
                    value(spec, v)
                ));
            }
            DefKind::Native => {
                out.insert(format!("native {sn} {rid}"));
            }
            DefKind::ValueBox(t) => {
                out.insert(format!("valuebox {sn} {rid} {}", spec.type_name(t)));
            }
            DefKind::Value(v) => {
                out.insert(format!("declared {sn} {rid}"));
                if v.defined {
                    let ops = own_ops(spec, &v.contents);
                    out.insert(format!(
                        "value {sn} {rid} bases=[{}] supports=[{}] ops=[{}]",
                        ids(spec, &v.bases),
                        ids(spec, &v.supports),
                        ops.join(",")
                    ));
                    for s in &v.state {
                        out.insert(format!(
                            "state {sn} {} {} {}",
                            if s.public { "public" } else { "private" },
                            s.name,
                            spec.type_name(&s.ty)
                        ));
                    }
                }
            }
            DefKind::Operation(op) => {
                let params: Vec<String> = op
                    .params
                    .iter()
                    .map(|p| {
                        let dir = match p.dir {
                            iiop_idl::Direction::In => "in",
                            iiop_idl::Direction::Out => "out",
                            iiop_idl::Direction::InOut => "inout",
                        };
                        format!("{dir} {} {}", spec.type_name(&p.ty), p.name)
                    })
                    .collect();
                let ctx: Vec<String> = op.contexts.iter().map(|c| text(c)).collect();
                out.insert(format!(
                    "op {sn} {}{} {}({}) raises({}) context({})",
                    if op.oneway { "oneway " } else { "" },
                    spec.type_name(&op.result),
                    d.name,
                    params.join(", "),
                    ids(spec, &op.raises),
                    ctx.join(",")
                ));
            }
            DefKind::Attribute(a) => {
                out.insert(format!(
                    "attr {sn} {} {}",
                    if a.readonly { "ro" } else { "rw" },
                    spec.type_name(&a.ty)
                ));
            }
        }
    }
    out
}

fn own_ops(spec: &Spec, contents: &[iiop_idl::DefId]) -> Vec<String> {
    let mut ops = Vec::new();
    for c in contents {
        let d = spec.def(*c);
        match &d.kind {
            DefKind::Operation(_) => ops.push(d.name.clone()),
            DefKind::Attribute(a) => {
                ops.push(format!("_get_{}", d.name));
                if !a.readonly {
                    ops.push(format!("_set_{}", d.name));
                }
            }
            _ => {}
        }
    }
    ops
}

fn members(spec: &Spec, sn: &str, ms: &[iiop_idl::Member], out: &mut BTreeSet<String>) {
    for (i, m) in ms.iter().enumerate() {
        out.insert(format!(
            "member {sn} #{i} {} {}",
            m.name,
            spec.type_name(&m.ty)
        ));
    }
}
