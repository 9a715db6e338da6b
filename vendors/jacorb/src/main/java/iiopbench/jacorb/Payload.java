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
import Bench.PerfStruct;
import Bench.Variant;
import java.util.Arrays;
import java.util.List;

/**
 * Payloads of bench.idl: the element type tokens, their deterministic
 * contents (docs/vendor-protocol.md, "Payload contents and sizes"), the
 * byte count bench.idl's COUNTERS section assigns to a decoded sequence, and
 * element-wise equality for the conformance echo checks.
 *
 * Shared by the server (byte counters) and the client (payload building,
 * sizing, checking), so both apply exactly the same rules.
 */
final class Payload {
  private Payload() {}

  /** Every element type token, in bench.idl's order. */
  static final List<String> TOKENS =
      List.of(
          "short", "ushort", "long", "ulong", "longlong", "ulonglong", "float", "double",
          "char", "wchar", "octet", "boolean", "string", "wstring", "perfstruct",
          "mystruct", "cd", "charstruct", "floatstruct", "longstruct", "doublestruct",
          "longquad", "mixedquad", "floatpair", "color", "variant");

  /** Characters of every string element; wstrings have 8. */
  static final int STRING_CHARS = 15;

  static final int WSTRING_CHARS = 8;

  /**
   * Payload bytes of one element when sizing a payload from --size: the wire
   * stride for fixed-size types; 20 for a 15-char string (4 + 15 + 1) and an
   * 8-char wstring (4 + 2 * 8); 25 for MyStruct (1 + 20 + 4); 12 for a
   * double-branch Variant (4 + 8).
   */
  static int stride(String token) {
    switch (token) {
      case "short": case "ushort": case "wchar": return 2;
      case "long": case "ulong": case "float": case "floatstruct": case "longstruct":
      case "color": return 4;
      case "longlong": case "ulonglong": case "double": case "doublestruct":
      case "floatpair": return 8;
      case "char": case "octet": case "boolean": case "charstruct": return 1;
      case "perfstruct": return 24;
      case "cd": case "longquad": case "mixedquad": return 16;
      case "string": case "wstring": return 20;
      case "mystruct": return 25;
      case "variant": return 12;
      default: throw new IllegalArgumentException("unknown element type token '" + token + "'");
    }
  }

  /** Element count for a payload of {@code size} bytes: floor, at least 1 when size > 0. */
  static int elementsFor(String token, long size) {
    if (size <= 0) {
      return 0;
    }
    long n = Math.max(size / stride(token), 1);
    if (n > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException("--size " + size + " is too large for a Java array");
    }
    return (int) n;
  }

  // ---- deterministic contents ------------------------------------------

  static int intOf(int i) {
    return i * 7 + 3;
  }

  static double realOf(int i) {
    return i * 0.5 + 0.25;
  }

  static char charOf(int i) {
    return (char) ('a' + (i % 26));
  }

  static char wcharOf(int i) {
    return (char) ('A' + (i % 26));
  }

  static String stringOf(int i, int chars) {
    char[] c = new char[chars];
    for (int k = 0; k < chars; k++) {
      c[k] = (char) ('a' + ((i + k) % 26));
    }
    return new String(c);
  }

  static Variant variantOf(int i, boolean doubleOnly) {
    Variant v = new Variant();
    int sel = doubleOnly ? 2 : i % 4;
    switch (sel) {
      case 1: v.l(intOf(i)); break;
      case 2: v.d(realOf(i)); break;
      case 3: v.s(stringOf(i, STRING_CHARS)); break;
      default: v.o(0, (byte) (intOf(i) & 0xFF)); break;
    }
    return v;
  }

