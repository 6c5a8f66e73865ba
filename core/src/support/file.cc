#include "loom/support/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "loom/support/error.h"
#include "loom/support/size.h"

namespace loom {

std::string file_kind(unsigned mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a named pipe";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

namespace {
[[noreturn]] void cannot_read(const std::string& path, const std::string& why) {
  LOOM_THROW(Error) << "cannot read " << path << ": " << why;
}

void require_regular(const std::string& path, const struct stat& st) {
  if (!S_ISREG(st.st_mode)) cannot_read(path, "it is " + file_kind(st.st_mode) + ", not a regular file");
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};
}  // namespace

std::string read_file(const std::string& path, uint64_t max_bytes) {
  // O_NONBLOCK: opening a named pipe for reading would wait for a writer.
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) cannot_read(path, std::strerror(errno));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) cannot_read(path, std::strerror(errno));
  require_regular(path, st);
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes) {
    cannot_read(path, "it has " + readable_bytes(size) + ", more than the " + readable_bytes(max_bytes) +
                          " Loom reads from such a file");
  }
  std::string bytes(size, '\0');
  uint64_t done = 0;
  while (done < size) {
    ssize_t got = ::pread(fd.get(), bytes.data() + done, size - done, static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) cannot_read(path, std::strerror(errno));
    if (got == 0) break;  // shrank while read
    done += static_cast<uint64_t>(got);
  }
  bytes.resize(done);
  return bytes;
}

void check_regular_file(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) cannot_read(path, std::strerror(errno));
  require_regular(path, st);
}

}  // namespace loom
