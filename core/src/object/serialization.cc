// JSON save/load of object graphs (see loom/object/serialization.h).
// Both directions are iterative over the node list, so a deep graph costs
// heap, not stack.
#include "loom/object/serialization.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <unordered_map>
#include <vector>

#include "loom/object/containers.h"
#include "loom/object/function.h"
#include "loom/object/reflection.h"
#include "loom/support/bytes.h"
#include "loom/support/json.h"
#include "loom/support/strings.h"
#include "loom/version.h"

namespace loom {

namespace {

// The object-valued children of a node, in field order.
void children_of(const Object* object, std::vector<const Object*>& out) {
  auto add = [&](const Any& v) {
    if (v.kind() == AnyKind::kObject) out.push_back(v.object());
  };
  if (object->is_instance<ArrayNode>()) {
    for (const Any& item : static_cast<const ArrayNode*>(object)->items) add(item);
  } else if (object->is_instance<MapNode>()) {
    for (const auto& item : static_cast<const MapNode*>(object)->items) add(item.second);
  } else {
    for (const auto& field : TypeRegistry::info(object->type_index()).fields) add(field.get(object));
  }
}

class Saver {
 public:
  explicit Saver(const BlobSink& sink) : sink_(sink) {}

  std::string save(const Any& root) {
    if (root.kind() == AnyKind::kObject) number(root.object());
    JsonWriter json(0);
    json.begin_object();
    json.key("loom_json").value(int64_t{kJsonFormatVersion});
    json.key("loom_version").value(LOOM_VERSION);
    json.key("root");
    value(json, root, "the root");
    json.key("nodes").begin_array();
    for (const Object* object : order_) node(json, object);
    json.end_array().end_object();
    return json.str();
  }

 private:
  // Post-order numbering without recursion: children get smaller indices.
  void number(const Object* root) {
    struct Frame {
      const Object* object;
      std::vector<const Object*> children;
      size_t next = 0;
    };
    std::vector<Frame> stack;
    auto push = [&](const Object* object) {
      if (index_.count(object)) return;
      index_[object] = -1;  // in progress
      Frame frame{object, {}};
      children_of(object, frame.children);
      stack.push_back(std::move(frame));
    };
    push(root);
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.next < top.children.size()) {
        push(top.children[top.next++]);
        continue;
      }
      index_[top.object] = static_cast<int64_t>(order_.size());
      order_.push_back(top.object);
      stack.pop_back();
    }
  }

  void value(JsonWriter& json, const Any& v, const std::string& where) {
    switch (v.kind()) {
      case AnyKind::kNone:
        json.null();
        return;
      case AnyKind::kBool:
        json.value(v.as_bool());
        return;
      case AnyKind::kInt:
        json.value(v.as_int());
        return;
      case AnyKind::kFloat:
        json.begin_object().key("float").value(format_double(v.as_float())).end_object();
        return;
      case AnyKind::kStr:
        json.value(v.as_string());
        return;
      case AnyKind::kDataType:
        json.begin_object().key("dtype").value(v.as_dtype().to_string()).end_object();
        return;
      case AnyKind::kDevice:
        json.begin_object().key("device").value(v.as_device().to_string()).end_object();
        return;
      case AnyKind::kObject:
        json.begin_object().key("ref").value(index_.at(v.object())).end_object();
        return;
      case AnyKind::kFunction:
        LOOM_THROW(Error) << "cannot save " << where << " to JSON: it is a function";
      case AnyKind::kOpaquePtr:
        LOOM_THROW(Error) << "cannot save " << where << " to JSON: it is an opaque handle";
    }
  }

  void node(JsonWriter& json, const Object* object) {
    const TypeInfo& info = TypeRegistry::info(object->type_index());
    json.begin_object().key("type").value(info.key);
    std::string where = "node " + std::to_string(index_.at(object)) + " (" + info.key + ")";
    if (object->is_instance<ArrayNode>()) {
      json.key("items").begin_array();
      for (const Any& item : static_cast<const ArrayNode*>(object)->items) value(json, item, "an item of " + where);
      json.end_array();
    } else if (object->is_instance<MapNode>()) {
      json.key("items").begin_object();
      for (const auto& item : static_cast<const MapNode*>(object)->items) {
        json.key(item.first);
        value(json, item.second, "key '" + item.first + "' of " + where);
      }
      json.end_object();
    } else {
      json.key("fields").begin_object();
      for (const auto& field : info.fields) {
        json.key(field.name);
        value(json, field.get(object), "field '" + field.name + "' of " + where);
      }
      json.end_object();
      if (info.get_bytes) {
        std::string data = info.get_bytes(object);
        json.key("bytes");
        if (!sink_ || !sink_(data, json)) json.value(base64_encode(data));
      }
    }
    json.end_object();
  }

