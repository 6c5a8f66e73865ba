// Fixed-width little-endian fields in byte strings, for the binary
// formats' headers (the binary object form, weights files; callers of
// load_le check that `at + sizeof(T)` is within the bytes first), and
// length-prefixed fields (kept for plugins' own formats; Loom's kernel
// modules save through runtime::KernelModuleNode and the serializer).
#ifndef LOOM_SUPPORT_BYTES_H_
#define LOOM_SUPPORT_BYTES_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace loom {

template <class T>
T load_le(std::string_view bytes, size_t at) {
  T v;
  std::memcpy(&v, bytes.data() + at, sizeof(T));
  return v;
}

template <class T>
void store_le(std::string& bytes, size_t at, T v) {
  std::memcpy(bytes.data() + at, &v, sizeof(T));
}

// `n` rounded up to a multiple of `alignment`.
constexpr uint64_t align_up(uint64_t n, uint64_t alignment) { return (n + alignment - 1) / alignment * alignment; }

// A length-prefixed field (its size as a little-endian uint64, then its
// bytes), appended to `out`.
inline void put_field(std::string& out, std::string_view field) {
  size_t at = out.size();
  out.resize(at + 8);
  store_le<uint64_t>(out, at, field.size());
  out.append(field);
}

// The field put_field wrote at `at` into `field`, `at` moved past it;
// false when the bytes end first (the caller names what was truncated).
inline bool take_field(std::string_view in, size_t& at, std::string& field) {
  if (at + 8 > in.size()) return false;
  uint64_t n = load_le<uint64_t>(in, at);
  if (n > in.size() - at - 8) return false;
  field.assign(in.substr(at + 8, n));
  at += 8 + n;
  return true;
}

}  // namespace loom

#endif  // LOOM_SUPPORT_BYTES_H_
