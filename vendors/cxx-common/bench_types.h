// bench_types.h -- one traits struct per bench.idl element type token.
//
// ORB-neutral: uses only the standard IDL-to-C++ mapping, so omniORB and TAO
// compile the same code. The ORB header (BENCH_ORB_HEADER, e.g.
// orb_omniorb.h) must be included first; it pulls in the stubs of bench.idl.
//
// For every token T of bench.idl's NAMING SCHEME, `T_<tok>` provides:
//   Seq                         the payload sequence type
//   name()                      the token ("short", "perfstruct", ...)
//   stride                      bytes per element used to size payloads
//                               (docs/vendor-protocol.md, "Payload contents")
//   fill(seq, n, throughput)    n deterministic elements; `throughput`
//                               makes every Variant the double branch
//   same(a, b, i)               element i of a equals element i of b
//   bytes(seq)                  payload bytes by bench.idl's COUNTERS rules
//   oneway/send/echo(perf, seq) the three operations on Bench::Perf
//
// A traits struct, not overloading on element types, because several CORBA
// basic types share one C++ type in omniORB (Char, Octet and Boolean are all
// unsigned char there).

#ifndef IIOPBENCH_BENCH_TYPES_H
#define IIOPBENCH_BENCH_TYPES_H

#include <stdint.h>
#include <string.h>

namespace bench {

typedef CORBA::ULong Idx;

// Element i's integer value before truncation to the member type.
inline uint64_t ival(Idx i) { return (uint64_t)i * 7u + 3u; }
// Element i's floating-point value.
inline double fval(Idx i) { return (double)i * 0.5 + 0.25; }
inline CORBA::Char cval(Idx i) { return (CORBA::Char)('a' + i % 26); }
inline CORBA::WChar wval(Idx i) { return (CORBA::WChar)('A' + i % 26); }

// Two's-complement truncation of ival(i) + add to each integer type.
inline CORBA::Short s16(Idx i, unsigned add = 0) {
  return (CORBA::Short)(int16_t)(uint16_t)(ival(i) + add);
}
inline CORBA::UShort u16(Idx i) { return (CORBA::UShort)(uint16_t)ival(i); }
inline CORBA::Long s32(Idx i, unsigned add = 0) {
  return (CORBA::Long)(int32_t)(uint32_t)(ival(i) + add);
}
inline CORBA::ULong u32(Idx i) { return (CORBA::ULong)(uint32_t)ival(i); }
inline CORBA::LongLong s64(Idx i) { return (CORBA::LongLong)(int64_t)ival(i); }
inline CORBA::ULongLong u64(Idx i) { return (CORBA::ULongLong)ival(i); }
inline CORBA::Octet o8(Idx i) { return (CORBA::Octet)(ival(i) & 0xFF); }

// The 15-character string of element i ('a' + (i + k) % 26).
inline void str15(Idx i, char out[16]) {
  for (unsigned k = 0; k < 15; ++k) out[k] = (char)('a' + (i + k) % 26);
  out[15] = 0;
}
// The 8-character wstring of element i.
inline void wstr8(Idx i, CORBA::WChar out[9]) {
  for (unsigned k = 0; k < 8; ++k) out[k] = (CORBA::WChar)('a' + (i + k) % 26);
  out[8] = 0;
}
inline size_t wlen(const CORBA::WChar* w) {
  size_t n = 0;
  while (w[n]) ++n;
  return n;
}
inline bool wsame(const CORBA::WChar* a, const CORBA::WChar* b) {
  size_t k = 0;
  for (; a[k] && b[k]; ++k)
    if (a[k] != b[k]) return false;
  return a[k] == b[k];
}
// The characters of a string sequence element or string struct member.
// TAO's const operator[] yields `const char*`; omniORB's and TAO's managed
// members have in(): one helper for both mappings.
inline const char* cs(const char* s) { return s; }
template <class S>
inline const char* cs(const S& s) {
  return s.in();
}
inline const CORBA::WChar* ws(const CORBA::WChar* s) { return s; }
template <class S>
inline const CORBA::WChar* ws(const S& s) {
  return s.in();
}
// string wire size by the COUNTERS rule: length field, characters, NUL.
inline uint64_t sbytes(const char* s) { return 4 + strlen(s) + 1; }

// Fixed-size element types: bytes = count x stride.
#define BENCH_FIXED(tok, SeqT, STRIDE, SET, SAME)                            \
  struct E_##tok {                                                           \
    typedef Bench::SeqT Seq;                                                 \
    static constexpr unsigned stride = STRIDE;                                   \
    static void fill(Seq& s, Idx n, bool) {                                  \
      s.length(n);                                                           \
      for (Idx i = 0; i < n; ++i) { SET; }                                   \
    }                                                                        \
    static bool same(const Seq& a, const Seq& b, Idx i) { return SAME; }     \
    static uint64_t bytes(const Seq& s) { return (uint64_t)s.length() * STRIDE; } \
  };