  /**
   * The payload array of {@code n} elements of type {@code token}, typed as
   * the generated operations take it. {@code variantDoubleOnly} selects the
   * double branch for every Variant (throughput runs).
   */
  static Object build(String token, int n, boolean variantDoubleOnly) {
    switch (token) {
      case "short": case "ushort": {
        short[] a = new short[n];
        for (int i = 0; i < n; i++) a[i] = (short) intOf(i);
        return a;
      }
      case "long": case "ulong": {
        int[] a = new int[n];
        for (int i = 0; i < n; i++) a[i] = intOf(i);
        return a;
      }
      case "longlong": case "ulonglong": {
        long[] a = new long[n];
        // i * 7 + 3 without 32-bit overflow.
        for (int i = 0; i < n; i++) a[i] = (long) i * 7 + 3;
        return a;
      }
      case "float": {
        float[] a = new float[n];
        for (int i = 0; i < n; i++) a[i] = (float) realOf(i);
        return a;
      }
      case "double": {
        double[] a = new double[n];
        for (int i = 0; i < n; i++) a[i] = realOf(i);
        return a;
      }
      case "char": {
        char[] a = new char[n];
        for (int i = 0; i < n; i++) a[i] = charOf(i);
        return a;
      }
      case "wchar": {
        char[] a = new char[n];
        for (int i = 0; i < n; i++) a[i] = wcharOf(i);
        return a;
      }
      case "octet": {
        byte[] a = new byte[n];
        for (int i = 0; i < n; i++) a[i] = (byte) (intOf(i) & 0xFF);
        return a;
      }
      case "boolean": {
        boolean[] a = new boolean[n];
        for (int i = 0; i < n; i++) a[i] = i % 3 == 0;
        return a;
      }
      case "string": {
        String[] a = new String[n];
        for (int i = 0; i < n; i++) a[i] = stringOf(i, STRING_CHARS);
        return a;
      }
      case "wstring": {
        String[] a = new String[n];
        for (int i = 0; i < n; i++) a[i] = stringOf(i, WSTRING_CHARS);
        return a;
      }
      case "perfstruct": {
        PerfStruct[] a = new PerfStruct[n];
        for (int i = 0; i < n; i++) {
          a[i] = new PerfStruct((short) intOf(i), charOf(i), intOf(i), (byte) (intOf(i) & 0xFF), realOf(i));
        }
        return a;
      }
      case "mystruct": {
        MyStruct[] a = new MyStruct[n];
        for (int i = 0; i < n; i++) a[i] = new MyStruct(i % 3 == 0, stringOf(i, STRING_CHARS), intOf(i));
        return a;
      }
      case "cd": {
        CD[] a = new CD[n];
        for (int i = 0; i < n; i++) a[i] = new CD(charOf(i), realOf(i));
        return a;
      }
      case "charstruct": {
        CharStruct[] a = new CharStruct[n];
        for (int i = 0; i < n; i++) a[i] = new CharStruct(charOf(i));
        return a;
      }
      case "floatstruct": {
        FloatStruct[] a = new FloatStruct[n];
        for (int i = 0; i < n; i++) a[i] = new FloatStruct((float) realOf(i));
        return a;
      }
      case "longstruct": {
        LongStruct[] a = new LongStruct[n];
        for (int i = 0; i < n; i++) a[i] = new LongStruct(intOf(i));
        return a;
      }
      case "doublestruct": {
        DoubleStruct[] a = new DoubleStruct[n];
        for (int i = 0; i < n; i++) a[i] = new DoubleStruct(realOf(i));
        return a;
      }
      case "longquad": {
        LongQuad[] a = new LongQuad[n];
        for (int i = 0; i < n; i++) {
          int b = intOf(i);
          a[i] = new LongQuad(b, b + 1, b + 2, b + 3);
        }
        return a;
      }
      case "mixedquad": {
        MixedQuad[] a = new MixedQuad[n];
        for (int i = 0; i < n; i++) {
          short s1 = (short) intOf(i);
          a[i] = new MixedQuad(realOf(i), (float) realOf(i), s1, (short) (s1 + 1));
        }
        return a;
      }
      case "floatpair": {
        FloatPair[] a = new FloatPair[n];
        for (int i = 0; i < n; i++) {
          float f = (float) realOf(i);
          a[i] = new FloatPair(f, f + 1);
        }
        return a;
      }
      case "color": {
        Color[] a = new Color[n];
        for (int i = 0; i < n; i++) a[i] = Color.from_int(i % 3);
        return a;
      }
      case "variant": {
        Variant[] a = new Variant[n];
        for (int i = 0; i < n; i++) a[i] = variantOf(i, variantDoubleOnly);
        return a;
      }
      default:
        throw new IllegalArgumentException("unknown element type token '" + token + "'");
    }
  }

  // ---- byte counting (bench.idl COUNTERS) ------------------------------

  static long stringBytes(String s) {
    return 4L + s.length() + 1;
  }

  static long wstringBytes(String s) {
    return 4L + 2L * s.length();
  }

  static long stringsBytes(String[] a) {
    long b = 0;
    for (String s : a) b += stringBytes(s);
    return b;
  }

  static long wstringsBytes(String[] a) {
    long b = 0;
    for (String s : a) b += wstringBytes(s);
    return b;
  }

  static long myStructsBytes(MyStruct[] a) {
    long b = 0;
    for (MyStruct m : a) b += 1 + stringBytes(m.s) + 4;
    return b;
  }

  static long variantBytes(Variant v) {
    switch (v.discriminator()) {
      case 1: return 4 + 4;
      case 2: return 4 + 8;
      case 3: return 4 + stringBytes(v.s());
      default: return 4 + 1;
    }
  }

  static long variantsBytes(Variant[] a) {
    long b = 0;
    for (Variant v : a) b += variantBytes(v);
    return b;
  }

