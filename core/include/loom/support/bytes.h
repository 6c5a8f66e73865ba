// Fixed-width little-endian fields in byte strings, for the binary
// formats' headers (the binary object form, weights files).  Callers check
// that `at + sizeof(T)` is within the bytes first.
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

}  // namespace loom

#endif  // LOOM_SUPPORT_BYTES_H_
