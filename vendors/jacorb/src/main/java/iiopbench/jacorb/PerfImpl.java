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
import Bench.PerfPOA;
import Bench.PerfStruct;
import Bench.ServiceDist;
import Bench.ServiceKind;
import Bench.Single;
import Bench.Stats;
import Bench.Variant;
import java.lang.management.ManagementFactory;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import org.omg.CORBA.BAD_PARAM;

/**
 * The Bench::Perf servant: counters and operation semantics exactly as the
 * header of fixtures/idl/bench.idl defines them.
 *
 * Counters are LongAdders (the POA dispatches on a thread pool, so several
 * threads update them at once); mark() keeps the last value in an
 * AtomicLong so the disorder test is one atomic exchange.
 */
final class PerfImpl extends PerfPOA {
  private final LongAdder calls = new LongAdder();
  private final LongAdder oneways = new LongAdder();
  private final LongAdder bytes = new LongAdder();
  private final AtomicLong lastMark = new AtomicLong();
  private final LongAdder markDisorder = new LongAdder();
  private volatile long cpuAtReset = processCpuNanos();
  private final Single[] singles;

  /** {@code singles[i]} is the reference get_single(i) returns. */
  PerfImpl(Single[] singles) {
    this.singles = singles;
  }

  /**
   * User + system CPU time of this process in nanoseconds, or -1 when the
   * JVM cannot tell.
   */
  static long processCpuNanos() {
    java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
    if (os instanceof com.sun.management.OperatingSystemMXBean) {
      return ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime();
    }
    return -1;
  }

  private void twoway(long payloadBytes) {
    calls.increment();
    bytes.add(payloadBytes);
  }

  private void oneway(long payloadBytes) {
    oneways.increment();
    bytes.add(payloadBytes);
  }

  /** The counters as the stats line at exit reports them. */
  String statsLine() {
    return "stats calls=" + calls.sum() + " oneways=" + oneways.sum() + " bytes=" + bytes.sum();
  }

  // ---- control and counters -----------------------------------------

  @Override
  public void ping() {
    calls.increment();
  }

  @Override
  public void reset() {
    calls.reset();
    oneways.reset();
    bytes.reset();
    lastMark.set(0);
    markDisorder.reset();
    cpuAtReset = processCpuNanos();
  }

  @Override
  public Stats get_stats() {
    long cpu = processCpuNanos();
    double cpuSeconds = cpu < 0 ? -1.0 : (cpu - cpuAtReset) / 1e9;
    return new Stats(calls.sum(), oneways.sum(), bytes.sum(), cpuSeconds, lastMark.get(),
        markDisorder.sum());
  }

  @Override
  public void mark(long n) {
    oneways.increment();
    long previous = lastMark.getAndSet(n);
    if (n != previous + 1) {
      markDisorder.increment();
    }
  }

  @Override
  public double work(double serviceUs, ServiceDist dist, ServiceKind kind) {
    calls.increment();
    long start = System.nanoTime();
    double us = serviceUs;
    if (dist.value() == ServiceDist._DIST_EXPONENTIAL) {
      // Inverse transform: -mean * ln(1 - U), U uniform in [0, 1).
      us = -serviceUs * Math.log(1.0 - ThreadLocalRandom.current().nextDouble());
    }
    if (us > 0 && Double.isFinite(us)) {
      long deadline = start + (long) (us * 1000.0);
      if (kind.value() == ServiceKind._KIND_SPIN) {
        while (System.nanoTime() - deadline < 0) {
          Thread.onSpinWait();
        }
      } else {
        long left;
        while ((left = deadline - System.nanoTime()) > 0) {
          LockSupport.parkNanos(left);
        }
      }
    }
    return (System.nanoTime() - start) / 1000.0;
  }

  @Override
  public Single get_single(int index) {
    calls.increment();
    // IDL unsigned long: a Java int, negative above 2^31.
    if (index < 0 || index >= singles.length) {
      throw new BAD_PARAM("get_single(" + Integer.toUnsignedString(index)
          + "): index out of range 0.." + (singles.length - 1));
    }
    return singles[index];
  }

  @Override
  public void pass_cd(CD[] s) {
    twoway(16L * s.length);
  }

  @Override
  public void pass_both(char[] c, double[] d) {
    twoway(1L * c.length + 8L * d.length);
  }

  @Override
  public void pass_chars(char[] c) {
    twoway(1L * c.length);
  }

  @Override
  public void pass_doubles(double[] d) {
    twoway(8L * d.length);
  }

