// A bounds-checked reader for one section of an ELF shared object.  Every
// offset read from the file is checked against the file size before use, so
// a truncated or corrupt file is reported, never read past.
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <map>
#include <vector>
#include <string>

#include "loom/plugin/manifest.h"
#include "loom/support/file.h"

namespace loom {

namespace {
#if defined(__x86_64__)
constexpr uint16_t kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kHostMachine = EM_AARCH64;
#elif defined(__riscv)
constexpr uint16_t kHostMachine = EM_RISCV;
#else
#error "Loom's plugin reader does not know this machine's ELF code"
#endif

class File {
 public:
  File(const std::string& path, const std::string& noun) : path_(path), noun_(noun) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a named pipe would block
    if (fd_ < 0) {
      if (errno == ENOENT) throw PluginError(path, "file not found");
      throw PluginError(path, std::string("cannot open: ") + std::strerror(errno));
    }
    struct stat st;
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      throw PluginError(path, "it is " + file_kind(st.st_mode) + ", not a regular file");
    }
    size_ = static_cast<uint64_t>(st.st_size);
  }
  ~File() { ::close(fd_); }
  uint64_t size() const { return size_; }

  // Reads `count` bytes at `offset`, failing with `what` if they are not all there.
  void read(void* out, uint64_t offset, uint64_t count, const char* what) const {
    if (offset > size_ || count > size_ - offset) {
      throw PluginError(path_, "not a " + noun_ + ": the file is truncated or corrupt (" + what + " lies at bytes " +
                                   std::to_string(offset) + ".." + std::to_string(offset + count) + ", the file has " +
                                   std::to_string(size_) + ")");
    }
    ssize_t got = ::pread(fd_, out, count, static_cast<off_t>(offset));
    if (got < 0 || static_cast<uint64_t>(got) != count) {
      throw PluginError(path_, std::string("cannot read ") + what + ": " + std::strerror(errno));
    }
  }

 private:
  std::string path_, noun_;
  int fd_ = -1;
  uint64_t size_ = 0;
};
}  // namespace

std::map<std::string, std::string> read_elf_sections(const std::string& path, const std::vector<std::string>& sections,
                                                     size_t max_size, const std::string& noun) {
  File file(path, noun);
  const std::string not_a = "not a " + noun + ": ";
  unsigned char ident[EI_NIDENT] = {0};
  if (file.size() < EI_NIDENT) throw PluginError(path, not_a + "not an ELF file (too short)");
  file.read(ident, 0, EI_NIDENT, "the ELF identification");
  if (std::memcmp(ident, ELFMAG, SELFMAG) != 0) {
    throw PluginError(path, not_a + "not an ELF file");
  }
  if (ident[EI_CLASS] != ELFCLASS64 || ident[EI_DATA] != ELFDATA2LSB) {
    throw PluginError(path, not_a + "not a 64-bit little-endian ELF file");
  }
  Elf64_Ehdr header;
  file.read(&header, 0, sizeof(header), "the ELF header");
  if (header.e_type != ET_DYN) {
    throw PluginError(path, not_a + "not a shared object (ELF type " + std::to_string(header.e_type) + ")");
  }
  if (header.e_machine != kHostMachine) {
    throw PluginError(path, "not a " + noun + " for this machine: built for ELF machine " +
                                std::to_string(header.e_machine) + ", this machine is " + std::to_string(kHostMachine));
  }
  // Every byte the loader maps from the file is in the file: a truncated
  // library would be mapped, and reading past its end raises SIGBUS.
  if (header.e_phentsize != sizeof(Elf64_Phdr) || header.e_phnum == 0 || header.e_phnum == PN_XNUM) {
    throw PluginError(path, not_a + "the ELF program header table is missing or malformed");
  }
  std::string segments(uint64_t(header.e_phnum) * sizeof(Elf64_Phdr), '\0');
  file.read(segments.data(), header.e_phoff, segments.size(), "the program header table");
  for (size_t i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr phdr;
    std::memcpy(&phdr, segments.data() + i * sizeof(Elf64_Phdr), sizeof(phdr));
    if (phdr.p_type != PT_LOAD && phdr.p_type != PT_DYNAMIC) continue;
    if (phdr.p_offset > file.size() || phdr.p_filesz > file.size() - phdr.p_offset) {
      throw PluginError(path, not_a + "the file is truncated or corrupt (segment " + std::to_string(i) +
                                  " lies at bytes " + std::to_string(phdr.p_offset) + ".." +
                                  std::to_string(phdr.p_offset + phdr.p_filesz) + ", the file has " +
                                  std::to_string(file.size()) + ")");
    }
  }
  if (header.e_shentsize != sizeof(Elf64_Shdr) || header.e_shnum == 0 || header.e_shstrndx >= header.e_shnum) {
    throw PluginError(path, not_a + "the ELF section header table is missing or malformed");
  }
  uint64_t table_size = uint64_t(header.e_shnum) * sizeof(Elf64_Shdr);
  std::string table(table_size, '\0');
  file.read(table.data(), header.e_shoff, table_size, "the section header table");
  auto section_header = [&](size_t i) {
    Elf64_Shdr shdr;
    std::memcpy(&shdr, table.data() + i * sizeof(Elf64_Shdr), sizeof(shdr));
    return shdr;
  };
  Elf64_Shdr names_header = section_header(header.e_shstrndx);
  if (names_header.sh_size > (1u << 24)) throw PluginError(path, not_a + "section name table too large");
  std::string names(names_header.sh_size, '\0');
  file.read(names.data(), names_header.sh_offset, names_header.sh_size, "the section name table");
  std::map<std::string, std::string> found;
  for (size_t i = 0; i < header.e_shnum; ++i) {
    Elf64_Shdr shdr = section_header(i);
    if (shdr.sh_name >= names.size()) continue;
    std::string name(names.c_str() + shdr.sh_name, strnlen(names.c_str() + shdr.sh_name, names.size() - shdr.sh_name));
    if (std::find(sections.begin(), sections.end(), name) == sections.end() || found.count(name)) continue;
    if (shdr.sh_type == SHT_NOBITS) throw PluginError(path, "section " + name + " has no contents");
    if (shdr.sh_size > max_size) {
      throw PluginError(path, "section " + name + " is " + std::to_string(shdr.sh_size) + " bytes, more than the " +
                                  std::to_string(max_size) + " allowed");
    }
    std::string bytes(shdr.sh_size, '\0');
    file.read(bytes.data(), shdr.sh_offset, shdr.sh_size, name.c_str());
    found.emplace(name, std::move(bytes));
  }
  return found;
}

std::string read_elf_section(const std::string& path, const std::string& section, size_t max_size) {
  std::map<std::string, std::string> found = read_elf_sections(path, {section}, max_size, "Loom plugin");
  if (found.empty()) {
    throw PluginError(path, "not a Loom plugin: no " + section +
                                " section (a shared library, but not built with "
                                "LOOM_PLUGIN_MANIFEST)");
  }
  return found.begin()->second;
}

}  // namespace loom
