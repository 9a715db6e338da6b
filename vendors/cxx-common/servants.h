// servants.h -- the servants of bench.idl (Perf, Dispatch50, Dispatch500,
// Single), ORB-neutral (standard C++ mapping, POA skeletons POA_Bench::*).
//
// Counter semantics are bench.idl's COUNTERS section: `calls` counts twoway
// Perf operations except reset() and get_stats(); `oneways` counts oneway
// Perf operations including mark(); `bytes` is computed from the decoded
// arguments by bench_types.h's bytes(). Counters are atomics, so any ORB
// threading model may dispatch concurrently.

#ifndef IIOPBENCH_SERVANTS_H
#define IIOPBENCH_SERVANTS_H

#include <math.h>
#include <stdint.h>
#include <sys/resource.h>
#include <time.h>

#include <atomic>
#include <mutex>
#include <random>
#include <vector>

#include "bench_types.h"

namespace bench {

// Monotonic time in seconds.
inline double now_s() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// User + system CPU seconds of this process.
inline double cpu_s() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

// The counters behind reset() / get_stats().
struct Counters {
  std::atomic<uint64_t> calls{0}, oneways{0}, bytes{0};
  std::mutex mark_lock;  // guards last_mark, disorder (a compare-and-set pair)
  uint64_t last_mark = 0, disorder = 0;
  std::atomic<double> cpu_base{0.0};

  Counters() { cpu_base = cpu_s(); }