  // ---- payload operations (bench.idl NAMING SCHEME) --------------------
  // One line per operation: oneway()/twoway() with the payload bytes of
  // the decoded sequence by bench.idl's COUNTERS rules.

  @Override public void send_oneway_short(short[] s) { oneway(2L * s.length); }
  @Override public void send_short(short[] s) { twoway(2L * s.length); }
  @Override public short[] echo_short(short[] s) { twoway(2L * s.length); return s; }
  @Override public void send_oneway_ushort(short[] s) { oneway(2L * s.length); }
  @Override public void send_ushort(short[] s) { twoway(2L * s.length); }
  @Override public short[] echo_ushort(short[] s) { twoway(2L * s.length); return s; }
  @Override public void send_oneway_long(int[] s) { oneway(4L * s.length); }
  @Override public void send_long(int[] s) { twoway(4L * s.length); }
  @Override public int[] echo_long(int[] s) { twoway(4L * s.length); return s; }
  @Override public void send_oneway_ulong(int[] s) { oneway(4L * s.length); }
  @Override public void send_ulong(int[] s) { twoway(4L * s.length); }
  @Override public int[] echo_ulong(int[] s) { twoway(4L * s.length); return s; }
  @Override public void send_oneway_longlong(long[] s) { oneway(8L * s.length); }
  @Override public void send_longlong(long[] s) { twoway(8L * s.length); }
  @Override public long[] echo_longlong(long[] s) { twoway(8L * s.length); return s; }
  @Override public void send_oneway_ulonglong(long[] s) { oneway(8L * s.length); }
  @Override public void send_ulonglong(long[] s) { twoway(8L * s.length); }
  @Override public long[] echo_ulonglong(long[] s) { twoway(8L * s.length); return s; }
  @Override public void send_oneway_float(float[] s) { oneway(4L * s.length); }
  @Override public void send_float(float[] s) { twoway(4L * s.length); }
  @Override public float[] echo_float(float[] s) { twoway(4L * s.length); return s; }
  @Override public void send_oneway_double(double[] s) { oneway(8L * s.length); }
  @Override public void send_double(double[] s) { twoway(8L * s.length); }
  @Override public double[] echo_double(double[] s) { twoway(8L * s.length); return s; }
  @Override public void send_oneway_char(char[] s) { oneway(1L * s.length); }
  @Override public void send_char(char[] s) { twoway(1L * s.length); }
  @Override public char[] echo_char(char[] s) { twoway(1L * s.length); return s; }
  @Override public void send_oneway_wchar(char[] s) { oneway(2L * s.length); }
  @Override public void send_wchar(char[] s) { twoway(2L * s.length); }
  @Override public char[] echo_wchar(char[] s) { twoway(2L * s.length); return s; }
  @Override public void send_oneway_octet(byte[] s) { oneway(1L * s.length); }
  @Override public void send_octet(byte[] s) { twoway(1L * s.length); }
  @Override public byte[] echo_octet(byte[] s) { twoway(1L * s.length); return s; }
  @Override public void send_oneway_boolean(boolean[] s) { oneway(1L * s.length); }
  @Override public void send_boolean(boolean[] s) { twoway(1L * s.length); }
  @Override public boolean[] echo_boolean(boolean[] s) { twoway(1L * s.length); return s; }
  @Override public void send_oneway_string(String[] s) { oneway(Payload.stringsBytes(s)); }
  @Override public void send_string(String[] s) { twoway(Payload.stringsBytes(s)); }
  @Override public String[] echo_string(String[] s) { twoway(Payload.stringsBytes(s)); return s; }
  @Override public void send_oneway_wstring(String[] s) { oneway(Payload.wstringsBytes(s)); }
  @Override public void send_wstring(String[] s) { twoway(Payload.wstringsBytes(s)); }
  @Override public String[] echo_wstring(String[] s) { twoway(Payload.wstringsBytes(s)); return s; }
  @Override public void send_oneway_perfstruct(PerfStruct[] s) { oneway(24L * s.length); }
  @Override public void send_perfstruct(PerfStruct[] s) { twoway(24L * s.length); }
  @Override public PerfStruct[] echo_perfstruct(PerfStruct[] s) { twoway(24L * s.length); return s; }
  @Override public void send_oneway_mystruct(MyStruct[] s) { oneway(Payload.myStructsBytes(s)); }
  @Override public void send_mystruct(MyStruct[] s) { twoway(Payload.myStructsBytes(s)); }
  @Override public MyStruct[] echo_mystruct(MyStruct[] s) { twoway(Payload.myStructsBytes(s)); return s; }
  @Override public void send_oneway_cd(CD[] s) { oneway(16L * s.length); }
  @Override public void send_cd(CD[] s) { twoway(16L * s.length); }
  @Override public CD[] echo_cd(CD[] s) { twoway(16L * s.length); return s; }
  @Override public void send_oneway_charstruct(CharStruct[] s) { oneway(1L * s.length); }
  @Override public void send_charstruct(CharStruct[] s) { twoway(1L * s.length); }
  @Override public CharStruct[] echo_charstruct(CharStruct[] s) { twoway(1L * s.length); return s; }
  @Override public void send_oneway_floatstruct(FloatStruct[] s) { oneway(4L * s.length); }
  @Override public void send_floatstruct(FloatStruct[] s) { twoway(4L * s.length); }
  @Override public FloatStruct[] echo_floatstruct(FloatStruct[] s) { twoway(4L * s.length); return s; }
  @Override public void send_oneway_longstruct(LongStruct[] s) { oneway(4L * s.length); }
  @Override public void send_longstruct(LongStruct[] s) { twoway(4L * s.length); }
  @Override public LongStruct[] echo_longstruct(LongStruct[] s) { twoway(4L * s.length); return s; }
  @Override public void send_oneway_doublestruct(DoubleStruct[] s) { oneway(8L * s.length); }
  @Override public void send_doublestruct(DoubleStruct[] s) { twoway(8L * s.length); }
  @Override public DoubleStruct[] echo_doublestruct(DoubleStruct[] s) { twoway(8L * s.length); return s; }
  @Override public void send_oneway_longquad(LongQuad[] s) { oneway(16L * s.length); }
  @Override public void send_longquad(LongQuad[] s) { twoway(16L * s.length); }
  @Override public LongQuad[] echo_longquad(LongQuad[] s) { twoway(16L * s.length); return s; }
  @Override public void send_oneway_mixedquad(MixedQuad[] s) { oneway(16L * s.length); }
  @Override public void send_mixedquad(MixedQuad[] s) { twoway(16L * s.length); }
  @Override public MixedQuad[] echo_mixedquad(MixedQuad[] s) { twoway(16L * s.length); return s; }
  @Override public void send_oneway_floatpair(FloatPair[] s) { oneway(8L * s.length); }
  @Override public void send_floatpair(FloatPair[] s) { twoway(8L * s.length); }
  @Override public FloatPair[] echo_floatpair(FloatPair[] s) { twoway(8L * s.length); return s; }
  @Override public void send_oneway_color(Color[] s) { oneway(4L * s.length); }
  @Override public void send_color(Color[] s) { twoway(4L * s.length); }
  @Override public Color[] echo_color(Color[] s) { twoway(4L * s.length); return s; }
  @Override public void send_oneway_variant(Variant[] s) { oneway(Payload.variantsBytes(s)); }
  @Override public void send_variant(Variant[] s) { twoway(Payload.variantsBytes(s)); }
  @Override public Variant[] echo_variant(Variant[] s) { twoway(Payload.variantsBytes(s)); return s; }

