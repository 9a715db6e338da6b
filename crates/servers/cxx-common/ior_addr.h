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

// Sets host/port from the first TAG_INTERNET_IOP profile; returns false
// with `why` set when the IOR is malformed or has no IIOP profile.
inline bool iiop_address(const std::string& ior, std::string* host, uint16_t* port, std::string* why) {
  try {
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

}  // namespace bench

#endif