  void reset() {
    calls = 0;
    oneways = 0;
    bytes = 0;
    {
      std::lock_guard<std::mutex> g(mark_lock);
      last_mark = 0;
      disorder = 0;
    }
    cpu_base = cpu_s();
  }
  void mark(uint64_t n) {
    std::lock_guard<std::mutex> g(mark_lock);
    if (n != last_mark + 1) ++disorder;
    last_mark = n;
  }
  Bench::Stats snapshot() {
    Bench::Stats s;
    s.calls = calls.load();
    s.oneways = oneways.load();
    s.bytes = bytes.load();
    s.cpu_seconds = cpu_s() - cpu_base.load();
    std::lock_guard<std::mutex> g(mark_lock);
    s.last_mark = last_mark;
    s.mark_disorder = disorder;
    return s;
  }
};

class SingleImpl : public virtual POA_Bench::Single {
 public:
  void op() override {}
};

#define BENCH_M(n) void m##n() override {}
#define BENCH_M10(p) \
  BENCH_M(p##0) BENCH_M(p##1) BENCH_M(p##2) BENCH_M(p##3) BENCH_M(p##4) \
  BENCH_M(p##5) BENCH_M(p##6) BENCH_M(p##7) BENCH_M(p##8) BENCH_M(p##9)
#define BENCH_M100(p) \
  BENCH_M10(p##0) BENCH_M10(p##1) BENCH_M10(p##2) BENCH_M10(p##3) BENCH_M10(p##4) \
  BENCH_M10(p##5) BENCH_M10(p##6) BENCH_M10(p##7) BENCH_M10(p##8) BENCH_M10(p##9)

// m00 .. m49, no-ops.
class Dispatch50Impl : public virtual POA_Bench::Dispatch50 {
 public:
  BENCH_M10(0) BENCH_M10(1) BENCH_M10(2) BENCH_M10(3) BENCH_M10(4)
};

// m000 .. m499, no-ops.
class Dispatch500Impl : public virtual POA_Bench::Dispatch500 {
 public:
  BENCH_M100(0) BENCH_M100(1) BENCH_M100(2) BENCH_M100(3) BENCH_M100(4)
};
#undef BENCH_M
#undef BENCH_M10
#undef BENCH_M100

// Spends `us` microseconds sleeping or spinning; returns the microseconds
// actually spent.
inline double spend(double us, bool spin) {
  double t0 = now_s();
  if (!(us > 0)) return 0.0;  // also NaN
  if (us > 60e6) throw CORBA::BAD_PARAM(0, CORBA::COMPLETED_NO);  // > 1 minute
  if (spin) {
    double end = t0 + us * 1e-6;
    while (now_s() < end) {
    }
  } else {
    struct timespec req;
    req.tv_sec = (time_t)(us / 1e6);
    req.tv_nsec = (long)((us - (double)req.tv_sec * 1e6) * 1e3);
    while (nanosleep(&req, &req) != 0) {
    }
  }
  return (now_s() - t0) * 1e6;
}

class PerfImpl : public virtual POA_Bench::Perf {
 public:
  Counters& c;
  std::vector<Bench::Single_var>& singles;  // index -> reference, filled by main

  PerfImpl(Counters& counters, std::vector<Bench::Single_var>& s) : c(counters), singles(s) {}

  void ping() override { ++c.calls; }
  void reset() override { c.reset(); }
  Bench::Stats get_stats() override { return c.snapshot(); }
  void mark(CORBA::ULongLong n) override {
    ++c.oneways;
    c.mark((uint64_t)n);
  }
  CORBA::Double work(CORBA::Double service_us, Bench::ServiceDist dist,
                     Bench::ServiceKind kind) override {
    ++c.calls;
    double us = service_us;
    if (dist == Bench::DIST_EXPONENTIAL && us > 0) {
      thread_local std::mt19937_64 rng(std::random_device{}());
      std::exponential_distribution<double> e(1.0 / us);
      us = e(rng);
    }
    return spend(us, kind == Bench::KIND_SPIN);
  }
  Bench::Single_ptr get_single(CORBA::ULong index) override {
    ++c.calls;
    if (index >= singles.size()) throw CORBA::BAD_PARAM(0, CORBA::COMPLETED_NO);
    return Bench::Single::_duplicate(singles[index].in());
  }

  void pass_cd(const Bench::CDSeq& s) override {
    ++c.calls;
    c.bytes += E_cd::bytes(s);
  }
  void pass_both(const Bench::CharSeq& ch, const Bench::DoubleSeq& d) override {
    ++c.calls;
    c.bytes += E_char::bytes(ch) + E_double::bytes(d);
  }
  void pass_chars(const Bench::CharSeq& ch) override {
    ++c.calls;
    c.bytes += E_char::bytes(ch);
  }
  void pass_doubles(const Bench::DoubleSeq& d) override {
    ++c.calls;
    c.bytes += E_double::bytes(d);
  }

#define BENCH_SERVANT_OPS(tok)                                        \
  void send_oneway_##tok(const T_##tok::Seq& s) override {            \
    ++c.oneways;                                                      \
    c.bytes += T_##tok::bytes(s);                                     \
  }                                                                   \
  void send_##tok(const T_##tok::Seq& s) override {                   \
    ++c.calls;                                                        \
    c.bytes += T_##tok::bytes(s);                                     \
  }                                                                   \
  T_##tok::Seq* echo_##tok(const T_##tok::Seq& s) override {          \
    ++c.calls;                                                        \
    c.bytes += T_##tok::bytes(s);                                     \
    return new T_##tok::Seq(s);                                       \
  }
  BENCH_TOKENS(BENCH_SERVANT_OPS)
#undef BENCH_SERVANT_OPS

  // Valuetypes (bench.idl's VALUETYPES): what came in goes back, so the
  // ORB marshals the same graph, sharing and cycles included (a cycle's
  // reference counts never drop to zero: a small leak per such call).
  // Counted as calls, not bytes.
  Bench::Node* echo_node(Bench::Node* n) override {
    ++c.calls;
    CORBA::add_ref(n);
    return n;
  }
  Bench::NodeSeq* echo_nodes(const Bench::NodeSeq& s) override {
    ++c.calls;
    return new Bench::NodeSeq(s);
  }
  Bench::LongBox* echo_box(Bench::LongBox* b) override {
    ++c.calls;
    CORBA::add_ref(b);
    return b;
  }
  CORBA::Boolean same_node(Bench::Node* a, Bench::Node* b) override {
    ++c.calls;
    return a == b;
  }

  // ---- user exception and any (bench.idl's ANY AND USER EXCEPTIONS) ----
  // raise_user always raises BenchError, its detail octet i being i mod
  // 256; echo_any returns the any it received. Counted as calls.
  void raise_user(CORBA::Long code, const char* reason, CORBA::ULong detail_len) override {
    ++c.calls;
    if (detail_len > (1u << 20)) throw CORBA::BAD_PARAM(0, CORBA::COMPLETED_NO);
    Bench::OctetSeq d;
    d.length(detail_len);
    for (CORBA::ULong i = 0; i < detail_len; ++i) d[i] = (CORBA::Octet)(i & 0xff);
    throw Bench::BenchError(code, reason, d);
  }
  CORBA::Any* echo_any(const CORBA::Any& a) override {
    ++c.calls;
    return new CORBA::Any(a);
  }
  // ---- end of user exception and any ----
  // ---- bidirectional GIOP (bench.idl's CALLBACKS) -----------------------
  // call_back(cb, n) returns cb->notify(n). Where the ORB needs a POA with
  // the BiDir policy to call back over the client's own connection
  // (omniORB), `bidir` is this servant's reference in that POA and a call
  // that came through another POA is forwarded there first
  // (orbx::forward_to_bidir); elsewhere `bidir` stays nil.
  CORBA::Object_var bidir;

  CORBA::Long call_back(Bench::Callback_ptr cb, CORBA::Long n) override {
    orbx::forward_to_bidir(bidir.in());
    ++c.calls;
    if (CORBA::is_nil(cb)) throw CORBA::BAD_PARAM(0, CORBA::COMPLETED_NO);
    return cb->notify(n);
  }
};

// The client's Callback object: notify(n) returns n + 1 and counts.
class CallbackImpl : public virtual POA_Bench::Callback {
 public:
  std::atomic<unsigned> calls{0};
  std::atomic<int> last{0};
  CORBA::Long notify(CORBA::Long n) override {
    ++calls;
    last = n;
    return n + 1;
  }
};

// Factories for bench.idl's valuetypes with state (the value box needs
// none): the generated *_init classes, which make the OBV_Bench classes.
// Server and client both register them (a reply carries values too).
inline void register_value_factories(CORBA::ORB_ptr orb) {
  CORBA::ValueFactoryBase_var node = new Bench::Node_init();
  CORBA::ValueFactoryBase_var old = orb->register_value_factory("IDL:Bench/Node:1.0", node.in());
  CORBA::ValueFactoryBase_var tagged = new Bench::TaggedNode_init();
  old = orb->register_value_factory("IDL:Bench/TaggedNode:1.0", tagged.in());
}

}  // namespace bench

#endif