  const BlobSink& sink_;
  std::unordered_map<const Object*, int64_t> index_;
  std::vector<const Object*> order_;
};

class Loader {
 public:
  Loader(std::string source, const BlobSource& blobs) : source_(std::move(source)), blobs_(blobs) {}

  Any load(const std::string& text) {
    JsonValue doc = parse_json(text, source_);
    if (doc.kind != JsonValue::Kind::kObject)
      fail(doc, "a Loom JSON document is an object, not " + std::string(doc.kind_name()));
    const JsonValue* version = doc.find("loom_json");
    if (!version) fail(doc, "not a Loom JSON document: no \"loom_json\" format version");
    if (version->kind != JsonValue::Kind::kInt) fail(*version, "\"loom_json\" must be an integer");
    if (version->integer > kJsonFormatVersion || version->integer < 1) {
      fail(*version, "JSON format version " + std::to_string(version->integer) + " is not supported; this Loom (" +
                         LOOM_VERSION + ") reads version " + std::to_string(kJsonFormatVersion));
    }
    const JsonValue* nodes = doc.find("nodes");
    if (!nodes || nodes->kind != JsonValue::Kind::kArray) fail(doc, "missing \"nodes\" array");
    const JsonValue* root = doc.find("root");
    if (!root) fail(doc, "missing \"root\"");
    for (const auto& item : doc.object) {
      if (item.first != "loom_json" && item.first != "loom_version" && item.first != "nodes" && item.first != "root")
        fail(item.second, "unknown top-level key \"" + item.first + "\"");
    }
    built_.reserve(nodes->array.size());
    for (const JsonValue& node : nodes->array) built_.push_back(build(node));
    return decode(*root, "the root");
  }

 private:
  [[noreturn]] void fail(const JsonValue& at, const std::string& message) {
    throw ParseError(source_, at.line, at.column, message);
  }

  Any decode(const JsonValue& v, const std::string& where) {
    switch (v.kind) {
      case JsonValue::Kind::kNull:
        return Any();
      case JsonValue::Kind::kBool:
        return Any(v.boolean);
      case JsonValue::Kind::kInt:
        return Any(v.integer);
      case JsonValue::Kind::kFloat:
        return Any(v.number);
      case JsonValue::Kind::kString:
        return Any(v.string);
      case JsonValue::Kind::kArray:
        fail(v, where + ": an array value must be a node ({\"ref\": N})");
      case JsonValue::Kind::kObject:
        break;
    }
    if (v.object.size() != 1) fail(v, where + ": a tagged value has exactly one key (ref, float, dtype or device)");
    const std::string& tag = v.object[0].first;
    const JsonValue& payload = v.object[0].second;
    try {
      if (tag == "ref") {
        if (payload.kind != JsonValue::Kind::kInt) fail(payload, where + ": \"ref\" must be an integer");
        if (payload.integer < 0 || payload.integer >= static_cast<int64_t>(built_.size())) {
          fail(payload, where + ": refers to node " + std::to_string(payload.integer) +
                            ", which is not defined before it (" + std::to_string(built_.size()) + " nodes so far)");
        }
        return Any(built_[payload.integer]);
      }
      if (payload.kind != JsonValue::Kind::kString) fail(payload, where + ": \"" + tag + "\" must be a string");
      if (tag == "float") {
        const std::string& s = payload.string;
        if (s == "nan") return Any(std::numeric_limits<double>::quiet_NaN());
        if (s == "inf") return Any(std::numeric_limits<double>::infinity());
        if (s == "-inf") return Any(-std::numeric_limits<double>::infinity());
        char* end = nullptr;
        double d = std::strtod(s.c_str(), &end);
        if (s.empty() || *end != '\0') fail(payload, where + ": invalid float '" + s + "'");
        return Any(d);
      }
      if (tag == "dtype") return Any(DataType::parse(payload.string));
      if (tag == "device") return Any(Device::parse(payload.string));
    } catch (const ParseError&) {
      throw;
    } catch (const Error& e) {
      fail(payload, where + ": " + e.what());
    }
    fail(v, where + ": unknown value tag \"" + tag + "\" (tags: ref, float, dtype, device)");
  }

