// tls_opts.h -- the TLS options of the shared C++ bench server and client
// (docs/vendor-protocol.md, "TLS"): PEM files given on the command line,
// handed to the ORB's init_server/init_client.
//
//   --tls-cert FILE        our certificate (chain), PEM
//   --tls-key FILE         its private key, PEM
//   --tls-ca FILE          CA certificates that verify the peer, PEM
//   --tls-require-client   (server) clients must present a certificate
#ifndef IIOPBENCH_TLS_OPTS_H
#define IIOPBENCH_TLS_OPTS_H

#include <string>

namespace bench {

struct TlsOptions {
  std::string cert, key, ca;
  bool require_client = false;
  bool on() const { return !cert.empty() || !key.empty() || !ca.empty(); }
  // Why the options cannot be used ("" when they can): every file is
  // needed (omniORB's SSL transport will not start without a key).
  std::string incomplete() const {
    if (!on()) return "";
    if (cert.empty() || key.empty() || ca.empty())
      return "TLS needs --tls-cert, --tls-key and --tls-ca together";
    return "";
  }
  // Consumes argv[*i] (and its value) when it is a TLS option.
  bool parse(int argc, char** argv, int* i, std::string* err) {
    std::string a = argv[*i];
    if (a == "--tls-require-client") {
      require_client = true;
      return true;
    }
    std::string* dst = a == "--tls-cert" ? &cert : a == "--tls-key" ? &key : a == "--tls-ca" ? &ca : 0;
    if (!dst) return false;
    if (*i + 1 >= argc) {
      *err = a + " needs a file";
      return true;
    }
    *dst = argv[++*i];
    return true;
  }
};

}  // namespace bench

#endif
