package iiopbench.jacorb;

/** Bench::Dispatch50: 50 no-op methods m00 .. m49, dispatched by JacORB's generated skeleton. */
final class Dispatch50Impl extends Bench.Dispatch50POA {
  @Override public void m00() {} @Override public void m01() {} @Override public void m02() {} @Override public void m03() {} @Override public void m04() {}
  @Override public void m05() {} @Override public void m06() {} @Override public void m07() {} @Override public void m08() {} @Override public void m09() {}
  @Override public void m10() {} @Override public void m11() {} @Override public void m12() {} @Override public void m13() {} @Override public void m14() {}
  @Override public void m15() {} @Override public void m16() {} @Override public void m17() {} @Override public void m18() {} @Override public void m19() {}
  @Override public void m20() {} @Override public void m21() {} @Override public void m22() {} @Override public void m23() {} @Override public void m24() {}
  @Override public void m25() {} @Override public void m26() {} @Override public void m27() {} @Override public void m28() {} @Override public void m29() {}
  @Override public void m30() {} @Override public void m31() {} @Override public void m32() {} @Override public void m33() {} @Override public void m34() {}
  @Override public void m35() {} @Override public void m36() {} @Override public void m37() {} @Override public void m38() {} @Override public void m39() {}
  @Override public void m40() {} @Override public void m41() {} @Override public void m42() {} @Override public void m43() {} @Override public void m44() {}
  @Override public void m45() {} @Override public void m46() {} @Override public void m47() {} @Override public void m48() {} @Override public void m49() {}
}
