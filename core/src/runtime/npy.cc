#include "loom/runtime/npy.h"

#include <fstream>
#include <map>
#include <sstream>

#include "loom/support/error.h"
#include "loom/support/file.h"
#include "loom/support/size.h"

namespace loom::runtime {

namespace {
const char kMagic[] = "\x93NUMPY";

std::string descr_of(DataType t) {
  if (t.lanes != 1) LOOM_THROW(Error) << ".npy cannot hold vector dtype " << t.to_string();
  switch (t.code) {
    case DataType::kBool:
      return "|b1";
    case DataType::kInt:
      return (t.bits == 8 ? "|i" : "<i") + std::to_string(t.bits / 8);
    case DataType::kUInt:
      return (t.bits == 8 ? "|u" : "<u") + std::to_string(t.bits / 8);
    case DataType::kFloat:
      return "<f" + std::to_string(t.bits / 8);
    default:
      LOOM_THROW(Error) << ".npy cannot hold dtype " << t.to_string();
  }
}

DataType dtype_of(const std::string& descr, const std::string& path) {
  if (descr.size() >= 3 && (descr[0] == '<' || descr[0] == '|')) {
    int bytes = std::atoi(descr.c_str() + 2);
    char kind = descr[1];
    if (kind == 'b' && bytes == 1) return DataType::Bool();
    if (kind == 'i' && (bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8)) return DataType::Int(bytes * 8);
    if (kind == 'u' && (bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8)) return DataType::UInt(bytes * 8);
    if (kind == 'f' && (bytes == 2 || bytes == 4 || bytes == 8)) return DataType::Float(bytes * 8);
  }
  LOOM_THROW(Error) << path << ": unsupported .npy dtype '" << descr
                    << "' (little-endian bool, int, uint and float only)";
}

// The header dict, `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`,
// as key -> the value's text (a quoted string keeps its quotes, a tuple
// its parentheses).  Keys must be quoted strings, each once; a value ends
// at the next comma or brace outside quotes and parentheses.
std::map<std::string, std::string> header_fields(const std::string& header, const std::string& path) {
  auto bad = [&](const std::string& why) {
    LOOM_THROW(Error) << path << ": bad .npy header (" << why << "): " << header;
  };
  size_t at = header.find_first_not_of(" \t\n");
  if (at == std::string::npos || header[at] != '{') bad("not a dict");
  ++at;
  std::map<std::string, std::string> fields;
  auto skip = [&] { at = header.find_first_not_of(" \t\n", at); };
  for (;;) {
    skip();
    if (at == std::string::npos) bad("no closing brace");
    if (header[at] == '}') break;
    char quote = header[at];
    if (quote != '\'' && quote != '"') bad("a key that is not a quoted string");
    size_t close = header.find(quote, at + 1);
    if (close == std::string::npos) bad("an unterminated key");
    std::string key = header.substr(at + 1, close - at - 1);
    at = close + 1;
    skip();
    if (at == std::string::npos || header[at] != ':') bad("no ':' after '" + key + "'");
    ++at;
    skip();
    size_t begin = at;
    int depth = 0;
    char in_string = 0;
    for (; at < header.size(); ++at) {
      char c = header[at];
      if (in_string) {
        if (c == in_string) in_string = 0;
        continue;
      }
      if (c == '\'' || c == '"') in_string = c;
      if (c == '(') ++depth;
      if (c == ')') --depth;
      if ((c == ',' || c == '}') && depth == 0) break;
    }
    if (at >= header.size() || in_string || depth != 0) bad("the value of '" + key + "' does not end");
    std::string value = header.substr(begin, at - begin);
    value.erase(value.find_last_not_of(" \t\n") + 1);
    if (!fields.emplace(key, value).second) bad("'" + key + "' twice");
    if (header[at] == ',') ++at;
  }
  for (const char* key : {"descr", "fortran_order", "shape"}) {
    if (!fields.count(key)) LOOM_THROW(Error) << path << ": .npy header lacks '" << key << "': " << header;
  }
  for (const auto& [key, value] : fields) {
    if (key != "descr" && key != "fortran_order" && key != "shape") {
      LOOM_THROW(Error) << path << ": .npy header has the unknown key '" << key
                        << "' (descr, fortran_order and shape only): " << header;
    }
  }
  return fields;
}

bool is_quoted(const std::string& v) {
  return v.size() >= 2 && (v.front() == '\'' || v.front() == '"') && v.back() == v.front();
}
}  // namespace

NDArray load_npy(const std::string& path) { return parse_npy(read_file(path), path); }

NDArray parse_npy(const std::string& data, const std::string& path) {
  if (data.size() < 10 || data.compare(0, 6, kMagic, 6) != 0) LOOM_THROW(Error) << path << ": not a .npy file";
  int major = static_cast<unsigned char>(data[6]);
  size_t header_len, start;
  if (major == 1) {
    header_len = static_cast<unsigned char>(data[8]) | (static_cast<unsigned char>(data[9]) << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (data.size() < 12) LOOM_THROW(Error) << path << ": truncated .npy header";
    header_len = 0;
    for (int k = 0; k < 4; ++k) header_len |= static_cast<size_t>(static_cast<unsigned char>(data[8 + k])) << (8 * k);
    start = 12;
  } else {
    LOOM_THROW(Error) << path << ": unsupported .npy format version " << major;
  }
  if (data.size() < start + header_len) LOOM_THROW(Error) << path << ": truncated .npy header";
  std::string header = data.substr(start, header_len);
  // Every value is checked for its type: a string where a bool belongs is
  // an error, never read as the other order.
  std::map<std::string, std::string> fields = header_fields(header, path);
  const std::string& descr = fields["descr"];
  if (!is_quoted(descr)) LOOM_THROW(Error) << path << ": .npy descr must be a quoted string, got " << descr;
  DataType dtype = dtype_of(descr.substr(1, descr.size() - 2), path);
  const std::string& order = fields["fortran_order"];
  if (order == "True") {
    LOOM_THROW(Error) << path << ": Fortran-order arrays are not supported (save with np.ascontiguousarray)";
  }
  if (order != "False") {
    LOOM_THROW(Error) << path << ": .npy fortran_order must be True or False, got " << order
                      << (is_quoted(order) ? " (a string)" : "");
  }
  std::string shape_field = fields["shape"];
  if (shape_field.size() < 2 || shape_field.front() != '(' || shape_field.back() != ')') {
    LOOM_THROW(Error) << path << ": bad .npy shape " << shape_field << " (a tuple of dimensions)";
  }
  std::vector<int64_t> shape;
  std::stringstream ss(shape_field.substr(1, shape_field.size() - 2));
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t b = item.find_first_not_of(' '), e = item.find_last_not_of(' ');
    if (b == std::string::npos) continue;
    std::string digits = item.substr(b, e - b + 1);
    int64_t d = 0;
    bool ok = digits.size() <= 18 && digits.find_first_not_of("0123456789") == std::string::npos;
    if (ok)
      for (char c : digits) d = d * 10 + (c - '0');
    if (!ok)
      LOOM_THROW(Error) << path << ": bad .npy dimension '" << digits << "' in shape " << shape_field
                        << " (a non-negative integer below 10^18)";
    shape.push_back(d);
  }
  uint64_t bytes = checked_nbytes(shape, (dtype.bits + 7) / 8, path);
  size_t offset = start + header_len;
  if (data.size() - offset != bytes) {
    LOOM_THROW(Error) << path << ": holds " << data.size() - offset << " data bytes, shape " << shape_field << " of "
                      << dtype.to_string() << " needs " << bytes;
  }
  return NDArray::from_bytes(shape, dtype, data.substr(offset));
}

void save_npy(const NDArray& array, const std::string& path) {
  std::string shape = "(";
  for (int64_t d : array.shape_vector()) shape += std::to_string(d) + ",";
  if (shape.size() > 1 && array.shape_vector().size() > 1) shape.pop_back();
  shape += ")";
  std::string header = "{'descr': '" + descr_of(array->dtype) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) LOOM_THROW(Error) << "cannot write " << path;
  out.write(kMagic, 6);
  out.put(1).put(0);
  out.put(static_cast<char>(header.size() & 0xff)).put(static_cast<char>(header.size() >> 8));
  out << header;
  NDArray host = array->device.device_type == Device::kCPU ? array : array.copy_to(Device());
  out.write(static_cast<const char*>(const_cast<NDArrayNode*>(host.get())->data()),
            static_cast<std::streamsize>(host->nbytes()));
  if (!out) LOOM_THROW(Error) << "cannot write " << path;
}

}  // namespace loom::runtime
