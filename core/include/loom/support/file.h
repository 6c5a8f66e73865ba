// Reading files a user names (docs/reliability.md, "Files"): only regular
// files are read (a named pipe would block, a device never end), and a
// file larger than the reader accepts is refused before it is read.
#ifndef LOOM_SUPPORT_FILE_H_
#define LOOM_SUPPORT_FILE_H_

#include <cstdint>
#include <string>

namespace loom {

// The most bytes read_file reads unless told otherwise (4 GiB).
constexpr uint64_t kMaxFileBytes = uint64_t{1} << 32;

// The bytes of the regular file `path`.  Error "cannot read PATH: REASON"
// when it is missing, unreadable, not a regular file (naming what it is)
// or larger than `max_bytes`; opening never blocks.
std::string read_file(const std::string& path, uint64_t max_bytes = kMaxFileBytes);

// Error "cannot read PATH: REASON" unless `path` names a regular file
// (after symbolic links); for paths handed to another reader (dlopen).
void check_regular_file(const std::string& path);

// What a file mode is, for messages: "a directory", "a named pipe", ...
std::string file_kind(unsigned mode);

}  // namespace loom

#endif  // LOOM_SUPPORT_FILE_H_
