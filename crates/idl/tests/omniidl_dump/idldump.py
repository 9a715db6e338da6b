# idldump.py -- an omniidl back end that prints, one fact per line, what
# iiop-idl's model must agree with: every declaration's scoped name and
# repository id, struct/exception/union/valuetype members with their types,
# enumerators, constant values, typedefs and interface operations.
#
#   omniidl -p crates/idl/tests/omniidl_dump -bidldump -I... file.idl
#
# The same lines are produced from iiop-idl's Spec by
# crates/idl/tests/omniidl_compare.rs; the test compares the two sets.

import struct
import sys

from omniidl import idlast, idltype

BASE = {
    idltype.tk_void: "void", idltype.tk_short: "short", idltype.tk_long: "long",
    idltype.tk_ushort: "unsigned short", idltype.tk_ulong: "unsigned long",
    idltype.tk_float: "float", idltype.tk_double: "double",
    idltype.tk_boolean: "boolean", idltype.tk_char: "char",
    idltype.tk_octet: "octet", idltype.tk_any: "any",
    idltype.tk_TypeCode: "TypeCode", idltype.tk_Principal: "Principal",
    idltype.tk_longlong: "long long", idltype.tk_ulonglong: "unsigned long long",
    idltype.tk_longdouble: "long double", idltype.tk_wchar: "wchar",
}


def scoped(names):
    return "::" + "::".join(names)


def tname(t):
    k = t.kind()
    if k in BASE:
        return BASE[k]
    if k == idltype.tk_string:
        return "string<%d>" % t.bound() if t.bound() else "string"
    if k == idltype.tk_wstring:
        return "wstring<%d>" % t.bound() if t.bound() else "wstring"
    if k == idltype.tk_sequence:
        if t.bound():
            return "sequence<%s,%d>" % (tname(t.seqType()), t.bound())
        return "sequence<%s>" % tname(t.seqType())
    if k == idltype.tk_fixed:
        return "fixed<%d,%d>" % (t.digits(), t.scale())
    if isinstance(t, idltype.Declared):
        sn = t.scopedName()
        if sn == ["CORBA", "Object"]:
            return "Object"
        if sn == ["CORBA", "ValueBase"]:
            return "ValueBase"
        return scoped(sn)
    return "?kind%d" % k


def dims(decl):
    return "".join("[%d]" % s for s in decl.sizes())


def text(s):
    if not isinstance(s, str):  # omniidl gives a wstring as a list of code points
        s = "".join(chr(c) for c in s)
    out = []
    for c in s:
        o = ord(c)
        out.append(c if 0x20 <= o < 0x7f and c != "\\" else "\\x{%x}" % o)
    return '"' + "".join(out) + '"'


def value(v, kind):
    if isinstance(v, idlast.Enumerator):
        return scoped(v.scopedName())
    if isinstance(v, bool) or kind == idltype.tk_boolean:
        return "TRUE" if v else "FALSE"
    if kind in (idltype.tk_float, idltype.tk_double, idltype.tk_longdouble):
        return "f:%016x" % struct.unpack(">Q", struct.pack(">d", float(v)))[0]
    if kind in (idltype.tk_char, idltype.tk_wchar):
        return "c:%d" % (ord(v) if isinstance(v, str) else v)
    if kind in (idltype.tk_string, idltype.tk_wstring):
        return text(v)
    if kind == idltype.tk_fixed:
        return "fixed"
    return str(v)


def unalias_kind(t):
    while t.kind() == idltype.tk_alias:
        t = t.decl().alias().aliasType()
    return t.kind()


def params(op):
    ps = ["%s %s %s" % (("in", "out", "inout")[p.direction()], tname(p.paramType()), p.identifier())
          for p in op.parameters()]
    return "(%s)" % ", ".join(ps)