BENCH_FIXED(short, ShortSeq, 2, s[i] = s16(i), a[i] == b[i])
BENCH_FIXED(ushort, UShortSeq, 2, s[i] = u16(i), a[i] == b[i])
BENCH_FIXED(long, LongSeq, 4, s[i] = s32(i), a[i] == b[i])
BENCH_FIXED(ulong, ULongSeq, 4, s[i] = u32(i), a[i] == b[i])
BENCH_FIXED(longlong, LongLongSeq, 8, s[i] = s64(i), a[i] == b[i])
BENCH_FIXED(ulonglong, ULongLongSeq, 8, s[i] = u64(i), a[i] == b[i])
BENCH_FIXED(float, FloatSeq, 4, s[i] = (CORBA::Float)fval(i), a[i] == b[i])
BENCH_FIXED(double, DoubleSeq, 8, s[i] = fval(i), a[i] == b[i])
BENCH_FIXED(char, CharSeq, 1, s[i] = cval(i), a[i] == b[i])
BENCH_FIXED(wchar, WCharSeq, 2, s[i] = wval(i), a[i] == b[i])
BENCH_FIXED(octet, OctetSeq, 1, s[i] = o8(i), a[i] == b[i])
BENCH_FIXED(boolean, BooleanSeq, 1, s[i] = (i % 3 == 0), (a[i] ? 1 : 0) == (b[i] ? 1 : 0))
BENCH_FIXED(perfstruct, PerfStructSeq, 24,
            (s[i].s = s16(i), s[i].c = cval(i), s[i].l = s32(i), s[i].o = o8(i), s[i].d = fval(i)),
            a[i].s == b[i].s && a[i].c == b[i].c && a[i].l == b[i].l && a[i].o == b[i].o &&
                a[i].d == b[i].d)
BENCH_FIXED(cd, CDSeq, 16, (s[i].c = cval(i), s[i].d = fval(i)),
            a[i].c == b[i].c && a[i].d == b[i].d)
BENCH_FIXED(charstruct, CharStructSeq, 1, s[i].c = cval(i), a[i].c == b[i].c)
BENCH_FIXED(floatstruct, FloatStructSeq, 4, s[i].f = (CORBA::Float)fval(i), a[i].f == b[i].f)
BENCH_FIXED(longstruct, LongStructSeq, 4, s[i].l = s32(i), a[i].l == b[i].l)
BENCH_FIXED(doublestruct, DoubleStructSeq, 8, s[i].d = fval(i), a[i].d == b[i].d)
BENCH_FIXED(longquad, LongQuadSeq, 16,
            (s[i].a = s32(i, 0), s[i].b = s32(i, 1), s[i].c = s32(i, 2), s[i].d = s32(i, 3)),
            a[i].a == b[i].a && a[i].b == b[i].b && a[i].c == b[i].c && a[i].d == b[i].d)
BENCH_FIXED(mixedquad, MixedQuadSeq, 16,
            (s[i].d = fval(i), s[i].f = (CORBA::Float)fval(i), s[i].s1 = s16(i, 0),
             s[i].s2 = s16(i, 1)),
            a[i].d == b[i].d && a[i].f == b[i].f && a[i].s1 == b[i].s1 && a[i].s2 == b[i].s2)
BENCH_FIXED(floatpair, FloatPairSeq, 8,
            (s[i].a = (CORBA::Float)fval(i), s[i].b = (CORBA::Float)(fval(i) + 1.0)),
            a[i].a == b[i].a && a[i].b == b[i].b)
BENCH_FIXED(color, ColorSeq, 4, s[i] = (Bench::Color)(i % 3), a[i] == b[i])
#undef BENCH_FIXED

struct E_string {
  typedef Bench::StringSeq Seq;
  static constexpr unsigned stride = 20;
  static void fill(Seq& s, Idx n, bool) {
    s.length(n);
    char buf[16];
    for (Idx i = 0; i < n; ++i) {
      str15(i, buf);
      s[i] = CORBA::string_dup(buf);
    }
  }
  static bool same(const Seq& a, const Seq& b, Idx i) { return strcmp(cs(a[i]), cs(b[i])) == 0; }
  static uint64_t bytes(const Seq& s) {
    uint64_t n = 0;
    for (Idx i = 0; i < s.length(); ++i) n += sbytes(cs(s[i]));
    return n;
  }
};

