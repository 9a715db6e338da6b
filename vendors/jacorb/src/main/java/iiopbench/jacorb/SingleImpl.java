package iiopbench.jacorb;

/** Bench::Single: one no-op operation; the server activates 500 of them. */
final class SingleImpl extends Bench.SinglePOA {
  @Override
  public void op() {}
}
