package iiopbench.jacorb;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;

/**
 * JacORB set-up shared by the server and the client: the ORB class
 * properties, the tuned defaults, and how to read back what is in force.
 *
 * Every tuned property is a default only: a -D system property of the same
 * name (e.g. through JAVA_OPTS in scripts/orbs/jacorb/start) wins, and the
 * server prints the value actually in force.
 */
final class Orbs {
  private Orbs() {}

  /** ORB name and version, as printed in config lines and JSON ("JacORB 3.9"). */
  static final String ORB_NAME = "JacORB " + org.jacorb.util.Version.version;

  /** slf4j-simple's level property for JacORB's POA request controller. */
  static final String POOL_LOGGER = "org.slf4j.simpleLogger.log.org.jacorb.poa.controller";

  /**
   * Must be set before anything touches org.omg.CORBA.ORB: Java 17 has no
   * built-in ORB, and the singleton (used for TypeCodes and Any) is looked up
   * through system properties only.
   */
  static void selectJacorb() {
    System.setProperty("org.omg.CORBA.ORBClass", "org.jacorb.orb.ORB");
    System.setProperty("org.omg.CORBA.ORBSingletonClass", "org.jacorb.orb.ORBSingleton");
    // JacORB logs through slf4j; slf4j-simple to stderr, warnings and errors only.
    if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
      System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    }
    // With one request processor (see Server), JacORB's RequestController
    // warns "Thread pool exhausted" for every request that arrives while
    // one is running -- thousands of stderr lines a second under a oneway
    // flood, which costs the server more than the requests. That state is
    // intended here, so only errors from that logger.
    if (System.getProperty(POOL_LOGGER) == null) {
      System.setProperty(POOL_LOGGER, "error");
    }
  }

  /** Properties common to client and server. */
  static Map<String, String> common() {
    Map<String, String> p = new LinkedHashMap<>();
    p.put("org.omg.CORBA.ORBClass", "org.jacorb.orb.ORB");
    p.put("org.omg.CORBA.ORBSingletonClass", "org.jacorb.orb.ORBSingleton");
    // Connect timeout in ms (default: wait forever); a dead peer then fails
    // fast instead of hanging a benchmark run.
    p.put("jacorb.connection.client.connect_timeout", "10000");
    return p;
  }

  /**
   * Bidirectional GIOP (bench.idl's CALLBACKS): JacORB's BiDir interceptors,
   * which send (client) and honour (server) the BI_DIR_IIOP context. They act
   * only for an ORB that has a POA with BiDirPolicy BOTH ({@link #bidirPoa}).
   */
  static void bidir(Map<String, String> p) {
    p.put("org.omg.PortableInterceptor.ORBInitializerClass.bidir_init",
        "org.jacorb.orb.giop.BiDirConnectionInitializer");
  }

  /** The BiDirPolicy BOTH, for a POA's policy list. */
  static org.omg.CORBA.Policy bidirPolicy(org.omg.CORBA.ORB orb) throws org.omg.CORBA.PolicyError {
    org.omg.CORBA.Any both = orb.create_any();
    org.omg.BiDirPolicy.BidirectionalPolicyValueHelper.insert(both, org.omg.BiDirPolicy.BOTH.value);
    return orb.create_policy(org.omg.BiDirPolicy.BIDIRECTIONAL_POLICY_TYPE.value, both);
  }

  /**
   * The ORB.init properties: {@code tuned} as defaults, each replaced by a
   * system property of the same name when one is set.
   */
  static Properties initProperties(Map<String, String> tuned) {
    Properties props = new Properties();
    for (Map.Entry<String, String> e : tuned.entrySet()) {
      String override = System.getProperty(e.getKey());
      props.setProperty(e.getKey(), override != null ? override : e.getValue());
    }
    return props;
  }

  /** The value of a JacORB configuration attribute in force for {@code orb}. */
  static String attribute(org.omg.CORBA.ORB orb, String name, String fallback) {
    return ((org.jacorb.orb.ORB) orb).getConfiguration().getAttribute(name, fallback);
  }
}