struct E_wstring {
  typedef Bench::WStringSeq Seq;
  static constexpr unsigned stride = 20;
  static void fill(Seq& s, Idx n, bool) {
    s.length(n);
    CORBA::WChar buf[9];
    for (Idx i = 0; i < n; ++i) {
      wstr8(i, buf);
      s[i] = CORBA::wstring_dup(buf);
    }
  }
  static bool same(const Seq& a, const Seq& b, Idx i) { return wsame(ws(a[i]), ws(b[i])); }
  static uint64_t bytes(const Seq& s) {
    uint64_t n = 0;
    for (Idx i = 0; i < s.length(); ++i) n += 4 + 2 * wlen(ws(s[i]));
    return n;
  }
};

struct E_mystruct {
  typedef Bench::MyStructSeq Seq;
  static constexpr unsigned stride = 25;
  static void fill(Seq& s, Idx n, bool) {
    s.length(n);
    char buf[16];
    for (Idx i = 0; i < n; ++i) {
      str15(i, buf);
      s[i].b = (i % 3 == 0);
      s[i].s = CORBA::string_dup(buf);
      s[i].l = s32(i);
    }
  }
  static bool same(const Seq& a, const Seq& b, Idx i) {
    return (a[i].b ? 1 : 0) == (b[i].b ? 1 : 0) && strcmp(cs(a[i].s), cs(b[i].s)) == 0 &&
           a[i].l == b[i].l;
  }
  static uint64_t bytes(const Seq& s) {
    uint64_t n = 0;
    for (Idx i = 0; i < s.length(); ++i) n += 1 + sbytes(cs(s[i].s)) + 4;
    return n;
  }
};

struct E_variant {
  typedef Bench::VariantSeq Seq;
  static constexpr unsigned stride = 12;
  // i % 4: 1 long, 2 double, 3 string, 0 the default branch (octet) with
  // discriminator 0; in throughput runs always the double branch.
  static void fill(Seq& s, Idx n, bool throughput) {
    s.length(n);
    char buf[16];
    for (Idx i = 0; i < n; ++i) {
      switch (throughput ? 2 : i % 4) {
        case 1: s[i].l(s32(i)); break;
        case 2: s[i].d(fval(i)); break;
        case 3:
          str15(i, buf);
          s[i].s((const char*)buf);
          break;
        default:
          s[i].o(o8(i));
          s[i]._d(0);
          break;
      }
    }
  }
  static bool same(const Seq& a, const Seq& b, Idx i) {
    if (a[i]._d() != b[i]._d()) return false;
    switch (a[i]._d()) {
      case 1: return a[i].l() == b[i].l();
      case 2: return a[i].d() == b[i].d();
      case 3: return strcmp(a[i].s(), b[i].s()) == 0;
      default: return a[i].o() == b[i].o();
    }
  }
  static uint64_t bytes(const Seq& s) {
    uint64_t n = 0;
    for (Idx i = 0; i < s.length(); ++i) {
      switch (s[i]._d()) {
        case 1: n += 4 + 4; break;
        case 2: n += 4 + 8; break;
        case 3: n += 4 + sbytes(s[i].s()); break;
        default: n += 4 + 1; break;
      }
    }
    return n;
  }
};

// The operations of Bench::Perf for each token.
#define BENCH_OPS(tok)                                                          \
  struct T_##tok : E_##tok {                                                    \
    static const char* name() { return #tok; }                                  \
    static void oneway(Bench::Perf_ptr p, const Seq& s) { p->send_oneway_##tok(s); } \
    static void send(Bench::Perf_ptr p, const Seq& s) { p->send_##tok(s); }     \
    static Seq* echo(Bench::Perf_ptr p, const Seq& s) { return p->echo_##tok(s); } \
  };

// Every token, in bench.idl's order. X(tok) is applied to each.
#define BENCH_TOKENS(X)                                                        \
  X(short) X(ushort) X(long) X(ulong) X(longlong) X(ulonglong) X(float)        \
  X(double) X(char) X(wchar) X(octet) X(boolean) X(string) X(wstring)          \
  X(perfstruct) X(mystruct) X(cd) X(charstruct) X(floatstruct) X(longstruct)   \
  X(doublestruct) X(longquad) X(mixedquad) X(floatpair) X(color) X(variant)

BENCH_TOKENS(BENCH_OPS)
#undef BENCH_OPS

// Element count for a payload of `size` bytes: size / stride, at least 1
// when size > 0.
inline Idx elements_for(uint64_t size, unsigned stride) {
  if (size == 0) return 0;
  uint64_t n = size / stride;
  return (Idx)(n == 0 ? 1 : n);
}

}  // namespace bench

#endif
