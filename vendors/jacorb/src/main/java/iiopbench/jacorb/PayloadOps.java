package iiopbench.jacorb;

import Bench.CD;
import Bench.CharStruct;
import Bench.Color;
import Bench.DoubleStruct;
import Bench.FloatPair;
import Bench.FloatStruct;
import Bench.LongQuad;
import Bench.LongStruct;
import Bench.MixedQuad;
import Bench.MyStruct;
import Bench.Perf;
import Bench.PerfStruct;
import Bench.Variant;

/**
 * The payload operations of Bench::Perf as values: for an element type
 * token and an op (oneway, send, echo), a {@link Call} that invokes the
 * generated stub method directly (no reflection on the measured path). The
 * client resolves its Call once, before the measured loop.
 */
final class PayloadOps {
  private PayloadOps() {}

  /** One invocation with a prebuilt payload array; returns the echo result, or null. */
  @FunctionalInterface
  interface Call {
    Object call(Perf p, Object payload);
  }

  /** The Call of {@code op} ("oneway", "send" or "echo") for element type {@code token}. */
  static Call of(String op, String token) {
    switch (op) {
      case "oneway": return oneway(token);
      case "send": return send(token);
      case "echo": return echo(token);
      default: throw new IllegalArgumentException("unknown payload op '" + op + "'");
    }
  }

  static Call oneway(String token) {
    switch (token) {
      case "short": return (p, s) -> { p.send_oneway_short((short[]) s); return null; };
      case "ushort": return (p, s) -> { p.send_oneway_ushort((short[]) s); return null; };
      case "long": return (p, s) -> { p.send_oneway_long((int[]) s); return null; };
      case "ulong": return (p, s) -> { p.send_oneway_ulong((int[]) s); return null; };
      case "longlong": return (p, s) -> { p.send_oneway_longlong((long[]) s); return null; };
      case "ulonglong": return (p, s) -> { p.send_oneway_ulonglong((long[]) s); return null; };
      case "float": return (p, s) -> { p.send_oneway_float((float[]) s); return null; };
      case "double": return (p, s) -> { p.send_oneway_double((double[]) s); return null; };
      case "char": return (p, s) -> { p.send_oneway_char((char[]) s); return null; };
      case "wchar": return (p, s) -> { p.send_oneway_wchar((char[]) s); return null; };
      case "octet": return (p, s) -> { p.send_oneway_octet((byte[]) s); return null; };
      case "boolean": return (p, s) -> { p.send_oneway_boolean((boolean[]) s); return null; };
      case "string": return (p, s) -> { p.send_oneway_string((String[]) s); return null; };
      case "wstring": return (p, s) -> { p.send_oneway_wstring((String[]) s); return null; };
      case "perfstruct": return (p, s) -> { p.send_oneway_perfstruct((PerfStruct[]) s); return null; };
      case "mystruct": return (p, s) -> { p.send_oneway_mystruct((MyStruct[]) s); return null; };
      case "cd": return (p, s) -> { p.send_oneway_cd((CD[]) s); return null; };
      case "charstruct": return (p, s) -> { p.send_oneway_charstruct((CharStruct[]) s); return null; };
      case "floatstruct": return (p, s) -> { p.send_oneway_floatstruct((FloatStruct[]) s); return null; };
      case "longstruct": return (p, s) -> { p.send_oneway_longstruct((LongStruct[]) s); return null; };
      case "doublestruct": return (p, s) -> { p.send_oneway_doublestruct((DoubleStruct[]) s); return null; };
      case "longquad": return (p, s) -> { p.send_oneway_longquad((LongQuad[]) s); return null; };
      case "mixedquad": return (p, s) -> { p.send_oneway_mixedquad((MixedQuad[]) s); return null; };
      case "floatpair": return (p, s) -> { p.send_oneway_floatpair((FloatPair[]) s); return null; };
      case "color": return (p, s) -> { p.send_oneway_color((Color[]) s); return null; };
      case "variant": return (p, s) -> { p.send_oneway_variant((Variant[]) s); return null; };
      default: throw new IllegalArgumentException("unknown element type token '" + token + "'");
    }
  }