  // ---- valuetypes (bench.idl's VALUETYPES): what came in goes back, so
  // the ORB marshals the same graph, sharing and cycles included. Counted
  // as calls, not bytes.
  @Override public Bench.Node echo_node(Bench.Node n) { calls.increment(); return n; }
  @Override public Bench.Node[] echo_nodes(Bench.Node[] s) { calls.increment(); return s; }
  @Override public Bench.LongBox echo_box(Bench.LongBox b) { calls.increment(); return b; }
  @Override public boolean same_node(Bench.Node a, Bench.Node b) { calls.increment(); return a == b; }

  // ---- user exception and any (bench.idl's ANY AND USER EXCEPTIONS) ----
  @Override public void raise_user(int code, String reason, int detailLen) throws Bench.BenchError {
    calls.increment();
    if (detailLen < 0 || detailLen > (1 << 20)) {
      throw new BAD_PARAM(0, org.omg.CORBA.CompletionStatus.COMPLETED_NO);
    }
    throw Anys.raised(code, reason, detailLen);
  }
  @Override public org.omg.CORBA.Any echo_any(org.omg.CORBA.Any a) { calls.increment(); return a; }
  // ---- end of user exception and any ----
  // ---- bidirectional GIOP (bench.idl's CALLBACKS): the ORB calls back over
  // the client's connection when it offered it (see Server), else over one
  // of its own to cb's address.
  @Override public int call_back(Bench.Callback cb, int n) {
    calls.increment();
    if (cb == null) throw new BAD_PARAM("call_back: nil Callback");
    return cb._notify(n); // notify(n), as the IDL-to-Java mapping names it
  }
}
