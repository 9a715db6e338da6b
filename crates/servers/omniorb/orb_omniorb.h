// orb_omniorb.h -- the omniORB 4.2 specifics behind the shared C++ bench
// server and client (crates/servers/cxx-common/): stub header, ORB_init
// options, fixed object keys through omniINSPOA, endpoint option.
//
// Interface every orb_<name>.h provides (namespace orbx):
//   Config                     ordered name=value pairs printed as `config`
//   orb_name()                 "omniORB 4.2.5"
//   init_server(argc, argv, host, port, cfg)  ORB listening on host:port
//                                (port 0: an ephemeral port, which the
//                                server reads back from the IOR)
//   bind_key(orb, key, servant)  activates servant so its object key is
//                                exactly `key`; returns its reference
//   activate(orb)              starts dispatching (POA managers)
//   init_client(argc, argv, cfg) ORB for the client
#ifndef IIOPBENCH_ORB_OMNIORB_H
#define IIOPBENCH_ORB_OMNIORB_H

#include <omniORB4/CORBA.h>

#include <string>
#include <utility>
#include <vector>

#include "bench.hh"

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

inline CORBA::ORB_ptr init_server(int& argc, char** argv, const std::string& host, int port,
                                  Config& cfg) {
  // Port 0: `giop:tcp:HOST:` (no port) makes omniORB bind an ephemeral one.
  std::string endpoint = "giop:tcp:" + host + ":" + (port ? std::to_string(port) : std::string());
  // maxServerThreadPerConnection=1: one connection's requests are dispatched
  // by one thread in arrival order, so a oneway burst (mark(1..n)) is not
  // reordered by concurrent upcalls (omniORB's default is up to 100 threads
  // per connection). Concurrency across connections is unaffected
  // (thread-per-connection model). Any -ORB<param> on the command line wins.
  const char* options[][2] = {{"endPoint", endpoint.c_str()},
                              {"giopMaxMsgSize", kMaxMsg},
                              {"maxServerThreadPerConnection", "1"},
                              {0, 0}};
  CORBA::ORB_ptr orb = CORBA::ORB_init(argc, argv, "omniORB4", options);
  cfg.push_back(std::make_pair("orb", orb_name()));
  cfg.push_back(std::make_pair("endpoint", endpoint));
  cfg.push_back(std::make_pair("max_message_size", std::to_string(omniORB::giopMaxMsgSize())));
  cfg.push_back(std::make_pair("threads", "thread-per-connection"));
  cfg.push_back(std::make_pair("maxServerThreadPerConnection", "1"));
  cfg.push_back(std::make_pair("poa", "omniINSPOA (object key = ObjectId)"));
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
}

inline CORBA::ORB_ptr init_client(int& argc, char** argv, Config& cfg) {
  const char* options[][2] = {{"giopMaxMsgSize", kMaxMsg}, {0, 0}};
  CORBA::ORB_ptr orb = CORBA::ORB_init(argc, argv, "omniORB4", options);
  cfg.push_back(std::make_pair("orb", orb_name()));
  cfg.push_back(std::make_pair("max_message_size", std::to_string(omniORB::giopMaxMsgSize())));
  return orb;
}

}  // namespace orbx

#endif
