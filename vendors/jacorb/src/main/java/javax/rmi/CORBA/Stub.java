/*
 * Stand-in for javax.rmi.CORBA.Stub, which Java 11 removed with the
 * java.corba module and which jacorb-omgapi 3.9 does not supply (JacORB
 * issue #214). org.jacorb.orb.Reference -- created by POA.id_to_reference,
 * servant_to_reference and friends -- extends it, so without this class
 * the JacORB 3.9 server dies with NoClassDefFoundError on Java 17.
 *
 * Only the shape matters for plain IDL: an abstract CORBA 2.3 ObjectImpl.
 * The RMI-IIOP parts of the real class (hashCode/equals/toString through
 * javax.rmi.CORBA.Util, connect()) are deliberately absent: this project
 * uses no valuetypes or RMI-IIOP.
 */
package javax.rmi.CORBA;

public abstract class Stub extends org.omg.CORBA_2_3.portable.ObjectImpl
    implements java.io.Serializable {
  private static final long serialVersionUID = 1087775603798577179L;
}
