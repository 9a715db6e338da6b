// server_main.cc -- the bench.idl server of docs/vendor-protocol.md, shared
// by every C++ ORB. The ORB specifics come from BENCH_ORB_HEADER
// (orb_omniorb.h, orb_tao.h).
//
//   bench-server --host HOST --port PORT [--ior-file FILE]
//                [--tls-cert F --tls-key F --tls-ca F [--tls-require-client]]
//                [-ORB... options]
//
// With the TLS options the server listens for TLS only (its IOR says so as
// the ORB does it: omniORB puts the port in TAG_SSL_SEC_TRANS and 0 in the
// IIOP profile) and prints `corbaloc:ssliop:` lines.
//
// PORT 0 (the default) takes an ephemeral port; the port actually bound is
// read back from the IOR of `Bench` and shown in the corbaloc lines.
// Prints `config name=value` lines, the IOR of `Bench`, `corbaloc KEY URL`
// lines, then `ready`; serves until SIGTERM/SIGINT, then prints
// `stats calls=N oneways=N bytes=N` and exits 0.

#include BENCH_ORB_HEADER

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <string>
#include <thread>
#include <vector>

#include "ior_addr.h"
#include "servants.h"
#include "tls_opts.h"

namespace {

void usage(const char* why) {
  fprintf(stderr,
          "bench-server: %s\nusage: bench-server --host HOST [--port PORT] [--ior-file FILE] "
          "[--tls-cert F --tls-key F --tls-ca F [--tls-require-client]]\n",
          why);
  exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  std::string host = "127.0.0.1", ior_file;
  int port = 0;  // 0: an ephemeral port
  // Our options are removed; -ORB options stay for ORB_init.
  std::vector<char*> rest;
  rest.push_back(argv[0]);
  bench::TlsOptions tls;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i], err;
    if (tls.parse(argc, argv, &i, &err)) {
      if (!err.empty()) usage(err.c_str());
      continue;
    }
    if ((a == "--host" || a == "--port" || a == "--ior-file") && i + 1 >= argc)
      usage((a + " needs a value").c_str());
    if (a == "--host") {
      host = argv[++i];
    } else if (a == "--port") {
      char* end = 0;
      long p = strtol(argv[++i], &end, 10);
      if (*end || end == argv[i] || p < 0 || p > 65535)
        usage("--port must be 0..65535 (0: an ephemeral port)");
      port = (int)p;
    } else if (a == "--ior-file") {
      ior_file = argv[++i];
    } else if (a.compare(0, 4, "-ORB") == 0) {
      rest.push_back(argv[i]);
      if (i + 1 < argc) rest.push_back(argv[++i]);
    } else {
      usage(("unknown argument " + a).c_str());
    }
  }
  rest.push_back(0);
  int oargc = (int)rest.size() - 1;
  if (!tls.incomplete().empty()) usage(tls.incomplete().c_str());

  // Block the stop signals in every thread (the ORB's threads inherit this
  // mask); one thread takes them with sigwait and shuts the ORB down.
  // A background job of a non-interactive shell starts with SIGINT ignored,
  // and an ignored signal is discarded instead of pending for sigwait.
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, 0);
  signal(SIGPIPE, SIG_IGN);  // a client that vanishes must not kill us
  // work(KIND_SLEEP) accuracy: Linux lets a sleep overshoot by the timer
  // slack (50 us by default); 1 ns here is inherited by the ORB's threads.
  std::string slack = "default";
#ifdef __linux__
  if (prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL) == 0) slack = "1";
#endif

  try {
    orbx::Config cfg;
    CORBA::ORB_var orb = orbx::init_server(oargc, rest.data(), host, port, tls, cfg);
    bench::register_value_factories(orb.in());

    bench::Counters counters;
    std::vector<Bench::Single_var> singles(500);
    PortableServer::ServantBase_var perf_servant;
    bench::PerfImpl* perf = new bench::PerfImpl(counters, singles);
    perf_servant = perf;
    CORBA::Object_var perf_obj = orbx::bind_key(orb.in(), "Bench", perf);
    perf->bidir = orbx::bind_bidir(orb.in(), "Bench", perf);
    PortableServer::ServantBase_var d50 = new bench::Dispatch50Impl;
    CORBA::Object_var d50_obj = orbx::bind_key(orb.in(), "Dispatch50", d50.in());
    PortableServer::ServantBase_var d500 = new bench::Dispatch500Impl;
    CORBA::Object_var d500_obj = orbx::bind_key(orb.in(), "Dispatch500", d500.in());
    std::vector<PortableServer::ServantBase_var> single_servants(500);
    for (unsigned i = 0; i < 500; ++i) {
      single_servants[i] = new bench::SingleImpl;
      std::string key = "Single" + std::to_string(i);
      CORBA::Object_var o = orbx::bind_key(orb.in(), key.c_str(), single_servants[i].in());
      singles[i] = Bench::Single::_narrow(o.in());
    }
    orbx::activate(orb.in());

    CORBA::String_var ior = orb->object_to_string(perf_obj.in());
    if (port == 0) {
      // Ephemeral port: the ORB bound one; its IOR's IIOP profile says which.
      std::string ior_host, why;
      uint16_t bound = 0;
      bool found = tls.on() ? bench::ssl_port(ior.in(), &bound, &why)
                            : bench::iiop_address(ior.in(), &ior_host, &bound, &why);
      if (!found || bound == 0) {
        fprintf(stderr, "bench-server: cannot find the listening port in the IOR: %s\n",
                why.empty() ? "port 0" : why.c_str());
        return 1;
      }
      port = bound;
      cfg.push_back(std::make_pair("port", std::to_string(port) + " (ephemeral)"));
    }
    if (!ior_file.empty()) {
      FILE* f = fopen(ior_file.c_str(), "w");
      if (!f || fprintf(f, "%s\n", ior.in()) < 0 || fclose(f) != 0) {
        fprintf(stderr, "bench-server: cannot write IOR to %s: %s\n", ior_file.c_str(),
                strerror(errno));
        return 1;
      }
    }
    cfg.push_back(std::make_pair("timer_slack_ns", slack));
    for (size_t i = 0; i < cfg.size(); ++i)
      printf("config %s=%s\n", cfg[i].first.c_str(), cfg[i].second.c_str());
    printf("%s\n", ior.in());
    const char* keys[] = {"Bench", "Dispatch50", "Dispatch500", "Single0"};
    // TLS: TAO's spelling; no corbaloc form is portable for it.
    const char* scheme = tls.on() ? "ssliop:1.2@" : "iiop:";
    for (const char* k : keys)
      printf("corbaloc %s corbaloc:%s%s:%d/%s\n", k, scheme, host.c_str(), port, k);
    printf("ready\n");
    fflush(stdout);

    std::thread waiter([&]() {
      int sig = 0;
      sigwait(&stop, &sig);
      orb->shutdown(0);
    });
    orb->run();
    waiter.join();

    Bench::Stats s = counters.snapshot();
    printf("stats calls=%llu oneways=%llu bytes=%llu\n", (unsigned long long)s.calls,
           (unsigned long long)s.oneways, (unsigned long long)s.bytes);
    fflush(stdout);
    orb->destroy();
  } catch (const CORBA::SystemException& e) {
    fprintf(stderr, "bench-server: CORBA system exception %s minor 0x%x\n", e._rep_id(),
            (unsigned)e.minor());
    return 1;
  } catch (const CORBA::Exception& e) {
    fprintf(stderr, "bench-server: CORBA exception %s\n", e._rep_id());
    return 1;
  }
  return 0;
}