  ObjectPtr<Object> build(const JsonValue& node) {
    std::string where = "node " + std::to_string(built_.size());
    if (node.kind != JsonValue::Kind::kObject) fail(node, where + ": a node is an object");
    const JsonValue* type = node.find("type");
    if (!type || type->kind != JsonValue::Kind::kString) fail(node, where + ": missing \"type\"");
    const TypeInfo* info = TypeRegistry::find(type->string);
    if (!info) {
      fail(*type, where + ": unknown object type '" + type->string + "'" +
                      did_you_mean(type->string, TypeRegistry::list_keys()));
    }
    where += " (" + info->key + ")";
    if (info->key == "Array") {
      const JsonValue* items = node.find("items");
      if (!items || items->kind != JsonValue::Kind::kArray) fail(node, where + ": missing \"items\" array");
      std::vector<Any> values;
      for (size_t i = 0; i < items->array.size(); ++i)
        values.push_back(decode(items->array[i], where + " item " + std::to_string(i)));
      return Array(std::move(values)).object_ptr();
    }
    if (info->key == "Map") {
      const JsonValue* items = node.find("items");
      if (!items || items->kind != JsonValue::Kind::kObject) fail(node, where + ": missing \"items\" object");
      std::map<std::string, Any> values;
      for (const auto& item : items->object)
        values[item.first] = decode(item.second, where + " key '" + item.first + "'");
      return Map(std::move(values)).object_ptr();
    }
    if (!info->create) fail(*type, where + ": type '" + info->key + "' cannot be created (it is abstract)");
    const JsonValue* fields = node.find("fields");
    if (!fields || fields->kind != JsonValue::Kind::kObject) fail(node, where + ": missing \"fields\" object");
    ObjectPtr<Object> object = info->create();
    std::vector<std::string> names;
    for (const auto& field : info->fields) names.push_back(field.name);
    for (const auto& item : fields->object) {
      if (!info->field(item.first)) {
        fail(item.second, where + ": unknown field '" + item.first + "'" + did_you_mean(item.first, names));
      }
    }
    for (const auto& field : info->fields) {
      const JsonValue* value = fields->find(field.name);
      if (!value) fail(*fields, where + ": missing field '" + field.name + "'");
      Any decoded = decode(*value, where + " field '" + field.name + "'");
      try {
        field.set(object.get(), decoded);
      } catch (const Error& e) {
        fail(*value, where + ": " + e.what());
      }
    }
    const JsonValue* bytes = node.find("bytes");
    if (info->set_bytes) {
      if (!bytes) fail(node, where + ": missing \"bytes\"");
      bool inline_text = bytes->kind == JsonValue::Kind::kString;
      if (!inline_text && !(bytes->kind == JsonValue::Kind::kObject && blobs_)) {
        fail(*bytes, where + ": \"bytes\" must be a base64 string" +
                         std::string(blobs_ ? " or a blob reference object"
                                            : " (a blob reference is read only in a binary document, or in a module "
                                              "file read beside its weights)"));
      }
      try {
        info->set_bytes(object.get(), inline_text ? base64_decode(bytes->string) : blobs_(*bytes));
      } catch (const ParseError&) {
        throw;
      } catch (const Error& e) {
        fail(*bytes, where + ": " + e.what());
      }
    } else if (bytes) {
      fail(*bytes, where + ": type '" + info->key + "' has no bytes payload");
    }
    return object;
  }

  std::string source_;
  const BlobSource& blobs_;
  std::vector<ObjectPtr<Object>> built_;
};

// ---- binary form -------------------------------------------------------------
// Little endian: "LOOMOBJB", u32 version, u32 zero, u64 JSON size, u64 blob
// section offset (64-byte aligned), u64 blob section size (the section ends
// the document), then the JSON at offset 40.
constexpr char kBinaryMagic[8] = {'L', 'O', 'O', 'M', 'O', 'B', 'J', 'B'};
constexpr uint32_t kBinaryVersion = 1;
constexpr size_t kBinaryHeader = 40;
constexpr size_t kBlobAlign = 64;

}  // namespace

std::string save_json(const Any& root, const BlobSink& sink) { return Saver(sink).save(root); }

Any load_json(const std::string& text, const std::string& source, const BlobSource& blobs) {
  return Loader(source, blobs).load(text);
}

