// orb_omniorb.h -- the omniORB 4.2 specifics behind the shared C++ bench
// server and client (vendors/cxx-common/): stub header, ORB_init
// options, fixed object keys through omniINSPOA, endpoint option.
//
// Interface every orb_<name>.h provides (namespace orbx):
//   Config                     ordered name=value pairs printed as `config`
//   orb_name()                 "omniORB 4.2.5"
//   init_server(argc, argv, host, port, tls, cfg)  ORB listening on
//                                host:port, over TLS when tls.on()
//                                (port 0: an ephemeral port, which the
//                                server reads back from the IOR)
//   bind_key(orb, key, servant)  activates servant so its object key is
//                                exactly `key`; returns its reference
//   activate(orb)              starts dispatching (POA managers)
//   init_client(argc, argv, tls, cfg) ORB for the client (TLS wherever an
//                                IOR offers it when tls.on())
//   any_hex(a)                 an any's bytes as this ORB writes them
//                                (TypeCode, then value; the host's byte
//                                order), as hex, for a known defect's detail
#ifndef IIOPBENCH_ORB_OMNIORB_H
#define IIOPBENCH_ORB_OMNIORB_H

#include <omniORB4/CORBA.h>
#include <omniORB4/sslContext.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include <string>
#include <utility>
#include <vector>

#include "bench.hh"
#include "tls_opts.h"