  static Call send(String token) {
    switch (token) {
      case "short": return (p, s) -> { p.send_short((short[]) s); return null; };
      case "ushort": return (p, s) -> { p.send_ushort((short[]) s); return null; };
      case "long": return (p, s) -> { p.send_long((int[]) s); return null; };
      case "ulong": return (p, s) -> { p.send_ulong((int[]) s); return null; };
      case "longlong": return (p, s) -> { p.send_longlong((long[]) s); return null; };
      case "ulonglong": return (p, s) -> { p.send_ulonglong((long[]) s); return null; };
      case "float": return (p, s) -> { p.send_float((float[]) s); return null; };
      case "double": return (p, s) -> { p.send_double((double[]) s); return null; };
      case "char": return (p, s) -> { p.send_char((char[]) s); return null; };
      case "wchar": return (p, s) -> { p.send_wchar((char[]) s); return null; };
      case "octet": return (p, s) -> { p.send_octet((byte[]) s); return null; };
      case "boolean": return (p, s) -> { p.send_boolean((boolean[]) s); return null; };
      case "string": return (p, s) -> { p.send_string((String[]) s); return null; };
      case "wstring": return (p, s) -> { p.send_wstring((String[]) s); return null; };
      case "perfstruct": return (p, s) -> { p.send_perfstruct((PerfStruct[]) s); return null; };
      case "mystruct": return (p, s) -> { p.send_mystruct((MyStruct[]) s); return null; };
      case "cd": return (p, s) -> { p.send_cd((CD[]) s); return null; };
      case "charstruct": return (p, s) -> { p.send_charstruct((CharStruct[]) s); return null; };
      case "floatstruct": return (p, s) -> { p.send_floatstruct((FloatStruct[]) s); return null; };
      case "longstruct": return (p, s) -> { p.send_longstruct((LongStruct[]) s); return null; };
      case "doublestruct": return (p, s) -> { p.send_doublestruct((DoubleStruct[]) s); return null; };
      case "longquad": return (p, s) -> { p.send_longquad((LongQuad[]) s); return null; };
      case "mixedquad": return (p, s) -> { p.send_mixedquad((MixedQuad[]) s); return null; };
      case "floatpair": return (p, s) -> { p.send_floatpair((FloatPair[]) s); return null; };
      case "color": return (p, s) -> { p.send_color((Color[]) s); return null; };
      case "variant": return (p, s) -> { p.send_variant((Variant[]) s); return null; };
      default: throw new IllegalArgumentException("unknown element type token '" + token + "'");
    }
  }

  static Call echo(String token) {
    switch (token) {
      case "short": return (p, s) -> p.echo_short((short[]) s);
      case "ushort": return (p, s) -> p.echo_ushort((short[]) s);
      case "long": return (p, s) -> p.echo_long((int[]) s);
      case "ulong": return (p, s) -> p.echo_ulong((int[]) s);
      case "longlong": return (p, s) -> p.echo_longlong((long[]) s);
      case "ulonglong": return (p, s) -> p.echo_ulonglong((long[]) s);
      case "float": return (p, s) -> p.echo_float((float[]) s);
      case "double": return (p, s) -> p.echo_double((double[]) s);
      case "char": return (p, s) -> p.echo_char((char[]) s);
      case "wchar": return (p, s) -> p.echo_wchar((char[]) s);
      case "octet": return (p, s) -> p.echo_octet((byte[]) s);
      case "boolean": return (p, s) -> p.echo_boolean((boolean[]) s);
      case "string": return (p, s) -> p.echo_string((String[]) s);
      case "wstring": return (p, s) -> p.echo_wstring((String[]) s);
      case "perfstruct": return (p, s) -> p.echo_perfstruct((PerfStruct[]) s);
      case "mystruct": return (p, s) -> p.echo_mystruct((MyStruct[]) s);
      case "cd": return (p, s) -> p.echo_cd((CD[]) s);
      case "charstruct": return (p, s) -> p.echo_charstruct((CharStruct[]) s);
      case "floatstruct": return (p, s) -> p.echo_floatstruct((FloatStruct[]) s);
      case "longstruct": return (p, s) -> p.echo_longstruct((LongStruct[]) s);
      case "doublestruct": return (p, s) -> p.echo_doublestruct((DoubleStruct[]) s);
      case "longquad": return (p, s) -> p.echo_longquad((LongQuad[]) s);
      case "mixedquad": return (p, s) -> p.echo_mixedquad((MixedQuad[]) s);
      case "floatpair": return (p, s) -> p.echo_floatpair((FloatPair[]) s);
      case "color": return (p, s) -> p.echo_color((Color[]) s);
      case "variant": return (p, s) -> p.echo_variant((Variant[]) s);
      default: throw new IllegalArgumentException("unknown element type token '" + token + "'");
    }
  }
}
