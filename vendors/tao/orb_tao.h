// orb_tao.h -- the TAO specifics behind the shared C++ bench server and
// client (vendors/cxx-common/): tao_idl stub headers, ORB_init
// options, fixed object keys through the IORTable, listen endpoint.
//
// Same interface as orb_omniorb.h (namespace orbx): Config, orb_name(),
// init_server(), bind_key(), activate(), init_client().
//
// Code sets: libTAO_Codeset is linked in (see the include below); the
// `config codesets=` line says whether the ORB has a code set manager.
//
// Object keys: TAO's POA keys start with 14 01 0F 00 and carry the POA
// path, so the short keys of bench.idl ("Bench", "Single7", ...) come from
// the IORTable, which answers a request or LocateRequest for a bound key
// with LOCATION_FORWARD / OBJECT_FORWARD to the POA reference.
#ifndef IIOPBENCH_ORB_TAO_H
#define IIOPBENCH_ORB_TAO_H

#include "tao/ORB.h"
#include "tao/ORB_Core.h"
#include "tao/Version.h"
#include "tao/IORTable/IORTable.h"
#include "tao/PortableServer/PortableServer.h"
// Linked in (Makefile: -lTAO_Codeset) and registered by this header's
// static initializer, so ORB_init finds the code set manager without
// loading libTAO_Codeset at run time (which needs LD_LIBRARY_PATH to
// cover $ACE_ROOT/lib; without it TAO runs with no code set support, its
// IORs carry no TAG_CODE_SETS and it negotiates nothing).
#include "tao/Codeset/Codeset.h"
// Bidirectional GIOP (bench.idl's CALLBACKS): linked in (-lTAO_BiDirGIOP)
// and registered by this header's static initializer, as libTAO_Codeset.
#include "tao/BiDir_GIOP/BiDirGIOP.h"

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "benchC.h"
#include "benchS.h"
#include "tls_opts.h"