namespace orbx {

typedef std::vector<std::pair<std::string, std::string> > Config;

// 512 MiB: omniORB's default giopMaxMsgSize (2 MiB) rejects the 64 MiB
// sequences of the throughput experiments with MARSHAL; the contract
// requires at least 256 MiB. It bounds the sum of all fragments of one
// message, in both directions.
static const char* const kMaxMsg = "536870912";

inline std::string orb_name() { return std::string("omniORB ") + omniORB::versionString(); }

inline PortableServer::POA_var& ins_poa() {
  static PortableServer::POA_var poa;
  return poa;
}

// ---- bidirectional GIOP (bench.idl's CALLBACKS) ---------------------------
// omniORB calls back over the client's own connection only when the server
// accepts bidirectional GIOP (acceptBiDirectionalGIOP=1 and "bidir" in the
// serverTransportRule; init_server sets both) and the POA that dispatched
// the call carrying the callback reference has BiDirPolicy BOTH. omniINSPOA
// (our fixed keys) has not, so the Perf servant is also activated in a POA
// "BiDir" that has, and call_back on the fixed key is forwarded there
// (LOCATION_FORWARD, which the client follows on the same connection).
// A client offers bidirectional GIOP (offerBiDirectionalGIOP=1, "bidir" in
// the clientTransportRule) only in --mode callback (init_client), as it
// pins every call to one connection per server.
inline PortableServer::POA_var& bidir_poa() {
  static PortableServer::POA_var poa;
  return poa;
}

inline CORBA::ORB_var& the_orb() {
  static CORBA::ORB_var orb;
  return orb;
}

// The POA with BiDirPolicy BOTH (a child of RootPOA), made on first use.
inline PortableServer::POA_ptr make_bidir_poa(CORBA::ORB_ptr orb) {
  if (CORBA::is_nil(bidir_poa().in())) {
    CORBA::Object_var o = orb->resolve_initial_references("RootPOA");
    PortableServer::POA_var root = PortableServer::POA::_narrow(o.in());
    CORBA::Any both;
    both <<= BiDirPolicy::BOTH;
    CORBA::PolicyList pl;
    pl.length(2);
    pl[0] = orb->create_policy(BiDirPolicy::BIDIRECTIONAL_POLICY_TYPE, both);
    pl[1] = root->create_id_assignment_policy(PortableServer::USER_ID);
    PortableServer::POAManager_var pm = root->the_POAManager();
    bidir_poa() = root->create_POA("BiDir", pm.in(), pl);
  }
  return bidir_poa().in();
}

// Server: `s` also answers in the BiDir POA under the ObjectId `key`.
inline CORBA::Object_ptr bind_bidir(CORBA::ORB_ptr orb, const char* key, PortableServer::Servant s) {
  PortableServer::POA_ptr poa = make_bidir_poa(orb);
  PortableServer::ObjectId_var oid = PortableServer::string_to_ObjectId(key);
  poa->activate_object_with_id(oid, s);
  return poa->id_to_reference(oid);
}

// In an upcall: forward to `bidir` unless the BiDir POA dispatched it.
inline void forward_to_bidir(CORBA::Object_ptr bidir) {
  if (CORBA::is_nil(bidir) || CORBA::is_nil(the_orb().in())) return;
  CORBA::Object_var o = the_orb()->resolve_initial_references("POACurrent");
  PortableServer::Current_var cur = PortableServer::Current::_narrow(o.in());
  PortableServer::POA_var poa = cur->get_POA();
  CORBA::String_var name = poa->the_name();
  if (std::string(name.in()) != "BiDir") throw omniORB::LOCATION_FORWARD(CORBA::Object::_duplicate(bidir), 0);
}

// Client (--mode callback): a Callback servant in the BiDir POA.
inline CORBA::Object_ptr bind_callback(CORBA::ORB_ptr orb, PortableServer::Servant s) {
  PortableServer::POA_ptr poa = make_bidir_poa(orb);
  PortableServer::ObjectId_var oid = PortableServer::string_to_ObjectId("Callback");
  poa->activate_object_with_id(oid, s);
  PortableServer::POAManager_var pm = poa->the_POAManager();
  pm->activate();
  return poa->id_to_reference(oid);
}

// omniORB's SSL transport (libomnisslTP4, OpenSSL) reads its settings
// from sslContext's statics before ORB_init: a CA file, and ONE file with
// our certificate and key (so the two given files are joined into a
// private temporary one, removed at exit), and a key password ("" for an
// unencrypted key). A server that does not require client certificates
// must not ask for one (SSL_VERIFY_NONE); a client verifies the server.
inline void configure_ssl(const bench::TlsOptions& tls, bool server, Config& cfg) {
  static std::string joined;
  char path[] = "/tmp/iiopbench-omniorb-tls-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) throw std::runtime_error("cannot create a temporary file for the TLS key");
  std::string pem;
  for (const std::string& f : {tls.cert, tls.key}) {
    std::ifstream in(f);
    if (!in) throw std::runtime_error("cannot read " + f);
    std::stringstream ss;
    ss << in.rdbuf();
    pem += ss.str();
    if (!pem.empty() && pem.back() != '\n') pem += '\n';
  }
  if (write(fd, pem.data(), pem.size()) != (ssize_t)pem.size()) throw std::runtime_error("cannot write the TLS key file");
  close(fd);
  joined = path;
  atexit([] { unlink(joined.c_str()); });
  static std::string ca;
  ca = tls.ca;
  sslContext::certificate_authority_file = ca.c_str();
  sslContext::key_file = joined.c_str();
  sslContext::key_file_password = "";
  sslContext::verify_mode = !server ? SSL_VERIFY_PEER
                            : tls.require_client ? SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT
                                                 : SSL_VERIFY_NONE;
  cfg.push_back(std::make_pair("tls", std::string("omniORB SSL transport (OpenSSL), CA ") + tls.ca +
                                          (server ? (tls.require_client ? ", client certificates required"
                                                                        : ", no client certificates")
                                                  : "")));
}

inline CORBA::ORB_ptr init_server(int& argc, char** argv, const std::string& host, int port,
                                  const bench::TlsOptions& tls, Config& cfg) {
  // Port 0: `giop:tcp:HOST:` (no port) makes omniORB bind an ephemeral one.
  // TLS: a `giop:ssl:` endpoint alone, so only TLS is served.
  std::string endpoint = std::string(tls.on() ? "giop:ssl:" : "giop:tcp:") + host + ":" +
                         (port ? std::to_string(port) : std::string());
  if (tls.on()) configure_ssl(tls, true, cfg);
  // maxServerThreadPerConnection=1: one connection's requests are dispatched
  // by one thread in arrival order, so a oneway burst (mark(1..n)) is not
  // reordered by concurrent upcalls (omniORB's default is up to 100 threads
  // per connection). Concurrency across connections is unaffected
  // (thread-per-connection model). Any -ORB<param> on the command line wins.
  // acceptBiDirectionalGIOP and "bidir" in the rule: callbacks may go over
  // a client's own connection when it offers it (see bidir_poa).
  const char* options[][2] = {{"endPoint", endpoint.c_str()},
                              {"giopMaxMsgSize", kMaxMsg},
                              {"maxServerThreadPerConnection", "1"},
                              {"acceptBiDirectionalGIOP", "1"},
                              {"serverTransportRule", "* unix,ssl,tcp,bidir"},
                              {0, 0}};
  CORBA::ORB_ptr orb = CORBA::ORB_init(argc, argv, "omniORB4", options);
  the_orb() = CORBA::ORB::_duplicate(orb);
  cfg.push_back(std::make_pair("orb", orb_name()));
  cfg.push_back(std::make_pair("endpoint", endpoint));
  cfg.push_back(std::make_pair("max_message_size", std::to_string(omniORB::giopMaxMsgSize())));
  cfg.push_back(std::make_pair("threads", "thread-per-connection"));
  cfg.push_back(std::make_pair("maxServerThreadPerConnection", "1"));
  cfg.push_back(std::make_pair("poa", "omniINSPOA (object key = ObjectId)"));
  cfg.push_back(std::make_pair("bidir", "acceptBiDirectionalGIOP=1, call_back forwarded to POA BiDir"));
  CORBA::Object_var obj = orb->resolve_initial_references("omniINSPOA");
  ins_poa() = PortableServer::POA::_narrow(obj);
  return orb;
}

// omniINSPOA makes the object key exactly the ObjectId bytes.
inline CORBA::Object_ptr bind_key(CORBA::ORB_ptr, const char* key, PortableServer::Servant s) {
  PortableServer::ObjectId_var oid = PortableServer::string_to_ObjectId(key);
  ins_poa()->activate_object_with_id(oid, s);
  return ins_poa()->id_to_reference(oid);
}

inline void activate(CORBA::ORB_ptr) {
  PortableServer::POAManager_var pm = ins_poa()->the_POAManager();
  pm->activate();
  if (!CORBA::is_nil(bidir_poa().in())) {
    PortableServer::POAManager_var bpm = bidir_poa()->the_POAManager();
    bpm->activate();
  }
}

// `bidir`: offer bidirectional GIOP on every connection (--mode callback).
inline CORBA::ORB_ptr init_client(int& argc, char** argv, const bench::TlsOptions& tls,
                                  Config& cfg, bool bidir = false) {
  if (tls.on()) configure_ssl(tls, false, cfg);
  const char* plain[][2] = {{"giopMaxMsgSize", kMaxMsg}, {0, 0}};
  const char* offer[][2] = {{"giopMaxMsgSize", kMaxMsg},
                            {"offerBiDirectionalGIOP", "1"},
                            {"clientTransportRule", "* unix,ssl,tcp,bidir"},
                            {0, 0}};
  CORBA::ORB_ptr orb = CORBA::ORB_init(argc, argv, "omniORB4", bidir ? offer : plain);
  the_orb() = CORBA::ORB::_duplicate(orb);
  if (bidir) cfg.push_back(std::make_pair("bidir", "offerBiDirectionalGIOP=1, Callback in POA BiDir"));
  cfg.push_back(std::make_pair("orb", orb_name()));
  cfg.push_back(std::make_pair("max_message_size", std::to_string(omniORB::giopMaxMsgSize())));
  return orb;
}

inline std::string any_hex(const CORBA::Any& a) {
  cdrMemoryStream s;
  a >>= s;
  const unsigned char* p = (const unsigned char*)s.bufPtr();
  std::string out;
  char b[3];
  for (CORBA::ULong i = 0; i < s.bufSize(); ++i) {
    if (i && i % 4 == 0) out += ' ';
    snprintf(b, sizeof b, "%02x", p[i]);
    out += b;
  }
  return out;
}

}  // namespace orbx

#endif
