// Checked size arithmetic (docs/reliability.md, "Sizes"): element counts
// and byte sizes of tensors whose shapes come from files, the IR or users.
// Every product is checked for overflow; a negative dimension is an error.
#ifndef LOOM_SUPPORT_SIZE_H_
#define LOOM_SUPPORT_SIZE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace loom {

// The largest byte size Loom allocates or reads (2^48 bytes, 256 TiB: more
// than any machine's memory, far from overflowing the arithmetic on it).
constexpr uint64_t kMaxTensorBytes = uint64_t{1} << 48;

// "(2, 3)" -- a shape as the messages print it.
std::string shape_text(const std::vector<int64_t>& shape);

// The number of elements of `shape`; an Error that begins with `what`
// when a dimension is negative or the count overflows.
int64_t checked_numel(const std::vector<int64_t>& shape, const std::string& what);

// count * element_bytes; an Error that begins with `what` when it passes
// kMaxTensorBytes.
uint64_t checked_nbytes(const std::vector<int64_t>& shape, int element_bytes, const std::string& what);

// Bytes in readable units: "512 bytes", "1.5 KiB", "12.0 GiB".
std::string readable_bytes(uint64_t bytes);

}  // namespace loom

#endif  // LOOM_SUPPORT_SIZE_H_
