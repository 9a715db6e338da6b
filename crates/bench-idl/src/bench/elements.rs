//! The element types of bench.idl: their `--type` tokens, IDL names,
//! repository ids, wire strides and the payload-byte counting rules of
//! bench.idl's COUNTERS section — one table that the client, our server
//! and the reports share.

use std::fmt;
use std::str::FromStr;

/// An element type of bench.idl (the `T` of `send_oneway_T`/`send_T`/`echo_T`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Elem {
    Short,
    UShort,
    Long,
    ULong,
    LongLong,
    ULongLong,
    Float,
    Double,
    Char,
    WChar,
    Octet,
    Boolean,
    String,
    WString,
    PerfStruct,
    MyStruct,
    Cd,
    CharStruct,
    FloatStruct,
    LongStruct,
    DoubleStruct,
    LongQuad,
    MixedQuad,
    FloatPair,
    Color,
    Variant,
}

/// Characters in each generated `string` element (docs/vendor-protocol.md).
pub const STRING_CHARS: usize = 15;
/// Characters in each generated `wstring` element.
pub const WSTRING_CHARS: usize = 8;

impl Elem {
    /// Every element type, in bench.idl order.
    pub const ALL: [Elem; 26] = [
        Elem::Short,
        Elem::UShort,
        Elem::Long,
        Elem::ULong,
        Elem::LongLong,
        Elem::ULongLong,
        Elem::Float,
        Elem::Double,
        Elem::Char,
        Elem::WChar,
        Elem::Octet,
        Elem::Boolean,
        Elem::String,
        Elem::WString,
        Elem::PerfStruct,
        Elem::MyStruct,
        Elem::Cd,
        Elem::CharStruct,
        Elem::FloatStruct,
        Elem::LongStruct,
        Elem::DoubleStruct,
        Elem::LongQuad,
        Elem::MixedQuad,
        Elem::FloatPair,
        Elem::Color,
        Elem::Variant,
    ];

    /// The `--type` token and operation-name suffix.
    pub fn token(self) -> &'static str {
        use Elem::*;
        match self {
            Short => "short",
            UShort => "ushort",
            Long => "long",
            ULong => "ulong",
            LongLong => "longlong",
            ULongLong => "ulonglong",
            Float => "float",
            Double => "double",
            Char => "char",
            WChar => "wchar",
            Octet => "octet",
            Boolean => "boolean",
            String => "string",
            WString => "wstring",
            PerfStruct => "perfstruct",
            MyStruct => "mystruct",
            Cd => "cd",
            CharStruct => "charstruct",
            FloatStruct => "floatstruct",
            LongStruct => "longstruct",
            DoubleStruct => "doublestruct",
            LongQuad => "longquad",
            MixedQuad => "mixedquad",
            FloatPair => "floatpair",
            Color => "color",
            Variant => "variant",
        }
    }

    /// The IDL name of the element type.
    pub fn idl_name(self) -> &'static str {
        use Elem::*;
        match self {
            Short => "short",
            UShort => "unsigned short",
            Long => "long",
            ULong => "unsigned long",
            LongLong => "long long",
            ULongLong => "unsigned long long",
            Float => "float",
            Double => "double",
            Char => "char",
            WChar => "wchar",
            Octet => "octet",
            Boolean => "boolean",
            String => "string",
            WString => "wstring",
            PerfStruct => "PerfStruct",
            MyStruct => "MyStruct",
            Cd => "CD",
            CharStruct => "CharStruct",
            FloatStruct => "FloatStruct",
            LongStruct => "LongStruct",
            DoubleStruct => "DoubleStruct",
            LongQuad => "LongQuad",
            MixedQuad => "MixedQuad",
            FloatPair => "FloatPair",
            Color => "Color",
            Variant => "Variant",
        }
    }

    /// The sequence typedef's name in bench.idl (`LongSeq`, `CDSeq` …).
    pub fn seq_name(self) -> String {
        use Elem::*;
        let base = match self {
            Short => "Short",
            UShort => "UShort",
            Long => "Long",
            ULong => "ULong",
            LongLong => "LongLong",
            ULongLong => "ULongLong",
            Float => "Float",
            Double => "Double",
            Char => "Char",
            WChar => "WChar",
            Octet => "Octet",
            Boolean => "Boolean",
            String => "String",
            WString => "WString",
            other => other.idl_name(),
        };
        format!("{base}Seq")
    }

    /// Repository id of the sequence typedef.
    pub fn seq_repo_id(self) -> String {
        format!("IDL:Bench/{}:1.0", self.seq_name())
    }

    /// Wire stride of one element inside a sequence, for fixed-size types.
    pub fn fixed_stride(self) -> Option<u64> {
        use Elem::*;
        Some(match self {
            Char | Octet | Boolean | CharStruct => 1,
            Short | UShort | WChar => 2,
            Long | ULong | Float | FloatStruct | LongStruct | Color => 4,
            LongLong | ULongLong | Double | DoubleStruct | FloatPair => 8,
            Cd | LongQuad | MixedQuad => 16,
            PerfStruct => 24,
            String | WString | MyStruct | Variant => return None,
        })
    }

    /// Payload bytes per generated element in throughput runs
    /// (docs/vendor-protocol.md): the fixed stride, or the counted size of
    /// the generated variable-size element.
    pub fn nominal_stride(self) -> u64 {
        match self {
            Elem::String => 4 + STRING_CHARS as u64 + 1,
            Elem::WString => 4 + 2 * WSTRING_CHARS as u64,
            Elem::MyStruct => 1 + (4 + STRING_CHARS as u64 + 1) + 4,
            Elem::Variant => 4 + 8,
            other => other.fixed_stride().expect("fixed-size"),
        }
    }

    /// Elements in a payload of `size` bytes: `size / stride`, at least 1
    /// when `size > 0`.
    pub fn count_for_size(self, size: u64) -> u64 {
        if size == 0 {
            0
        } else {
            (size / self.nominal_stride()).max(1)
        }
    }

    /// Whether the element needs a negotiated wide code set.
    pub fn is_wide(self) -> bool {
        matches!(self, Elem::WChar | Elem::WString)
    }

    /// The operation name for a call mode (built once per program and
    /// indexed, not searched: a benchmark asks for it on every call).
    pub fn op_name(self, mode: CallMode) -> &'static str {
        static NAMES: std::sync::OnceLock<Vec<[String; 3]>> = std::sync::OnceLock::new();
        let names = NAMES.get_or_init(|| {
            Elem::ALL
                .iter()
                .map(|e| {
                    let t = e.token();
                    [
                        format!("send_oneway_{t}"),
                        format!("send_{t}"),
                        format!("echo_{t}"),
                    ]
                })
                .collect()
        });
        // ALL lists the variants in declaration order (a test checks).
        let i = self as usize;
        let m = match mode {
            CallMode::Oneway => 0,
            CallMode::Twoway => 1,
            CallMode::Echo => 2,
        };
        &names[i][m]
    }
}

