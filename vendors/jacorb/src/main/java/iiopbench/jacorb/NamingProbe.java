package iiopbench.jacorb;

import org.omg.CORBA.ORB;
import org.omg.CosNaming.Binding;
import org.omg.CosNaming.BindingIteratorHolder;
import org.omg.CosNaming.BindingListHolder;
import org.omg.CosNaming.NamingContextExt;
import org.omg.CosNaming.NamingContextExtHelper;
import org.omg.CosNaming.NamingContextPackage.NotFound;

/**
 * A JacORB CosNaming client for the GIOP captures of fixtures/giop/jacorb:
 * {@code NamingProbe NAMESERVICE-REF NAME}. Narrows the reference (an
 * _is_a round trip for a corbaloc), lists the root context, then resolves
 * NAME and expects the NotFound user exception. Prints what it saw; exits 0
 * only when resolve raised NotFound.
 */
public final class NamingProbe {
  private NamingProbe() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 2) {
      System.err.println("usage: NamingProbe NAMESERVICE-REF NAME");
      System.exit(2);
    }
    Orbs.selectJacorb();
    ORB orb = ORB.init(new String[0], Orbs.initProperties(Orbs.common()));
    int status = 1;
    try {
      NamingContextExt ns = NamingContextExtHelper.narrow(orb.string_to_object(args[0]));
      BindingListHolder list = new BindingListHolder();
      BindingIteratorHolder it = new BindingIteratorHolder();
      ns.list(10, list, it);
      System.out.println("list: " + list.value.length + " bindings");
      for (Binding b : list.value) {
        System.out.println("  " + b.binding_name[0].id + "." + b.binding_name[0].kind);
      }
      try {
        ns.resolve_str(args[1]);
        System.out.println("resolve " + args[1] + ": found (expected NotFound)");
      } catch (NotFound e) {
        System.out.println("resolve " + args[1] + ": NotFound why=" + e.why.value()
            + " rest_of_name.length=" + e.rest_of_name.length);
        status = 0;
      }
    } finally {
      orb.shutdown(false);
    }
    System.exit(status);
  }
}