BlobRange blob_range(const JsonValue& reference, const std::string& kind, const std::vector<std::string>& other_keys,
                     uint64_t section_bytes, const std::string& section) {
  std::vector<std::string> keys = other_keys;
  keys.insert(keys.end(), {"offset", "size"});
  for (const auto& item : reference.object) {
    if (std::find(keys.begin(), keys.end(), item.first) == keys.end()) {
      LOOM_THROW(Error) << "unknown key \"" << item.first << "\" in a " << kind
                        << " reference (keys: " << join(keys, ", ") << ")";
    }
  }
  auto field = [&](const char* key) {
    const JsonValue* v = reference.find(key);
    if (!v || v->kind != JsonValue::Kind::kInt || v->integer < 0) {
      LOOM_THROW(Error) << "a " << kind << " reference needs \"" << key << "\", a non-negative integer";
    }
    return static_cast<uint64_t>(v->integer);
  };
  BlobRange range{field("offset"), field("size")};
  if (range.offset > section_bytes || range.size > section_bytes - range.offset) {
    LOOM_THROW(Error) << kind << " reference of " << range.size << " bytes at " << range.offset << " is outside "
                      << section << " (" << section_bytes << " bytes)";
  }
  return range;
}

std::string save_binary(const Any& root) {
  std::string blob;
  BlobSink sink = [&](std::string_view bytes, JsonWriter& json) {
    blob.resize(align_up(blob.size(), kBlobAlign), '\0');
    json.begin_object().key("offset").value(static_cast<int64_t>(blob.size()));
    json.key("size").value(static_cast<int64_t>(bytes.size())).end_object();
    blob.append(bytes);
    return true;
  };
  std::string json = save_json(root, sink);
  size_t blob_offset = align_up(kBinaryHeader + json.size(), kBlobAlign);
  std::string out(kBinaryHeader, '\0');
  std::memcpy(out.data(), kBinaryMagic, sizeof(kBinaryMagic));
  store_le<uint32_t>(out, 8, kBinaryVersion);
  store_le<uint64_t>(out, 16, json.size());
  store_le<uint64_t>(out, 24, blob_offset);
  store_le<uint64_t>(out, 32, blob.size());
  out.reserve(blob_offset + blob.size());
  out += json;
  out.resize(blob_offset, '\0');
  out += blob;
  return out;
}

bool is_binary_document(std::string_view bytes) {
  return bytes.size() >= sizeof(kBinaryMagic) && std::memcmp(bytes.data(), kBinaryMagic, sizeof(kBinaryMagic)) == 0;
}

Any load_binary(const std::string& bytes, const std::string& source) {
  if (!is_binary_document(bytes)) LOOM_THROW(Error) << source << ": not a Loom binary document (bad magic)";
  if (bytes.size() < kBinaryHeader) {
    LOOM_THROW(Error) << source << ": truncated binary document (" << bytes.size() << " bytes, the header alone is "
                      << kBinaryHeader << ")";
  }
  uint32_t version = load_le<uint32_t>(bytes, 8);
  if (version != kBinaryVersion) {
    LOOM_THROW(Error) << source << ": binary document format version " << version << " is not supported (this Loom ("
                      << LOOM_VERSION << ") reads version " << kBinaryVersion << ")";
  }
  uint64_t json_size = load_le<uint64_t>(bytes, 16), blob_offset = load_le<uint64_t>(bytes, 24),
           blob_size = load_le<uint64_t>(bytes, 32);
  uint64_t total = bytes.size();
  if (json_size > total - kBinaryHeader || blob_offset < kBinaryHeader + json_size || blob_offset > total ||
      blob_size != total - blob_offset) {
    LOOM_THROW(Error) << source << ": binary document sections do not fit: JSON of " << json_size
                      << " bytes, blob section of " << blob_size << " bytes at " << blob_offset << ", in " << total
                      << " bytes";
  }
  BlobSource blobs = [&](const JsonValue& reference) {
    BlobRange range = blob_range(reference, "blob", {}, blob_size, "the blob section");
    return bytes.substr(blob_offset + range.offset, range.size);
  };
  return load_json(bytes.substr(kBinaryHeader, json_size), source, blobs);
}

Any load_document(const std::string& bytes, const std::string& source) {
  return is_binary_document(bytes) ? load_binary(bytes, source) : load_json(bytes, source);
}

}  // namespace loom