impl fmt::Display for Elem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.token())
    }
}

/// An unknown `--type` token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown element type {0:?}; known: {known}", known = Elem::ALL.map(Elem::token).join(", "))]
pub struct UnknownElem(pub String);

impl FromStr for Elem {
    type Err = UnknownElem;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().to_ascii_lowercase();
        Elem::ALL
            .into_iter()
            .find(|e| e.token() == t)
            .ok_or_else(|| UnknownElem(s.to_string()))
    }
}

/// The three return styles of the payload operations (seed 004).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CallMode {
    /// `send_oneway_T`: no reply.
    Oneway,
    /// `send_T`: twoway, empty reply.
    Twoway,
    /// `echo_T`: the input returned.
    Echo,
}

impl CallMode {
    /// `oneway`, `twoway`, `echo`.
    pub fn name(self) -> &'static str {
        match self {
            CallMode::Oneway => "oneway",
            CallMode::Twoway => "twoway",
            CallMode::Echo => "echo",
        }
    }
}

impl FromStr for CallMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "oneway" => Ok(CallMode::Oneway),
            "twoway" | "void" | "send" => Ok(CallMode::Twoway),
            "echo" => Ok(CallMode::Echo),
            _ => Err(format!("unknown mode {s:?}; use oneway, twoway or echo")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_are_unique() {
        for e in Elem::ALL {
            assert_eq!(e.token().parse::<Elem>().unwrap(), e);
        }
        let mut t: Vec<_> = Elem::ALL.iter().map(|e| e.token()).collect();
        t.sort();
        t.dedup();
        assert_eq!(t.len(), 26);
        assert!("quaternion"
            .parse::<Elem>()
            .unwrap_err()
            .to_string()
            .contains("perfstruct"));
    }

    #[test]
    fn all_is_in_declaration_order_so_op_names_index_by_variant() {
        for (i, e) in Elem::ALL.into_iter().enumerate() {
            assert_eq!(e as usize, i, "{e:?}");
            let t = e.token();
            assert_eq!(e.op_name(CallMode::Oneway), format!("send_oneway_{t}"));
            assert_eq!(e.op_name(CallMode::Twoway), format!("send_{t}"));
            assert_eq!(e.op_name(CallMode::Echo), format!("echo_{t}"));
        }
    }

    #[test]
    fn strides_follow_bench_idl() {
        assert_eq!(Elem::PerfStruct.fixed_stride(), Some(24));
        assert_eq!(Elem::Cd.fixed_stride(), Some(16));
        assert_eq!(Elem::MixedQuad.fixed_stride(), Some(16));
        assert_eq!(Elem::String.nominal_stride(), 20);
        assert_eq!(Elem::WString.nominal_stride(), 20);
        assert_eq!(Elem::MyStruct.nominal_stride(), 25);
        assert_eq!(Elem::Variant.nominal_stride(), 12);
        assert_eq!(Elem::Double.count_for_size(65536), 8192);
        assert_eq!(Elem::PerfStruct.count_for_size(1024), 42);
        assert_eq!(Elem::PerfStruct.count_for_size(1), 1);
        assert_eq!(Elem::Octet.count_for_size(0), 0);
    }

    #[test]
    fn names_match_the_idl_file() {
        let idl = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/idl/bench.idl"
        ))
        .unwrap();
        for e in Elem::ALL {
            for m in [CallMode::Oneway, CallMode::Twoway, CallMode::Echo] {
                let op = e.op_name(m);
                assert!(
                    idl.contains(&format!(" {op}(in {} s);", e.seq_name())),
                    "{op} missing from bench.idl"
                );
            }
            assert!(idl.contains(&format!(
                "typedef sequence<{}> {};",
                e.idl_name(),
                e.seq_name()
            )));
        }
    }
}
