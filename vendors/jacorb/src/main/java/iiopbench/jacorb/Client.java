package iiopbench.jacorb;

import Bench.Dispatch50;
import Bench.Dispatch500;
import Bench.Perf;
import Bench.PerfHelper;
import Bench.ServiceDist;
import Bench.ServiceKind;
import Bench.Single;
import Bench.Stats;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.omg.CORBA.ORB;

/**
 * The JacORB client of bench.idl, driven by docs/vendor-protocol.md:
 * {@code Client --target REF --mode latency|throughput|conformance|callback|race ...}.
 * Diagnostics go to stderr; the last stdout line is one JSON object.
 */
public final class Client {
  private Client() {}

  static final long MIB = 1024 * 1024;

  /** Parsed command line. */
  static final class Options {
    String target;
    String mode;
    String op;
    String type;
    long size = 0;
    int count = 1000;
    int warmup = -1;
    long total = 64 * MIB;
    double minDuration = 1.0;
    int threads = 16;
    Tls tls = new Tls();
  }

  public static void main(String[] args) {
    Options o = parse(args);
    Orbs.selectJacorb();
    PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false,
        StandardCharsets.UTF_8);
    Map<String, String> props = Orbs.common();
    if (o.mode.equals("callback")) {
      Orbs.bidir(props);
    }
    if (o.tls.on()) {
      try {
        o.tls.addProperties(props, false, 0);
      } catch (Exception e) {
        System.err.println("jacorb client: TLS settings: " + e);
        System.exit(2);
      }
    }
    ORB orb = ORB.init(new String[0], Orbs.initProperties(props));
    Values.register(orb);
    int status;
    try {
      String ref = resolveRef(o.target);
      // race: no call before the threads' first ones (a checked narrow may
      // ask the server with _is_a on the new connection).
      Perf perf = o.mode.equals("race") ? PerfHelper.unchecked_narrow(orb.string_to_object(ref))
          : PerfHelper.narrow(orb.string_to_object(ref));
      Map<String, Object> result;
      switch (o.mode) {
        case "latency": result = latency(perf, o); status = 0; break;
        case "throughput": result = throughput(perf, o); status = 0; break;
        case "race": {
          result = race(perf, o.threads);
          status = ((Integer) result.get("failed")) == 0 ? 0 : 1;
          break;
        }
        case "callback": {
          result = callback(orb, perf);
          status = ((Integer) result.get("failed")) == 0 ? 0 : 1;
          break;
        }
        default: {
          result = conformance(orb, perf, ref);
          status = ((Integer) result.get("failed")) == 0 ? 0 : 1;
        }
      }
      out.println(Json.write(result));
      out.flush();
    } catch (RuntimeException e) {
      System.err.println("jacorb client: " + o.mode + " against " + o.target + " failed: " + e);
      e.printStackTrace();
      status = 1;
    }
    orb.shutdown(false);
    System.exit(status);
  }

  // ---- command line ------------------------------------------------------

  static Options parse(String[] args) {
    Options o = new Options();
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      int j = o.tls.parse(args, i);
      if (j >= 0) {
        i = j;
        continue;
      }
      if (i + 1 >= args.length) {
        usage("missing value after " + a);
      }
      String v = args[++i];
      switch (a) {
        case "--target": o.target = v; break;
        case "--mode": o.mode = v; break;
        case "--op": o.op = v; break;
        case "--type": o.type = v; break;
        case "--size": o.size = parseLong(a, v); break;
        case "--count": o.count = (int) parseLong(a, v); break;
        case "--warmup": o.warmup = (int) parseLong(a, v); break;
        case "--total": o.total = parseLong(a, v); break;
        case "--min-duration": o.minDuration = Double.parseDouble(v); break;
        case "--threads": o.threads = (int) parseLong(a, v); break;
        default: usage("unknown argument " + a);
      }
    }
    if (o.target == null || o.mode == null) {
      usage("--target and --mode are required");
    }
    if (o.tls.incomplete() != null) {
      usage(o.tls.incomplete());
    }
    switch (o.mode) {
      case "latency":
        if (o.op == null) o.op = "ping";
        if (!List.of("ping", "send", "echo", "oneway").contains(o.op)) {
          usage("latency --op must be ping, send, echo or oneway, not " + o.op);
        }
        if (o.warmup < 0) o.warmup = 100;
        if (o.count < 1) usage("--count must be at least 1");
        break;
      case "throughput":
        if (o.op == null || !List.of("oneway", "send", "echo").contains(o.op)) {
          usage("throughput --op must be oneway, send or echo");
        }
        if (o.type == null || o.size <= 0) usage("throughput needs --type and --size > 0");
        if (o.warmup < 0) o.warmup = 10;
        break;
      case "race":
        if (o.threads < 2 || o.threads > 1024) usage("--mode race wants --threads from 2 to 1024");
        break;
      case "conformance":
      case "callback":
        break;
      default:
        usage("--mode must be latency, throughput, conformance, callback or race, not " + o.mode);
    }
    if (o.type != null && !Payload.TOKENS.contains(o.type)) {
      usage("unknown --type " + o.type + "; one of " + Payload.TOKENS);
    }
    if (o.type == null && o.op != null && !o.op.equals("ping")) {
      o.type = "octet";
    }
    return o;
  }

  private static long parseLong(String flag, String v) {
    try {
      return Long.parseLong(v);
    } catch (NumberFormatException e) {
      usage(flag + " " + v + " is not an integer");
      return 0;
    }
  }

  private static void usage(String why) {
    System.err.println("jacorb client: " + why);
    System.err.println("usage: Client --target IOR|corbaloc|FILE --mode latency --op ping|send|echo|oneway"
        + " [--type T] [--size BYTES] [--count N] [--warmup W]");
    System.err.println("       Client --target REF --mode throughput --op oneway|send|echo --type T"
        + " --size BYTES [--total BYTES] [--min-duration SECONDS] [--warmup W]");
    System.err.println("       Client --target REF --mode conformance");
    System.err.println("       Client --target REF --mode callback");
    System.err.println("       Client --target REF --mode race [--threads N]");
    System.exit(2);
  }

  /** REF is an IOR, a corbaloc/corbaname URL, or a file holding one of them. */
  static String resolveRef(String target) {
    if (target.startsWith("IOR:") || target.startsWith("corbaloc:") || target.startsWith("corbaname:")) {
      return target;
    }
    try {
      String s = Files.readString(Path.of(target), StandardCharsets.US_ASCII).trim();
      if (s.isEmpty()) {
        throw new IllegalArgumentException("target file " + target + " is empty");
      }
      return s;
    } catch (java.io.IOException e) {
      throw new IllegalArgumentException("target " + target
          + " is neither IOR:, corbaloc: nor a readable file: " + e);
    }
  }

  // ---- latency -------------------------------------------------------------

  static Map<String, Object> latency(Perf perf, Options o) {
    int n = o.op.equals("ping") ? 0 : Payload.elementsFor(o.type, o.size);
    Object payload = o.op.equals("ping") ? null : Payload.build(o.type, n, false);
    PayloadOps.Call call = o.op.equals("ping") ? (p, s) -> { p.ping(); return null; }
        : PayloadOps.of(o.op, o.type);
    for (int i = 0; i < o.warmup; i++) {
      call.call(perf, payload);
    }
    long[] samples = new long[o.count];
    long begin = System.nanoTime();
    for (int i = 0; i < o.count; i++) {
      long t0 = System.nanoTime();
      call.call(perf, payload);
      samples[i] = System.nanoTime() - t0;
    }
    long end = System.nanoTime();
    Arrays.sort(samples);
    double sum = 0;
    for (long s : samples) sum += s;
    Map<String, Object> lat = new LinkedHashMap<>();
    lat.put("min", samples[0] / 1e3);
    lat.put("mean", sum / samples.length / 1e3);
    lat.put("p50", percentile(samples, 0.50));
    lat.put("p90", percentile(samples, 0.90));
    lat.put("p99", percentile(samples, 0.99));
    lat.put("p999", percentile(samples, 0.999));
    lat.put("max", samples[samples.length - 1] / 1e3);
    Map<String, Object> r = new LinkedHashMap<>();
    r.put("orb", Orbs.ORB_NAME);
    r.put("mode", "latency");
    r.put("op", o.op);
    r.put("type", o.op.equals("ping") ? null : o.type);
    r.put("size", o.op.equals("ping") ? 0L : o.size);
    r.put("elements", n);
    r.put("calls", o.count);
    r.put("warmup", o.warmup);
    r.put("seconds", (end - begin) / 1e9);
    r.put("latency_us", lat);
    return r;
  }

  /** Nearest-rank percentile of sorted nanosecond samples, in microseconds. */
  static double percentile(long[] sorted, double q) {
    int rank = (int) Math.ceil(q * sorted.length);
    int idx = Math.min(Math.max(rank, 1), sorted.length) - 1;
    return sorted[idx] / 1e3;
  }

  // ---- throughput ----------------------------------------------------------

  static Map<String, Object> throughput(Perf perf, Options o) {
    int n = Payload.elementsFor(o.type, o.size);
    Object payload = Payload.build(o.type, n, true);
    long perCall = Payload.bytes(o.type, payload);
    PayloadOps.Call call = PayloadOps.of(o.op, o.type);
    for (int i = 0; i < o.warmup; i++) {
      call.call(perf, payload);
    }
    perf.reset();
    long minNanos = (long) (o.minDuration * 1e9);
    long calls = 0;
    long bytes = 0;
    long begin = System.nanoTime();
    long now = begin;
    while (bytes < o.total || now - begin < minNanos) {
      call.call(perf, payload);
      calls++;
      bytes += perCall;
      now = System.nanoTime();
    }
    long sent = now;
    Stats st = perf.get_stats();
    long received = System.nanoTime();
    double seconds = (sent - begin) / 1e9;
    double recvSeconds = (received - begin) / 1e9;
    Map<String, Object> r = new LinkedHashMap<>();
    r.put("orb", Orbs.ORB_NAME);
    r.put("mode", "throughput");
    r.put("op", o.op);
    r.put("type", o.type);
    r.put("size", o.size);
    r.put("elements", n);
    r.put("calls", calls);
    r.put("bytes", bytes);
    r.put("seconds", seconds);
    r.put("mbps", bytes * 8 / seconds / 1e6);
    r.put("server_bytes", st.bytes);
    r.put("receiver_mbps", st.bytes * 8 / recvSeconds / 1e6);
    r.put("server_calls", st.calls);
    r.put("server_oneways", st.oneways);
    r.put("server_cpu_seconds", st.cpu_seconds);
    r.put("warmup", o.warmup);
    return r;
  }

  // ---- conformance ---------------------------------------------------------

  /** Collects check results. */
  static final class Checks {
    final List<Object> list = new ArrayList<>();
    final List<Object> skipped = new ArrayList<>();
    int passed;
    int failed;

    void add(String name, boolean pass, String detail) {
      Map<String, Object> c = new LinkedHashMap<>();
      c.put("name", name);
      c.put("pass", pass);
      c.put("detail", detail);
      list.add(c);
      if (pass) passed++; else failed++;
      if (!pass) System.err.println("jacorb client: check " + name + " FAILED: " + detail);
    }

    /** A check not run, with the reason: neither passed nor failed. */
    void skip(String name, String reason) {
      Map<String, Object> c = new LinkedHashMap<>();
      c.put("name", name);
      c.put("detail", reason);
      skipped.add(c);
    }

    /** The JSON object of a checks mode (docs/vendor-protocol.md). */
    Map<String, Object> result(String mode) {
      Map<String, Object> r = new LinkedHashMap<>();
      r.put("orb", Orbs.ORB_NAME);
      r.put("mode", mode);
      r.put("checks", list);
      r.put("passed", passed);
      r.put("failed", failed);
      r.put("skipped", skipped);
      return r;
    }

    /** Runs {@code body}; it returns null on success or what went wrong. */
    void run(String name, java.util.function.Supplier<String> body) {
      String problem = attempt(body);
      add(name, problem == null, problem == null ? "ok" : problem);
    }

    /**
     * As {@link #run}, but where {@code applies} (the server's ORB has the
     * known defect {@code defect}), a failure whose detail contains
     * {@code symptom} is a skip naming the defect, never a pass; another
     * failure stays one.
     */
    void run(String name, boolean applies, String symptom, String defect,
        java.util.function.Supplier<String> body) {
      String problem = attempt(body);
      if (applies && problem != null && problem.contains(symptom)) {
        skip(name, "known defect: " + defect + "; seen: " + problem);
      } else {
        add(name, problem == null, problem == null ? "ok" : problem);
      }
    }

    private static String attempt(java.util.function.Supplier<String> body) {
      try {
        return body.get();
      } catch (RuntimeException e) {
        return "exception " + e;
      }
    }
  }

  static String statsDiff(Stats s, long calls, long oneways, long bytes) {
    if (s.calls == calls && s.oneways == oneways && s.bytes == bytes) return null;
    return "calls=" + s.calls + " oneways=" + s.oneways + " bytes=" + s.bytes + ", expected calls="
        + calls + " oneways=" + oneways + " bytes=" + bytes;
  }

  /** The client's Callback object: notify(n) returns n + 1 and counts. */
  static final class CallbackImpl extends Bench.CallbackPOA {
    final java.util.concurrent.atomic.AtomicInteger calls = new java.util.concurrent.atomic.AtomicInteger();
    volatile int last;

    // notify(n): the IDL-to-Java mapping names it _notify (Object.notify).
    @Override public int _notify(int n) {
      calls.incrementAndGet();
      last = n;
      return n + 1;
    }
  }

  /**
   * --mode callback (bench.idl's CALLBACKS): a Callback in a POA with
   * BiDirPolicy BOTH, so JacORB offers the connection for callbacks
   * (BI_DIR_IIOP), passed to call_back(cb, 41); the server must call
   * notify(41) once and return 42. Against a server that calls back only
   * over the client's own connection (ours), a pass proves the offer was
   * taken.
   */
  static Map<String, Object> callback(ORB orb, Perf perf) {
    Checks c = new Checks();
    c.run("call_back", () -> {
      try {
        org.omg.PortableServer.POA root =
            org.omg.PortableServer.POAHelper.narrow(orb.resolve_initial_references("RootPOA"));
        org.omg.PortableServer.POA poa = root.create_POA("BiDir", root.the_POAManager(),
            new org.omg.CORBA.Policy[] {Orbs.bidirPolicy(orb)});
        root.the_POAManager().activate();
        CallbackImpl impl = new CallbackImpl();
        Bench.Callback cb = Bench.CallbackHelper.narrow(poa.id_to_reference(poa.activate_object(impl)));
        int r = perf.call_back(cb, 41);
        String d = "call_back(41) returned " + r + "; notify called " + impl.calls.get()
            + " time(s), last with " + impl.last;
        return r == 42 && impl.calls.get() == 1 && impl.last == 41 ? null : d;
      } catch (org.omg.CORBA.UserException e) {
        return "setting up the BiDir POA: " + e;
      }
    });
    return c.result("callback");
  }

  /**
   * --mode race: THREADS threads make the first calls on a new connection at
   * once, each an echo_wstring of wide strings beyond ASCII: the code-set
   * negotiation race (JacORB #211, #329), in which a request whose wide
   * strings use the negotiated code set can leave before the request that
   * carries the CodeSets context. The server fixes the code sets from the
   * connection's first request, so a client in the race sees BAD_PARAM or a
   * garbled echo. One check: every echo exact; then a ping on the same
   * connection.
   */
  static Map<String, Object> race(Perf perf, int threads) {
    String[] in = {"Gr\u00fc\u00dfe \u00e9 \u20ac \u4e2d\u6587", "x"};
    java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(threads);
    List<java.util.concurrent.Future<String>> outcomes = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      outcomes.add(pool.submit(() -> {
        go.await();
        try {
          String[] back = perf.echo_wstring(in);
          return Arrays.equals(in, back) ? null : "an echo that differs";
        } catch (org.omg.CORBA.SystemException e) {
          return e.toString();
        }
      }));
    }
    go.countDown();
    int exact = 0;
    Map<String, Integer> problems = new java.util.TreeMap<>();
    for (java.util.concurrent.Future<String> f : outcomes) {
      String p;
      try {
        p = f.get(60, java.util.concurrent.TimeUnit.SECONDS);
      } catch (Exception e) {
        p = "no answer within 60 s: " + e;
      }
      if (p == null) exact++; else problems.merge(p, 1, Integer::sum);
    }
    pool.shutdownNow();
    Checks c = new Checks();
    StringBuilder d = new StringBuilder(exact + " of " + threads + " exact");
    problems.forEach((k, n) -> d.append("; ").append(n).append(" x ").append(k));
    c.add("race_echo_wstring[" + threads + "]", exact == threads, d.toString());
    c.run("ping_after_race", () -> { perf.ping(); return null; });
    return c.result("race");
  }

  static Map<String, Object> conformance(ORB orb, Perf perf, String ref) {
    Checks c = new Checks();
    c.run("ping", () -> { perf.ping(); return null; });
    c.run("reset_then_stats_zero", () -> {
      perf.reset();
      Stats s = perf.get_stats();
      if (s.calls == 0 && s.oneways == 0 && s.bytes == 0 && s.last_mark == 0 && s.mark_disorder == 0) {
        return null;
      }
      return "calls=" + s.calls + " oneways=" + s.oneways + " bytes=" + s.bytes + " last_mark="
          + s.last_mark + " mark_disorder=" + s.mark_disorder;
    });

    // Every payload operation; the counters must then agree exactly with
    // what was sent, by bench.idl's byte rules.
    long[] expect = new long[3]; // calls, oneways, bytes
    boolean[] resetOk = {true};
    try {
      perf.reset();
    } catch (RuntimeException e) {
      resetOk[0] = false;
    }
    for (String t : Payload.TOKENS) {
      for (int n : new int[] {0, 1, 7, 1000}) {
        c.run("echo_" + t + "[" + n + "]", () -> {
          Object in = Payload.build(t, n, false);
          expect[0]++;
          expect[2] += Payload.bytes(t, in);
          Object back = PayloadOps.echo(t).call(perf, in);
          return Payload.diff(t, in, back);
        });
      }
      c.run("send_" + t + "[3]", () -> {
        Object in = Payload.build(t, 3, false);
        expect[0]++;
        expect[2] += Payload.bytes(t, in);
        PayloadOps.send(t).call(perf, in);
        return null;
      });
      c.run("send_oneway_" + t + "[3]", () -> {
        Object in = Payload.build(t, 3, false);
        expect[1]++;
        expect[2] += Payload.bytes(t, in);
        PayloadOps.oneway(t).call(perf, in);
        return null;
      });
    }
    c.run("pass_ops", () -> {
      perf.pass_cd((Bench.CD[]) Payload.build("cd", 3, false));
      perf.pass_both((char[]) Payload.build("char", 5, false), (double[]) Payload.build("double", 2, false));
      perf.pass_chars((char[]) Payload.build("char", 4, false));
      perf.pass_doubles((double[]) Payload.build("double", 3, false));
      expect[0] += 4;
      expect[2] += 3 * 16 + 5 + 2 * 8 + 4 + 3 * 8;
      return null;
    });
    c.run("stats_after_payloads", () -> {
      if (!resetOk[0]) return "reset() before the payload checks failed";
      return statsDiff(perf.get_stats(), expect[0], expect[1], expect[2]);
    });

    c.run("mark_1_to_1000", () -> {
      perf.reset();
      for (long i = 1; i <= 1000; i++) perf.mark(i);
      Stats s = perf.get_stats();
      if (s.last_mark == 1000 && s.mark_disorder == 0 && s.oneways == 1000) return null;
      return "last_mark=" + s.last_mark + " mark_disorder=" + s.mark_disorder + " oneways=" + s.oneways
          + ", expected 1000, 0, 1000";
    });
    c.run("work_sleep_1000us", () -> {
      double us = perf.work(1000, ServiceDist.DIST_FIXED, ServiceKind.KIND_SLEEP);
      return us >= 1000 ? null : "work returned " + us + " us, expected >= 1000";
    });
    c.run("get_single_7_op", () -> {
      Single s = perf.get_single(7);
      if (s == null) return "get_single(7) returned nil";
      s.op();
      return null;
    });

    // Dispatch objects through corbaloc on the target's host and port.
    int slash = ref.lastIndexOf('/');
    if (ref.startsWith("corbaloc:") && slash > "corbaloc:".length()) {
      String base = ref.substring(0, slash + 1);
      c.run("dispatch50_m00_m49", () -> {
        Dispatch50 d = Bench.Dispatch50Helper.narrow(orb.string_to_object(base + "Dispatch50"));
        d.m00();
        d.m49();
        return null;
      });
      c.run("dispatch500_m000_m499", () -> {
        Dispatch500 d = Bench.Dispatch500Helper.narrow(orb.string_to_object(base + "Dispatch500"));
        d.m000();
        d.m499();
        return null;
      });
      c.run("single499_via_corbaloc", () -> {
        Single s = Bench.SingleHelper.narrow(orb.string_to_object(base + "Single499"));
        s.op();
        return null;
      });
    } else {
      String why = "reached through corbaloc on the target's host and port; the target is not a corbaloc";
      c.skip("dispatch50_m00_m49", why);
      c.skip("dispatch500_m000_m499", why);
      c.skip("single499_via_corbaloc", why);
    }

    c.run("non_existent_false", () -> perf._non_existent() ? "_non_existent() returned true" : null);
    c.run("is_a_perf", () -> perf._is_a("IDL:Bench/Perf:1.0") ? null : "_is_a returned false");
    String noWide = ref.startsWith("corbaloc:")
        ? "wchar needs the server's code sets, which a corbaloc reference lacks; use an IOR target"
        : null;
    Anys.checks(c, orb, perf, noWide);
    Values.checks(c, perf);
    c.run("echo_octet_4MiB", () -> {
      int n = (int) (4 * MIB);
      Object in = Payload.build("octet", n, false);
      return Payload.diff("octet", in, perf.echo_octet((byte[]) in));
    });

    return c.result("conformance");
  }
}