  /** Payload bytes of a decoded sequence of type {@code token}, by bench.idl's rules. */
  static long bytes(String token, Object payload) {
    switch (token) {
      case "string": return stringsBytes((String[]) payload);
      case "wstring": return wstringsBytes((String[]) payload);
      case "mystruct": return myStructsBytes((MyStruct[]) payload);
      case "variant": return variantsBytes((Variant[]) payload);
      default: return (long) java.lang.reflect.Array.getLength(payload) * stride(token);
    }
  }

  // ---- equality for echo checks ----------------------------------------

  /**
   * Null when {@code got} equals {@code want} element by element, else a
   * description of the first difference.
   */
  static String diff(String token, Object want, Object got) {
    if (got == null) {
      return "reply is null";
    }
    int nw = java.lang.reflect.Array.getLength(want);
    int ng = java.lang.reflect.Array.getLength(got);
    if (nw != ng) {
      return "length " + ng + ", expected " + nw;
    }
    for (int i = 0; i < nw; i++) {
      Object w = java.lang.reflect.Array.get(want, i);
      Object g = java.lang.reflect.Array.get(got, i);
      if (!elementEquals(w, g)) {
        return "element " + i + " is " + show(g) + ", expected " + show(w);
      }
    }
    return null;
  }

  private static boolean elementEquals(Object w, Object g) {
    if (w instanceof PerfStruct) {
      PerfStruct a = (PerfStruct) w, b = (PerfStruct) g;
      return a.s == b.s && a.c == b.c && a.l == b.l && a.o == b.o && same(a.d, b.d);
    }
    if (w instanceof MyStruct) {
      MyStruct a = (MyStruct) w, b = (MyStruct) g;
      return a.b == b.b && a.s.equals(b.s) && a.l == b.l;
    }
    if (w instanceof CD) {
      CD a = (CD) w, b = (CD) g;
      return a.c == b.c && same(a.d, b.d);
    }
    if (w instanceof CharStruct) return ((CharStruct) w).c == ((CharStruct) g).c;
    if (w instanceof FloatStruct) return same(((FloatStruct) w).f, ((FloatStruct) g).f);
    if (w instanceof LongStruct) return ((LongStruct) w).l == ((LongStruct) g).l;
    if (w instanceof DoubleStruct) return same(((DoubleStruct) w).d, ((DoubleStruct) g).d);
    if (w instanceof LongQuad) {
      LongQuad a = (LongQuad) w, b = (LongQuad) g;
      return a.a == b.a && a.b == b.b && a.c == b.c && a.d == b.d;
    }
    if (w instanceof MixedQuad) {
      MixedQuad a = (MixedQuad) w, b = (MixedQuad) g;
      return same(a.d, b.d) && same(a.f, b.f) && a.s1 == b.s1 && a.s2 == b.s2;
    }
    if (w instanceof FloatPair) {
      FloatPair a = (FloatPair) w, b = (FloatPair) g;
      return same(a.a, b.a) && same(a.b, b.b);
    }
    if (w instanceof Color) return ((Color) w).value() == ((Color) g).value();
    if (w instanceof Variant) {
      Variant a = (Variant) w, b = (Variant) g;
      if (a.discriminator() != b.discriminator()) return false;
      switch (a.discriminator()) {
        case 1: return a.l() == b.l();
        case 2: return same(a.d(), b.d());
        case 3: return a.s().equals(b.s());
        default: return a.o() == b.o();
      }
    }
    if (w instanceof Double) return same((Double) w, (Double) g);
    if (w instanceof Float) return same((Float) w, (Float) g);
    return w.equals(g);
  }

  /** Bitwise equality: the echo must return the very values sent. */
  private static boolean same(double a, double b) {
    return Double.doubleToRawLongBits(a) == Double.doubleToRawLongBits(b);
  }

  private static boolean same(float a, float b) {
    return Float.floatToRawIntBits(a) == Float.floatToRawIntBits(b);
  }

  private static String show(Object o) {
    if (o instanceof PerfStruct) {
      PerfStruct p = (PerfStruct) o;
      return "{s=" + p.s + ",c=" + (int) p.c + ",l=" + p.l + ",o=" + p.o + ",d=" + p.d + "}";
    }
    if (o instanceof MyStruct) {
      MyStruct m = (MyStruct) o;
      return "{b=" + m.b + ",s=" + m.s + ",l=" + m.l + "}";
    }
    if (o instanceof Variant) {
      Variant v = (Variant) o;
      String val;
      switch (v.discriminator()) {
        case 1: val = String.valueOf(v.l()); break;
        case 2: val = String.valueOf(v.d()); break;
        case 3: val = v.s(); break;
        default: val = String.valueOf(v.o()); break;
      }
      return "{disc=" + v.discriminator() + "," + val + "}";
    }
    if (o instanceof Character) return "U+" + Integer.toHexString((Character) o);
    if (o instanceof Object[]) return Arrays.toString((Object[]) o);
    return String.valueOf(o);
  }
}
