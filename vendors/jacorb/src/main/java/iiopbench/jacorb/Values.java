package iiopbench.jacorb;

import Bench.LongBox;
import Bench.Node;
import Bench.Perf;
import Bench.TaggedNode;
import org.omg.CORBA.ORB;
import org.omg.CORBA.portable.ValueFactory;

/**
 * bench.idl's valuetypes (its VALUETYPES section) on the JacORB side: the
 * concrete classes of Node and TaggedNode (IDL with state only, so the
 * generated classes are abstract), their factories, and the client's
 * value checks.
 */
final class Values {
  private Values() {}

  /** Node, concrete. */
  static final class NodeImpl extends Node {
    private static final long serialVersionUID = 1L;
  }

  /** TaggedNode, concrete. */
  static final class TaggedNodeImpl extends TaggedNode {
    private static final long serialVersionUID = 1L;
  }

  /**
   * Registers the factories for Node and TaggedNode; server and client
   * both need them (a reply carries values too). LongBox needs none.
   */
  static void register(ORB orb) {
    org.omg.CORBA_2_3.ORB o = (org.omg.CORBA_2_3.ORB) orb;
    o.register_value_factory("IDL:Bench/Node:1.0", (ValueFactory) is -> is.read_value(new NodeImpl()));
    o.register_value_factory("IDL:Bench/TaggedNode:1.0", (ValueFactory) is -> is.read_value(new TaggedNodeImpl()));
  }

  /** The value checks' names, in order. */
  static final String[] NAMES = {
    "value_echo_node_chain", "value_echo_node_null", "value_echo_node_cycle",
    "value_echo_nodes_shared", "value_same_node_shared", "value_same_node_two",
    "value_echo_node_tagged", "value_echo_box", "value_echo_box_null",
  };

  static Node node(int id, String label, Node next) {
    Node n = new NodeImpl();
    n.id = id;
    n.label = label;
    n.next = next;
    return n;
  }

  static String str(Node n) {
    return n == null ? "null" : n.id + "/" + n.label;
  }

  /** null when {@code n} has this id and label, else what it is. */
  static String is(Node n, int id, String label) {
    if (n != null && n.id == id && label.equals(n.label)) return null;
    return "got " + str(n) + ", want " + id + "/" + label;
  }

  /**
   * The value checks of the conformance mode (names as the C++ client's):
   * a chain, null, a cycle, one value twice in a sequence, same_node on
   * one value and on two equal ones, a truncatable TaggedNode (chunked on
   * the wire), boxes.
   */
  static void checks(Client.Checks c, Perf perf) {
    // A server without the operations (built from an older bench.idl, or
    // an ORB without valuetypes): every value check a skip, with the reason.
    String missing = null;
    try {
      perf.echo_node(null);
    } catch (org.omg.CORBA.BAD_OPERATION | org.omg.CORBA.NO_IMPLEMENT e) {
      missing = "the server does not implement bench.idl's valuetype operations ("
          + e.getClass().getSimpleName() + ")";
    } catch (RuntimeException e) {
      // The checks below report it.
    }
    if (missing != null) {
      for (String n : NAMES) c.skip(n, missing);
      return;
    }
    c.run("value_echo_node_chain", () -> {
      Node a = node(1, "a", node(2, "b", node(3, "c", null)));
      Node r = perf.echo_node(a);
      String d = is(r, 1, "a");
      if (d == null) d = is(r.next, 2, "b");
      if (d == null) d = is(r.next.next, 3, "c");
      if (d == null && r.next.next.next != null) d = "c.next is not null";
      return d;
    });
    c.run("value_echo_node_null", () -> {
      Node r = perf.echo_node(null);
      return r == null ? null : "got " + str(r) + ", want null";
    });
    c.run("value_echo_node_cycle", () -> {
      Node x = node(10, "x", null);
      Node y = node(11, "y", x);
      x.next = y;
      Node r = perf.echo_node(x);
      String d = is(r, 10, "x");
      if (d == null) d = is(r.next, 11, "y");
      if (d == null && r.next.next != r) {
        d = "y.next is " + str(r.next.next) + ", not the x that came back";
      }
      return d;
    });
    c.run("value_echo_nodes_shared", () -> {
      Node a = node(1, "a", null);
      Node[] r = perf.echo_nodes(new Node[] {a, a, null});
      if (r.length != 3) return "length " + r.length;
      String d = is(r[0], 1, "a");
      if (d == null && r[1] != r[0]) d = "elements 0 and 1 came back as two values";
      if (d == null && r[2] != null) d = "element 2 is " + str(r[2]) + ", want null";
      return d;
    });
    c.run("value_same_node_shared", () -> {
      Node a = node(1, "a", null);
      return perf.same_node(a, a) ? null : "false, want true";
    });
    c.run("value_same_node_two", () ->
        perf.same_node(node(5, "same", null), node(5, "same", null)) ? "true, want false" : null);
    c.run("value_echo_node_tagged", Anys.serverOrbType(perf) == Anys.TAO, "MARSHAL",
        "TAO 2.2.2 (the server) reads chunked values only as it writes them, a nested value "
        + "inside the enclosing chunk, where chunks are never nested (CORBA 3.0, 15.3.4.6): the "
        + "spec's chunked TaggedNode, its nested Node chunked, is MARSHAL; tracker: no entry "
        + "known, the gap is in TAO's TAO_ChunkInfo (tao/Valuetype/ValueBase.cpp)", () -> {
      TaggedNode t = new TaggedNodeImpl();
      t.id = 20;
      t.label = "tagged";
      t.next = node(1, "a", null);
      t.tag = "t-tag";
      Node r = perf.echo_node(t);
      String d = is(r, 20, "tagged");
      if (d == null) d = is(r.next, 1, "a");
      if (d == null && r instanceof TaggedNode && !"t-tag".equals(((TaggedNode) r).tag)) {
        d = "tag " + ((TaggedNode) r).tag + ", want t-tag";
      }
      // Truncated to a Node: allowed (bench.idl).
      return d;
    });
    c.run("value_echo_box", () -> {
      LongBox r = perf.echo_box(new LongBox(42));
      if (r == null) return "null";
      return r.value == 42 ? null : "got " + r.value + ", want 42";
    });
    c.run("value_echo_box_null", () -> {
      LongBox r = perf.echo_box(null);
      return r == null ? null : "got " + r.value + ", want null";
    });
  }
}
