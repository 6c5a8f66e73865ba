// Module files: the IR text, with large constants as raw bytes in a
// weights file beside it (docs/ir-text-format.md, "Weights beside the
// text").
//
// Weights file (little endian): "LOOMWGTS", u32 version (1), u32 zero, u64
// data size, u64 checksum of the data, zeros up to offset 64, then the
// data: each constant's bytes at a 64-byte aligned offset.  The text's
// meta section refers to a constant as
//   {"file": NAME, "checksum": "16 hex digits", "offset": O, "size": S}
// with O relative to the data.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "loom/text/text.h"
#include "loom/support/bytes.h"
#include "loom/support/file.h"
#include "loom/support/json.h"
#include "loom/support/strings.h"

namespace loom::text {

namespace {

constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'W', 'G', 'T', 'S'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeader = 64;
constexpr size_t kAlign = 64;

// A 64-bit checksum of the data (not cryptographic: it tells a text from
// the weights of another save), 8 bytes per step.
uint64_t checksum(std::string_view data) {
  constexpr uint64_t k1 = 0xff51afd7ed558ccdULL, k2 = 0xc4ceb9fe1a85ec53ULL;
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ data.size();
  auto step = [&](uint64_t w) {
    h ^= w * k1;
    h = ((h << 31) | (h >> 33)) * k2;
  };
  size_t i = 0;
  for (; i + 8 <= data.size(); i += 8) step(load_le<uint64_t>(data, i));
  if (i < data.size()) {
    uint64_t w = 0;
    std::memcpy(&w, data.data() + i, data.size() - i);
    step(w);
  }
  h ^= h >> 33;
  h *= k1;
  h ^= h >> 33;
  h *= k2;
  return h ^ (h >> 33);
}

std::string hex(uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(v));
  return text;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) LOOM_THROW(Error) << "cannot write " << path << ": " << std::strerror(errno);
}

const std::string& string_field(const JsonValue& reference, const char* key) {
  const JsonValue* v = reference.find(key);
  if (!v || v->kind != JsonValue::Kind::kString)
    LOOM_THROW(Error) << "a weights reference needs \"" << key << "\", a string";
  return v->string;
}

// The weights files a text refers to, each read and checked once.
class WeightsReader {
 public:
  explicit WeightsReader(std::string folder) : folder_(std::move(folder)) {}

  std::string operator()(const JsonValue& reference) {
    const std::string& name = string_field(reference, "file");
    const std::string& want = string_field(reference, "checksum");
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
      LOOM_THROW(Error) << "weights file '" << name
                        << "': a weights file is named by a plain file name, beside the text";
    }
    const File& file = open(name);
    if (hex(file.checksum) != want) {
      LOOM_THROW(Error) << "weights file " << file.path << " has checksum " << hex(file.checksum)
                        << ", the text expects " << want
                        << ": the text and its weights were not saved together (save both again)";
    }
    BlobRange range =
        blob_range(reference, "weights", {"file", "checksum"}, file.bytes.size() - kHeader, "the data of " + file.path);
    return file.bytes.substr(kHeader + range.offset, range.size);
  }

  std::string first_name() const { return files_.empty() ? "" : files_.begin()->first; }

 private:
  struct File {
    std::string path, bytes;
    uint64_t checksum = 0;
  };

  const File& open(const std::string& name) {
    auto found = files_.find(name);
    if (found != files_.end()) return found->second;
    File file;
    file.path = (std::filesystem::path(folder_) / name).string();
    file.bytes = read_file(file.path);
    if (file.bytes.size() < kHeader || std::memcmp(file.bytes.data(), kMagic, sizeof(kMagic)) != 0) {
      LOOM_THROW(Error) << file.path << " is not a Loom weights file (bad magic or shorter than its header)";
    }
    uint32_t version = load_le<uint32_t>(file.bytes, 8);
    if (version != kVersion) {
      LOOM_THROW(Error) << "weights file " << file.path << ": format version " << version
                        << " is not supported (this Loom reads version " << kVersion << ")";
    }
    uint64_t data_size = load_le<uint64_t>(file.bytes, 16);
    if (data_size != file.bytes.size() - kHeader) {
      LOOM_THROW(Error) << "weights file " << file.path << " is truncated or has trailing bytes: its header says "
                        << data_size << " bytes of data, it holds " << (file.bytes.size() - kHeader);
    }
    file.checksum = checksum(std::string_view(file.bytes).substr(kHeader));
    if (file.checksum != load_le<uint64_t>(file.bytes, 24)) {
      LOOM_THROW(Error) << "weights file " << file.path << " is corrupt: its data does not match its checksum";
    }
    return files_.emplace(name, std::move(file)).first->second;
  }

  std::string folder_;
  std::map<std::string, File> files_;
};

}  // namespace

ModuleFileContents module_file_contents(const IRModule& module, const std::string& weights_name) {
  // Two passes: the first lays the data out (the checksum goes into every
  // reference), the second writes the references.
  std::string data;
  std::vector<std::pair<uint64_t, uint64_t>> placed;
  BlobSink layout = [&](std::string_view bytes, JsonWriter& json) {
    if (bytes.size() <= kWeightsFileOver) return false;
    data.resize(align_up(data.size(), kAlign), '\0');
    placed.emplace_back(data.size(), bytes.size());
    data.append(bytes);
    json.null();  // this pass's text is thrown away
    return true;
  };
  std::string text = print_module(module, layout);
  if (placed.empty()) return {text, ""};  // no constant went to the sink: the plain text
  uint64_t sum = checksum(data);
  size_t next = 0;
  BlobSink refer = [&](std::string_view bytes, JsonWriter& json) {
    if (bytes.size() <= kWeightsFileOver) return false;
    const auto& [offset, size] = placed.at(next++);
    json.begin_object().key("file").value(weights_name).key("checksum").value(hex(sum));
    json.key("offset").value(static_cast<int64_t>(offset)).key("size").value(static_cast<int64_t>(size)).end_object();
    return true;
  };
  ModuleFileContents out;
  out.text = print_module(module, refer);  // the references, now that the checksum is known
  out.weights.assign(kHeader, '\0');
  std::memcpy(out.weights.data(), kMagic, sizeof(kMagic));
  store_le<uint32_t>(out.weights, 8, kVersion);
  store_le<uint64_t>(out.weights, 16, data.size());
  store_le<uint64_t>(out.weights, 24, sum);
  out.weights += data;
  return out;
}

void save_module_file(const IRModule& module, const std::string& path) {
  std::string weights_path = path + ".weights";
  ModuleFileContents contents = module_file_contents(module, std::filesystem::path(weights_path).filename().string());
  if (!contents.weights.empty()) {
    write_file(weights_path, contents.weights);
  } else {
    std::error_code ignored;  // an earlier save's weights, which nothing refers to now
    std::filesystem::remove(weights_path, ignored);
  }
  write_file(path, contents.text);
}

IRModule load_module_file(const std::string& path, std::string* weights_name) {
  std::string text = read_file(path);
  WeightsReader reader(std::filesystem::path(path).parent_path().string());
  BlobSource blobs = [&](const JsonValue& reference) { return reader(reference); };
  IRModule module = parse_module(text, path, blobs);
  if (weights_name) *weights_name = reader.first_name();
  return module;
}

}  // namespace loom::text