class Dumper:
    def __init__(self):
        self.lines = set()
        self.modules = {}

    def emit(self, s):
        self.lines.add(s)

    def decls(self, ds):
        for d in ds:
            self.decl(d)

    def body(self, owner, contents):
        ops = []
        for c in contents:
            if isinstance(c, idlast.Operation):
                ops.append(c.identifier())
                self.emit("op %s::%s %s%s %s%s raises(%s) context(%s)" % (
                    owner, c.identifier(), "oneway " if c.oneway() else "",
                    tname(c.returnType()), c.identifier(), params(c),
                    ",".join(scoped(e.scopedName()) for e in c.raises()),
                    ",".join(text(x) for x in c.contexts())))
            elif isinstance(c, idlast.Attribute):
                for i in c.identifiers():
                    ops.append("_get_" + i)
                    if not c.readonly():
                        ops.append("_set_" + i)
                    self.emit("attr %s::%s %s %s" % (owner, i, "ro" if c.readonly() else "rw",
                                                      tname(c.attrType())))
            elif isinstance(c, idlast.StateMember):
                for dc in c.declarators():
                    self.emit("state %s %s %s %s%s" % (
                        owner, "public" if c.memberAccess() == 0 else "private",
                        dc.identifier(), tname(c.memberType()), dims(dc)))
            elif isinstance(c, idlast.Factory):
                pass
            else:
                self.decl(c)
        return ops

    def members(self, owner, members):
        i = 0
        for m in members:
            if m.constrType():
                self.decl(m.memberType().decl())
            for dc in m.declarators():
                self.emit("member %s #%d %s %s%s" % (owner, i, dc.identifier(),
                                                    tname(m.memberType()), dims(dc)))
                i += 1

    def decl(self, d):
        if isinstance(d, idlast.Module):
            # A reopened module is one scope in iiop-idl. omniidl's symbol
            # table holds the first opening, which is what a later
            # `#pragma version M` updates; report that one.
            self.modules.setdefault(scoped(d.scopedName()), d.repoId())
            self.decls(d.definitions())
        elif isinstance(d, idlast.Interface):
            sn = scoped(d.scopedName())
            self.emit("declared %s %s" % (sn, d.repoId()))
            kind = "abstract" if d.abstract() else "local" if d.local() else "plain"
            ops = self.body(sn, d.contents())
            self.emit("interface %s %s %s bases=[%s] ops=[%s]" % (
                sn, d.repoId(), kind,
                ",".join(scoped(b.scopedName()) for b in d.inherits()), ",".join(ops)))
        elif isinstance(d, (idlast.Forward, idlast.StructForward, idlast.UnionForward,
                            idlast.ValueForward)):
            self.emit("declared %s %s" % (scoped(d.scopedName()), d.repoId()))
        elif isinstance(d, idlast.Const):
            self.emit("const %s %s %s = %s" % (scoped(d.scopedName()), d.repoId(),
                                               tname(d.constType()),
                                               value(d.value(), unalias_kind(d.constType()))))
        elif isinstance(d, idlast.Typedef):
            if d.constrType():
                self.decl(d.aliasType().decl())
            for dc in d.declarators():
                self.emit("typedef %s %s %s%s" % (scoped(dc.scopedName()), dc.repoId(),
                                                  tname(d.aliasType()), dims(dc)))
        elif isinstance(d, idlast.Struct):
            sn = scoped(d.scopedName())
            self.emit("declared %s %s" % (sn, d.repoId()))
            self.emit("struct %s %s" % (sn, d.repoId()))
            self.members(sn, d.members())
        elif isinstance(d, idlast.Exception):
            sn = scoped(d.scopedName())
            self.emit("exception %s %s" % (sn, d.repoId()))
            self.members(sn, d.members())
        elif isinstance(d, idlast.Union):
            sn = scoped(d.scopedName())
            self.emit("declared %s %s" % (sn, d.repoId()))
            if d.constrType():
                self.decl(d.switchType().decl())
            self.emit("union %s %s switch(%s)" % (sn, d.repoId(), tname(d.switchType())))
            kind = unalias_kind(d.switchType())
            for i, c in enumerate(d.cases()):
                if c.constrType():
                    self.decl(c.caseType().decl())
                labels = ",".join("default" if l.default() else value(l.value(), kind)
                                  for l in c.labels())
                self.emit("case %s #%d %s %s %s%s" % (sn, i, labels, c.declarator().identifier(),
                                                      tname(c.caseType()), dims(c.declarator())))
        elif isinstance(d, idlast.Enum):
            self.emit("enum %s %s %s" % (scoped(d.scopedName()), d.repoId(),
                                         ",".join(e.identifier() for e in d.enumerators())))
        elif isinstance(d, idlast.Native):
            self.emit("native %s %s" % (scoped(d.scopedName()), d.repoId()))
        elif isinstance(d, idlast.ValueBox):
            self.emit("valuebox %s %s %s" % (scoped(d.scopedName()), d.repoId(),
                                             tname(d.boxedType())))
        elif isinstance(d, (idlast.Value, idlast.ValueAbs)):
            sn = scoped(d.scopedName())
            self.emit("declared %s %s" % (sn, d.repoId()))
            ops = self.body(sn, d.contents())
            self.emit("value %s %s bases=[%s] supports=[%s] ops=[%s]" % (
                sn, d.repoId(), ",".join(scoped(b.scopedName()) for b in d.inherits()),
                ",".join(scoped(b.scopedName()) for b in d.supports()), ",".join(ops)))
        else:
            self.emit("unhandled %s %s" % (type(d).__name__, getattr(d, "repoId", lambda: "")()))


def run(tree, args):
    dumper = Dumper()
    dumper.decls(tree.declarations())
    for name, rid in dumper.modules.items():
        dumper.emit("module %s %s" % (name, rid))
    for line in sorted(dumper.lines):
        sys.stdout.write(line + "\n")
