// ior_addr.h -- host and port of the first IIOP profile of a stringified
// IOR, decoded by hand (ORB-neutral: CORBA has no portable API for it).
//
// The conformance client uses it to reach `Dispatch50` / `Dispatch500` by
// corbaloc on the same host and port when its target is an IOR.
//
// Layout (CORBA 3.0 13.6.2, 15.7.2): "IOR:" + hex of an encapsulation:
// octet byte_order, string type_id, sequence<TaggedProfile> {u32 tag,
// sequence<octet> profile_data}. TAG_INTERNET_IOP (0) profile_data is an
// encapsulation: octet byte_order, octet major, octet minor, string host,
// ushort port, sequence<octet> object_key, ...

#ifndef IIOPBENCH_IOR_ADDR_H
#define IIOPBENCH_IOR_ADDR_H

#include <stdint.h>

#include <string>
#include <vector>

namespace bench {

// A CDR reader over one encapsulation; alignment counts from its start.
class EncapReader {
 public:
  EncapReader(const uint8_t* p, size_t n) : p_(p), n_(n), at_(0), little_(false) {
    if (n_ < 1) throw std::string("empty encapsulation");
    little_ = p_[0] != 0;
    at_ = 1;
  }
  uint32_t u32() {
    align(4);
    need(4);
    const uint8_t* b = p_ + at_;
    at_ += 4;
    return little_ ? (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24
                   : (uint32_t)b[3] | (uint32_t)b[2] << 8 | (uint32_t)b[1] << 16 | (uint32_t)b[0] << 24;
  }
  uint16_t u16() {
    align(2);
    need(2);
    const uint8_t* b = p_ + at_;
    at_ += 2;
    return little_ ? (uint16_t)(b[0] | b[1] << 8) : (uint16_t)(b[1] | b[0] << 8);
  }
  uint8_t u8() {
    need(1);
    return p_[at_++];
  }
  // A length-prefixed octet run (string with its NUL, or sequence<octet>).
  const uint8_t* octets(uint32_t* len) {
    *len = u32();
    need(*len);
    const uint8_t* b = p_ + at_;
    at_ += *len;
    return b;
  }
  std::string str() {
    uint32_t n = 0;
    const uint8_t* b = octets(&n);
    if (n == 0 || b[n - 1] != 0) throw std::string("string without NUL at offset ") + std::to_string(at_ - n);
    return std::string((const char*)b, n - 1);
  }

 private:
  void align(size_t a) { at_ = (at_ + a - 1) / a * a; }
  void need(size_t k) {
    if (at_ > n_ || n_ - at_ < k)
      throw "IOR truncated: " + std::to_string(k) + " bytes wanted at offset " + std::to_string(at_) +
          ", " + std::to_string(at_ > n_ ? 0 : n_ - at_) + " left";
  }
  const uint8_t* p_;
  size_t n_, at_;
  bool little_;
};

// The bytes of a stringified IOR ("IOR:" + hex digits).
inline std::vector<uint8_t> ior_bytes(const std::string& ior) {
  if (ior.compare(0, 4, "IOR:") != 0 || ior.size() % 2) throw std::string("not IOR:<even hex>");
  std::vector<uint8_t> bytes;
  for (size_t i = 4; i + 1 < ior.size(); i += 2) {
    int v = 0;
    for (size_t k = i; k < i + 2; ++k) {
      char c = ior[k];
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) throw "bad hex digit at " + std::to_string(k);
      v = v * 16 + d;
    }
    bytes.push_back((uint8_t)v);
  }
  return bytes;
}

// Sets host/port from the first TAG_INTERNET_IOP profile; returns false
// with `why` set when the IOR is malformed or has no IIOP profile.
inline bool iiop_address(const std::string& ior, std::string* host, uint16_t* port, std::string* why) {
  try {
    std::vector<uint8_t> bytes = ior_bytes(ior);
    EncapReader r(bytes.data(), bytes.size());
    r.str();  // type_id
    uint32_t profiles = r.u32();
    for (uint32_t i = 0; i < profiles; ++i) {
      uint32_t tag = r.u32(), len = 0;
      const uint8_t* data = r.octets(&len);
      if (tag != 0) continue;
      EncapReader pr(data, len);
      pr.u8();
      pr.u8();  // IIOP version
      *host = pr.str();
      *port = pr.u16();
      return true;
    }
    throw std::string("no TAG_INTERNET_IOP profile");
  } catch (const std::string& e) {
    *why = e;
    return false;
  }
}

// Finds component `ctag` of the first IIOP profile and hands its
// encapsulated data to `read`; false with `why` set when the IOR is
// malformed or that profile has no such component.
template <class F>
inline bool iiop_component(const std::string& ior, uint32_t ctag, F read, std::string* why) {
  try {
    std::vector<uint8_t> bytes = ior_bytes(ior);
    EncapReader r(bytes.data(), bytes.size());
    r.str();
    uint32_t profiles = r.u32();
    for (uint32_t i = 0; i < profiles; ++i) {
      uint32_t tag = r.u32(), len = 0;
      const uint8_t* data = r.octets(&len);
      if (tag != 0) continue;
      EncapReader pr(data, len);
      pr.u8();
      uint8_t minor = pr.u8();
      pr.str();
      pr.u16();
      uint32_t key_len = 0;
      pr.octets(&key_len);
      if (minor == 0) break;
      uint32_t n = pr.u32();
      for (uint32_t c = 0; c < n; ++c) {
        uint32_t t = pr.u32(), clen = 0;
        const uint8_t* cdata = pr.octets(&clen);
        if (t != ctag) continue;
        EncapReader cr(cdata, clen);
        read(cr);
        return true;
      }
      break;
    }
    throw std::string("no component ") + std::to_string(ctag) + " in the IIOP profile";
  } catch (const std::string& e) {
    *why = e;
    return false;
  } catch (const std::exception& e) {
    *why = e.what();
    return false;
  }
}

// Sets port from TAG_SSL_SEC_TRANS (20: encapsulated {ushort
// target_supports, target_requires, port}) of the first IIOP profile:
// where a TLS-only server listens (its profile's own port is 0).
inline bool ssl_port(const std::string& ior, uint16_t* port, std::string* why) {
  return iiop_component(ior, 20, [port](EncapReader& r) {
    r.u16();
    r.u16();
    *port = r.u16();
  }, why);
}

// The server's ORB by TAG_ORB_TYPE (0: encapsulated ulong) of the first
// IIOP profile: 0x41545400 omniORB, 0x4a414300 JacORB, 0x54414f00 TAO;
// 0 when the IOR has none (or the target is a corbaloc).
const uint32_t kOrbOmniORB = 0x41545400, kOrbJacORB = 0x4a414300, kOrbTAO = 0x54414f00;
inline uint32_t orb_type(const std::string& ior) {
  uint32_t t = 0;
  std::string why;
  if (ior.compare(0, 4, "IOR:") != 0) return 0;
  iiop_component(ior, 0, [&t](EncapReader& r) { t = r.u32(); }, &why);
  return t;
}

// A CDR writer for one encapsulation in a given byte order.
class EncapWriter {
 public:
  explicit EncapWriter(bool little) : little_(little) { b_.push_back(little ? 1 : 0); }
  void u8(uint8_t v) { b_.push_back(v); }
  void u16(uint16_t v) {
    align(2);
    put(v, 2);
  }
  void u32(uint32_t v) {
    align(4);
    put(v, 4);
  }
  void octets(const uint8_t* p, uint32_t n) {
    u32(n);
    b_.insert(b_.end(), p, p + n);
  }
  void str(const std::string& s) { octets((const uint8_t*)s.c_str(), (uint32_t)s.size() + 1); }
  const std::vector<uint8_t>& bytes() const { return b_; }

