#include "loom/support/size.h"

#include <cstdio>

#include "loom/support/error.h"

namespace loom {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

int64_t checked_numel(const std::vector<int64_t>& shape, const std::string& what) {
  int64_t n = 1;
  bool overflow = false;
  for (size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] < 0)
      LOOM_THROW(Error) << what << ": dimension " << k << " of shape " << shape_text(shape) << " is negative";
    overflow |= __builtin_mul_overflow(n, shape[k], &n);
  }
  // A zero dimension makes the count 0 even where the product of the
  // others overflowed: such a shape is still refused, it has no meaning.
  if (overflow)
    LOOM_THROW(Error) << what << ": shape " << shape_text(shape) << " has more elements than fit in 64 bits";
  return n;
}

uint64_t checked_nbytes(const std::vector<int64_t>& shape, int element_bytes, const std::string& what) {
  uint64_t n = static_cast<uint64_t>(checked_numel(shape, what));
  uint64_t bytes;
  bool overflow = __builtin_mul_overflow(n, static_cast<uint64_t>(element_bytes), &bytes);
  if (overflow || bytes > kMaxTensorBytes) {
    LOOM_THROW(Error) << what << ": shape " << shape_text(shape) << " of " << element_bytes << "-byte elements is "
                      << (overflow ? "over 16 EiB" : readable_bytes(bytes)) << ", more than Loom allocates ("
                      << readable_bytes(kMaxTensorBytes) << ")";
  }
  return bytes;
}

std::string readable_bytes(uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes) / 1024;
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.1f %s", v, units[u]);
  return buffer;
}

}  // namespace loom
