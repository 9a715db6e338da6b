package iiopbench.jacorb;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.omg.CORBA.ORB;
import org.omg.PortableServer.IdAssignmentPolicyValue;
import org.omg.PortableServer.LifespanPolicyValue;
import org.omg.PortableServer.POA;
import org.omg.PortableServer.POAHelper;
import org.omg.PortableServer.Servant;

/**
 * The JacORB server of bench.idl, driven by docs/vendor-protocol.md:
 * {@code Server --host HOST --port PORT [--ior-file FILE]}; port 0 picks a free
 * port, which the corbaloc lines then show.
 *
 * All objects live in one persistent, USER_ID POA ("bench") of a server
 * with {@code jacorb.implname=iiopbench} listening on OAIAddr:OAPort, so
 * their JacORB object keys are stable ("iiopbench/bench/<oid>"). The short
 * keys of the contract ("Bench", "Dispatch50", "Dispatch500",
 * "Single0".."Single499") are mapped onto those with JacORB's object key
 * map (ORB.addObjectKey, the programmatic form of
 * jacorb.orb.objectKeyMap.<name>), which JacORB consults for every incoming
 * Request and LocateRequest.
 */
public final class Server {
  private Server() {}

  static final int SINGLES = 500;

  public static void main(String[] args) throws Exception {
    String host = null;
    int port = -1;
    String iorFile = null;
    Tls tls = new Tls();
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      int j = tls.parse(args, i);
      if (j >= 0) {
        i = j;
        continue;
      }
      if (i + 1 >= args.length) {
        usage("missing value after " + a);
      }
      switch (a) {
        case "--host": host = args[++i]; break;
        case "--port": port = parsePort(args[++i]); break;
        case "--ior-file": iorFile = args[++i]; break;
        default: usage("unknown argument " + a);
      }
    }
    if (host == null || port < 0) {
      usage("--host and --port are required");
    }
    if (tls.incomplete() != null) {
      usage(tls.incomplete());
    }
    Orbs.selectJacorb();
    PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false,
        StandardCharsets.UTF_8);

    Map<String, String> tuned = Orbs.common();
    tuned.put("jacorb.implname", "iiopbench");
    tuned.put("OAIAddr", host);
    tuned.put("OAPort", Integer.toString(port));
    if (tls.on()) {
      // TLS on --port; the plain listener takes whatever port is free
      // and, as TLS is required, refuses unprotected requests.
      tuned.put("OAPort", "0");
      tls.addProperties(tuned, true, port);
    }
    // The POA queue: JacORB's default (100 requests, queue_wait=off) rejects
    // requests beyond it -- oneways are then silently lost and twoways get
    // TRANSIENT. Block the connection's reader instead (TCP back-pressure)
    // and allow a deeper queue.
    tuned.put("jacorb.poa.queue_wait", "on");
    tuned.put("jacorb.poa.queue_max", "10000");
    tuned.put("jacorb.poa.queue_min", "100");
    // One request processor: the POA then dispatches in arrival order, which
    // bench.idl's oneway checks require (mark() order, get_stats() after a
    // oneway burst counting every oneway). With a pool, JacORB hands queued
    // requests of the same connection to different threads, which reorders
    // oneways and lets get_stats() overtake them. Raise it with
    // -Djacorb.poa.thread_pool_max=N for concurrency experiments.
    tuned.put("jacorb.poa.thread_pool_min", "1");
    tuned.put("jacorb.poa.thread_pool_max", "1");
    // call_back calls the client back over its own connection when it
    // offers it (the "bench" POA has BiDirPolicy BOTH).
    Orbs.bidir(tuned);
    ORB orb = ORB.init(new String[0], Orbs.initProperties(tuned));
    org.jacorb.orb.ORB jorb = (org.jacorb.orb.ORB) orb;
    Values.register(orb);

    POA root = POAHelper.narrow(orb.resolve_initial_references("RootPOA"));
    org.omg.CORBA.Policy[] policies = {
      root.create_lifespan_policy(LifespanPolicyValue.PERSISTENT),
      root.create_id_assignment_policy(IdAssignmentPolicyValue.USER_ID),
      Orbs.bidirPolicy(orb),
    };
    POA poa = root.create_POA("bench", root.the_POAManager(), policies);

    Bench.Single[] singles = new Bench.Single[SINGLES];
    for (int i = 0; i < SINGLES; i++) {
      singles[i] = Bench.SingleHelper.narrow(activate(jorb, poa, "Single" + i, new SingleImpl()));
    }
    PerfImpl perf = new PerfImpl(singles);
    org.omg.CORBA.Object bench = activate(jorb, poa, "Bench", perf);
    activate(jorb, poa, "Dispatch50", new Dispatch50Impl());
    activate(jorb, poa, "Dispatch500", new Dispatch500Impl());
    root.the_POAManager().activate();

    // SIGTERM / SIGINT: the stats line, then exit status 0 (the JVM's own
    // handling would exit 143 / 130).
    sun.misc.SignalHandler onSignal = sig -> {
      out.println(perf.statsLine());
      out.flush();
      Tls.removeKeystores();
      Runtime.getRuntime().halt(0);
    };
    sun.misc.Signal.handle(new sun.misc.Signal("TERM"), onSignal);
    sun.misc.Signal.handle(new sun.misc.Signal("INT"), onSignal);

    out.println("config orb=" + Orbs.ORB_NAME);
    out.println("config java=" + System.getProperty("java.vm.name") + " "
        + System.getProperty("java.runtime.version"));
    out.println("config max_message_size=unlimited");
    out.println("config threads=" + Orbs.attribute(orb, "jacorb.poa.thread_pool_max", "?")
        + " (POA request processors)");
    for (String name : new String[] {
        "jacorb.implname", "OAIAddr", "OAPort", "jacorb.poa.thread_pool_min",
        "jacorb.poa.thread_pool_max", "jacorb.poa.queue_wait", "jacorb.poa.queue_max",
        "jacorb.poa.queue_min"}) {
      out.println("config " + name + "=" + Orbs.attribute(orb, name, "(default)"));
    }
    out.println("config log.org.jacorb.poa.controller=" + System.getProperty(Orbs.POOL_LOGGER));
    out.println("config native_char_codeset=" + jorb.getTCSDefault().getName());
    out.println("config native_wchar_codeset=" + jorb.getTCSWDefault().getName());
    out.println("config giop_minor=" + jorb.getGIOPMinorVersion());
    out.println("config bidir=BiDirConnectionInitializer, POA bench with BiDirPolicy BOTH");
    out.println("config object_keys=Bench,Dispatch50,Dispatch500,Single0..Single" + (SINGLES - 1)
        + " via ORB.addObjectKey onto iiopbench/bench/<oid>");

    String ior = orb.object_to_string(bench);
    if (port == 0 && !tls.on()) {
      // --port 0: JacORB bound an ephemeral port; the IOR's profile tells which.
      port = listenPort(jorb, ior);
    }
    out.println(ior);
    if (tls.on()) {
      out.println("config tls=JSSE via jacorb.security (OASSLPort " + port + ")"
          + (tls.requireClient ? ", client certificates required" : ""));
    }
    // TLS: TAO's spelling; no corbaloc form is portable for it.
    String scheme = tls.on() ? "ssliop:1.2@" : "iiop:";
    for (String key : new String[] {"Bench", "Dispatch50", "Dispatch500", "Single0"}) {
      out.println("corbaloc " + key + " corbaloc:" + scheme + host + ":" + port + "/" + key);
    }
    if (iorFile != null) {
      try {
        Files.writeString(Path.of(iorFile), ior + "\n", StandardCharsets.US_ASCII);
      } catch (IOException e) {
        System.err.println("jacorb server: cannot write --ior-file " + iorFile + ": " + e);
        System.exit(2);
      }
    }
    out.println("ready");
    out.flush();
    orb.run();
  }

  /** The port of the primary IIOP address in {@code ior}. */
  private static int listenPort(org.jacorb.orb.ORB orb, String ior) {
    org.omg.ETF.Profile profile = new org.jacorb.orb.ParsedIOR(orb, ior).getEffectiveProfile();
    if (!(profile instanceof org.jacorb.orb.iiop.IIOPProfile)) {
      throw new IllegalStateException("the server's IOR has no IIOP profile: " + ior);
    }
    return ((org.jacorb.orb.iiop.IIOPAddress) ((org.jacorb.orb.iiop.IIOPProfile) profile).getAddress())
        .getPort();
  }

  /** Activates {@code servant} under object id {@code oid} and maps the short key oid onto it. */
  private static org.omg.CORBA.Object activate(org.jacorb.orb.ORB orb, POA poa, String oid,
      Servant servant) throws Exception {
    byte[] id = oid.getBytes(StandardCharsets.US_ASCII);
    poa.activate_object_with_id(id, servant);
    org.omg.CORBA.Object ref = poa.id_to_reference(id);
    orb.addObjectKey(oid, ref);
    return ref;
  }

  private static int parsePort(String s) {
    try {
      int p = Integer.parseInt(s);
      if (p < 0 || p > 65535) {
        usage("--port " + s + " is not a TCP port");
      }
      return p;
    } catch (NumberFormatException e) {
      usage("--port " + s + " is not a number");
      return -1;
    }
  }

  private static void usage(String why) {
    System.err.println("jacorb server: " + why);
    System.err.println("usage: Server --host HOST --port PORT [--ior-file FILE]"
        + " [--tls-cert F --tls-key F --tls-ca F [--tls-require-client]]");
    System.exit(2);
  }
}