 private:
  void align(size_t a) {
    while (b_.size() % a) b_.push_back(0);
  }
  void put(uint32_t v, int n) {
    for (int i = 0; i < n; ++i) b_.push_back((uint8_t)(v >> (8 * (little_ ? i : n - 1 - i))));
  }
  std::vector<uint8_t> b_;
  bool little_;
};

// The same IOR with the object key of every IIOP profile replaced by
// `key` (components kept verbatim): how a client reaches the server's
// other objects when no corbaloc form can say how (TLS).
inline bool with_key(const std::string& ior, const std::string& key, std::string* out, std::string* why) {
  try {
    std::vector<uint8_t> in = ior_bytes(ior);
    EncapReader r(in.data(), in.size());
    EncapWriter w(in[0] != 0);
    w.str(r.str());
    uint32_t profiles = r.u32();
    w.u32(profiles);
    for (uint32_t i = 0; i < profiles; ++i) {
      uint32_t tag = r.u32(), len = 0;
      const uint8_t* data = r.octets(&len);
      w.u32(tag);
      if (tag != 0) {
        w.octets(data, len);
        continue;
      }
      EncapReader pr(data, len);
      EncapWriter pw(data[0] != 0);
      uint8_t major = pr.u8(), minor = pr.u8();
      pw.u8(major);
      pw.u8(minor);
      pw.str(pr.str());
      pw.u16(pr.u16());
      uint32_t old_len = 0;
      pr.octets(&old_len);
      pw.octets((const uint8_t*)key.data(), (uint32_t)key.size());
      if (minor > 0) {
        uint32_t n = pr.u32();
        pw.u32(n);
        for (uint32_t c = 0; c < n; ++c) {
          uint32_t ctag = pr.u32(), clen = 0;
          const uint8_t* cdata = pr.octets(&clen);
          pw.u32(ctag);
          pw.octets(cdata, clen);
        }
      }
      w.octets(pw.bytes().data(), (uint32_t)pw.bytes().size());
    }
    static const char hex[] = "0123456789abcdef";
    *out = "IOR:";
    for (uint8_t b : w.bytes()) {
      out->push_back(hex[b >> 4]);
      out->push_back(hex[b & 15]);
    }
    return true;
  } catch (const std::string& e) {
    *why = e;
    return false;
  } catch (const std::exception& e) {
    *why = e.what();
    return false;
  }
}

}  // namespace bench

#endif