namespace orbx {

typedef std::vector<std::pair<std::string, std::string> > Config;

inline std::string orb_name() { return std::string("TAO ") + TAO_VERSION; }

struct TaoState {
  PortableServer::POA_var root;
  IORTable::Table_var table;
  CORBA::ORB_ptr orb = CORBA::ORB::_nil();
};
inline TaoState& state() {
  static TaoState s;
  return s;
}

// Whether this ORB negotiates code sets (a TAO_Codeset_Manager exists).
inline std::string codesets(CORBA::ORB_ptr orb) {
  TAO_ORB_Core* core = orb->orb_core();
  if (core == 0 || core->codeset_manager() == 0)
    return "no (libTAO_Codeset not loaded: no TAG_CODE_SETS, no negotiation)";
  return "yes (TAO_Codeset: native char ISO-8859-1, native wchar UTF-16)";
}

// argv gets `-ORBListenEndpoints iiop://HOST:PORT` (and
// -ORBDottedDecimalAddresses 1 so the IOR carries HOST as given) in front
// of the caller's -ORB options, which therefore win. PORT 0: TAO binds an
// ephemeral port (the server reads it back from the IOR).
inline CORBA::ORB_ptr init_server(int& argc, char** argv, const std::string& host, int port,
                                  const bench::TlsOptions& tls, Config& cfg) {
  // TAO's SSLIOP is a separate library this build does not link.
  if (tls.on()) throw std::runtime_error("TLS is not supported by the TAO bench programs");
  static std::string endpoint;
  endpoint = "iiop://" + host + ":" + std::to_string(port);
  static std::vector<char*> args;
  static char listen[] = "-ORBListenEndpoints";
  static char dotted[] = "-ORBDottedDecimalAddresses";
  static char one[] = "1";
  args.clear();
  args.push_back(argv[0]);
  args.push_back(listen);
  args.push_back(&endpoint[0]);
  args.push_back(dotted);
  args.push_back(one);
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(0);
  int n = (int)args.size() - 1;
  CORBA::ORB_ptr orb = CORBA::ORB_init(n, args.data());
  cfg.push_back(std::make_pair("orb", orb_name()));
  cfg.push_back(std::make_pair("endpoint", endpoint));
  cfg.push_back(std::make_pair("codesets", codesets(orb)));
  // TAO has no cap on incoming GIOP messages (it reassembles fragments of
  // any size) and sends unfragmented unless -ORBMaxMessageSize is set.
  cfg.push_back(std::make_pair("max_message_size", "unlimited"));
  cfg.push_back(std::make_pair("threads", "reactive (orb->run in one thread)"));
  cfg.push_back(std::make_pair("poa", "RootPOA + IORTable (LOCATION_FORWARD for short keys)"));
  cfg.push_back(std::make_pair("bidir", "BiDirPolicy BOTH (POA BiDir): calls back over a client's offered connection"));
  TaoState& s = state();
  s.orb = orb;
  CORBA::Object_var obj = orb->resolve_initial_references("RootPOA");
  s.root = PortableServer::POA::_narrow(obj.in());
  CORBA::Object_var t = orb->resolve_initial_references("IORTable");
  s.table = IORTable::Table::_narrow(t.in());
  return orb;
}

inline CORBA::Object_ptr bind_key(CORBA::ORB_ptr orb, const char* key, PortableServer::Servant sv) {
  TaoState& s = state();
  PortableServer::ObjectId_var id = s.root->activate_object(sv);
  CORBA::Object_var obj = s.root->id_to_reference(id.in());
  CORBA::String_var ior = orb->object_to_string(obj.in());
  s.table->bind(key, ior.in());
  return obj._retn();
}

inline void activate(CORBA::ORB_ptr) {
  PortableServer::POAManager_var pm = state().root->the_POAManager();
  pm->activate();
}

// ---- bidirectional GIOP (bench.idl's CALLBACKS) ---------------------------
// TAO decides per ORB, not per POA: creating a POA with BiDirPolicy BOTH
// sets the ORB's bidir flag (TAO_BiDirPolicy_Validator), after which a
// client sends its listen points (BI_DIR_IIOP) on the first request of
// each connection, and a server reads them (with libTAO_BiDirGIOP loaded)
// and calls back over that connection. The POA "BiDir" is made for the
// flag; a server needs no forward to it (unlike omniORB, whose flag is
// the dispatching POA's).
inline PortableServer::POA_ptr make_bidir_poa(CORBA::ORB_ptr orb) {
  static PortableServer::POA_var poa;
  if (CORBA::is_nil(poa.in())) {
    CORBA::Object_var o = orb->resolve_initial_references("RootPOA");
    PortableServer::POA_var root = PortableServer::POA::_narrow(o.in());
    CORBA::Any both;
    both <<= BiDirPolicy::BOTH;
    CORBA::PolicyList pl;
    pl.length(1);
    pl[0] = orb->create_policy(BiDirPolicy::BIDIRECTIONAL_POLICY_TYPE, both);
    PortableServer::POAManager_var pm = root->the_POAManager();
    poa = root->create_POA("BiDir", pm.in(), pl);
    pl[0]->destroy();
  }
  return poa.in();
}

// Server: the BiDir POA (for the ORB's flag); call_back stays on `key`.
inline CORBA::Object_ptr bind_bidir(CORBA::ORB_ptr orb, const char*, PortableServer::Servant) {
  make_bidir_poa(orb);
  return CORBA::Object::_nil();
}

inline void forward_to_bidir(CORBA::Object_ptr) {}

// Client (--mode callback): a Callback servant in the BiDir POA, so that
// this ORB offers its connections for callbacks.
inline CORBA::Object_ptr bind_callback(CORBA::ORB_ptr orb, PortableServer::Servant sv) {
  PortableServer::POA_ptr poa = make_bidir_poa(orb);
  PortableServer::ObjectId_var id = poa->activate_object(sv);
  PortableServer::POAManager_var pm = poa->the_POAManager();
  pm->activate();
  return poa->id_to_reference(id.in());
}

inline CORBA::ORB_ptr init_client(int& argc, char** argv, const bench::TlsOptions& tls,
                                  Config& cfg, bool bidir = false) {
  if (tls.on()) throw std::runtime_error("TLS is not supported by the TAO bench programs");
  CORBA::ORB_ptr orb = CORBA::ORB_init(argc, argv);
  if (bidir) cfg.push_back(std::make_pair("bidir", "BiDirPolicy BOTH (POA BiDir), Callback in it"));
  cfg.push_back(std::make_pair("orb", orb_name()));
  cfg.push_back(std::make_pair("codesets", codesets(orb)));
  cfg.push_back(std::make_pair("max_message_size", "unlimited"));
  return orb;
}

// An any's bytes: not shown under TAO (see orb_omniorb.h).
inline std::string any_hex(const CORBA::Any&) { return "(not shown under TAO)"; }

}  // namespace orbx

#endif
