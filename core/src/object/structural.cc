// Generic printer, structural equality and hash over reflected fields.
#include "loom/object/structural.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <unordered_map>

#include "loom/object/containers.h"
#include "loom/object/function.h"
#include "loom/object/reflection.h"
#include "loom/support/json.h"
#include "loom/support/stack.h"
#include "loom/support/strings.h"

namespace loom {

namespace {

void print(const Any& value, std::string& out);

void print_here(const Any& value, std::string& out) {
  switch (value.kind()) {
    case AnyKind::kNone:
      out += "none";
      return;
    case AnyKind::kBool:
      out += value.as_bool() ? "true" : "false";
      return;
    case AnyKind::kInt:
      out += std::to_string(value.as_int());
      return;
    case AnyKind::kFloat:
      out += format_double(value.as_float());
      return;
    case AnyKind::kStr:
      out += json_quote(value.as_string());
      return;
    case AnyKind::kDataType:
      out += value.as_dtype().to_string();
      return;
    case AnyKind::kDevice:
      out += value.as_device().to_string();
      return;
    case AnyKind::kOpaquePtr:
      out += "handle";
      return;
    case AnyKind::kFunction: {
      const auto* f = static_cast<const FunctionNode*>(value.object());
      out += f->name.empty() ? "function" : "function " + f->name;
      return;
    }
    case AnyKind::kObject:
      break;
  }
  const Object* object = value.object();
  if (object->is_instance<ArrayNode>()) {
    const auto* array = static_cast<const ArrayNode*>(object);
    out += '[';
    for (size_t i = 0; i < array->items.size(); ++i) {
      if (i) out += ", ";
      print(array->items[i], out);
    }
    out += ']';
    return;
  }
  if (object->is_instance<MapNode>()) {
    const auto* map = static_cast<const MapNode*>(object);
    out += '{';
    bool first = true;
    for (const auto& item : map->items) {
      if (!first) out += ", ";
      first = false;
      out += json_quote(item.first) + ": ";
      print(item.second, out);
    }
    out += '}';
    return;
  }
  const TypeInfo& info = TypeRegistry::info(object->type_index());
  out += info.key + "(";
  for (size_t i = 0; i < info.fields.size(); ++i) {
    if (i) out += ", ";
    out += info.fields[i].name + "=";
    print(info.fields[i].get(object), out);
  }
  if (info.get_bytes) {
    out += info.fields.empty() ? "" : ", ";
    out += "<" + std::to_string(info.get_bytes(object).size()) + " bytes>";
  }
  out += ')';
}

void print(const Any& value, std::string& out) {
  with_stack([&] { print_here(value, out); });  // one level of stack per level of nesting
}

bool float_equal(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// Compares two values; the path to the first difference is kept as a stack
// of segments and joined only when something differs.
class EqualChecker {
 public:
  explicit EqualChecker(bool want_path, bool map_vars = true) : want_path_(want_path), map_vars_(map_vars) {}

  bool equal(const Any& a, const Any& b) {
    return with_stack([&] { return equal_here(a, b); });  // one level of stack per level of nesting
  }

  const std::string& difference() const { return difference_; }

 private:
  bool equal_here(const Any& a, const Any& b) {
    if (a.kind() != b.kind() && !(a.is_object_like() && b.is_object_like())) return fail(a, b);
    switch (a.kind()) {
      case AnyKind::kNone:
        return true;
      case AnyKind::kBool:
        return a.as_bool() == b.as_bool() || fail(a, b);
      case AnyKind::kInt:
        return a.as_int() == b.as_int() || fail(a, b);
      case AnyKind::kFloat:
        return float_equal(a.as_float(), b.as_float()) || fail(a, b);
      case AnyKind::kDataType:
        return a.as_dtype() == b.as_dtype() || fail(a, b);
      case AnyKind::kDevice:
        return a.as_device() == b.as_device() || fail(a, b);
      case AnyKind::kOpaquePtr:
        return a.as_opaque_ptr() == b.as_opaque_ptr() || fail(a, b);
      default:
        return equal_objects(a, b);
    }
  }

  std::string path() const {
    std::string out = "root";
    for (const auto& segment : path_) out += segment;
    return out;
  }
  bool fail(const Any& a, const Any& b) {
    if (want_path_ && difference_.empty()) difference_ = path() + ": " + repr(a) + " vs " + repr(b);
    return false;
  }
  bool fail_text(const std::string& text) {
    if (want_path_ && difference_.empty()) difference_ = path() + ": " + text;
    return false;
  }
  // Compares a child under one more path segment (built only when wanted).
  template <class MakeSegment>
  bool child(const Any& a, const Any& b, MakeSegment make_segment) {
    if (want_path_) path_.push_back(make_segment());
    bool same = equal(a, b);
    if (want_path_ && same) path_.pop_back();
    return same;
  }

  bool equal_objects(const Any& a, const Any& b) {
    const Object* x = a.object();
    const Object* y = b.object();
    if (x->type_index() != y->type_index()) return fail_text("type " + x->type_key() + " vs " + y->type_key());
    if (a.kind() == AnyKind::kStr) return a.as_string() == b.as_string() || fail(a, b);
    if (x->is_instance<ArrayNode>()) {
      const auto& xs = static_cast<const ArrayNode*>(x)->items;
      const auto& ys = static_cast<const ArrayNode*>(y)->items;
      if (xs.size() != ys.size()) {
        return fail_text("length " + std::to_string(xs.size()) + " vs " + std::to_string(ys.size()));
      }
      for (size_t i = 0; i < xs.size(); ++i)
        if (!child(xs[i], ys[i], [i] { return "[" + std::to_string(i) + "]"; })) return false;
      return true;
    }
    if (x->is_instance<MapNode>()) {
      const auto& xs = static_cast<const MapNode*>(x)->items;
      const auto& ys = static_cast<const MapNode*>(y)->items;
      for (const auto& item : xs)
        if (!ys.count(item.first)) return fail_text("key " + json_quote(item.first) + " only on the left");
      for (const auto& item : ys)
        if (!xs.count(item.first)) return fail_text("key " + json_quote(item.first) + " only on the right");
      for (const auto& item : xs)
        if (!child(item.second, ys.at(item.first), [&] { return "[" + json_quote(item.first) + "]"; })) return false;
      return true;
    }
    const TypeInfo& info = TypeRegistry::info(x->type_index());
    if (info.structural == StructuralKind::kUnique || a.kind() == AnyKind::kFunction) {
      return x == y || fail_text("different " + info.key + " objects");
    }
    if (info.structural == StructuralKind::kBinding && !map_vars_) {
      return x == y || fail_text("different variables");
    }
    if (info.structural == StructuralKind::kBinding) {
      auto lhs = lhs_to_rhs_.find(x);
      auto rhs = rhs_to_lhs_.find(y);
      if (lhs != lhs_to_rhs_.end() || rhs != rhs_to_lhs_.end()) {
        bool bound_together = lhs != lhs_to_rhs_.end() && lhs->second == y;
        return bound_together || fail_text("variables bound to different definitions");
      }
      lhs_to_rhs_[x] = y;
      rhs_to_lhs_[y] = x;
    } else if (x == y || proven_.count({x, y})) {
      // (A pair found equal once stays equal: the variables it binds keep
      // their pairing; remembering it keeps a DAG's comparison linear.)
      return true;
    }
    for (const auto& field : info.fields) {
      if (field.flags & kStructuralIgnore) continue;
      if (!child(field.get(x), field.get(y), [&] { return "." + field.name; })) return false;
    }
    if (info.get_bytes && info.get_bytes(x) != info.get_bytes(y)) return fail_text("different data bytes");
    if (info.structural == StructuralKind::kTree) proven_.insert({x, y});
    return true;
  }

  bool want_path_;
  bool map_vars_;
  std::vector<std::string> path_;
  std::string difference_;
  std::unordered_map<const Object*, const Object*> lhs_to_rhs_, rhs_to_lhs_;
  std::set<std::pair<const Object*, const Object*>> proven_;
};

uint64_t mix(uint64_t seed, uint64_t value) {
  // boost::hash_combine's mixing, widened to 64 bits.
  return seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 12) + (seed >> 4));
}

class Hasher {
 public:
  explicit Hasher(bool map_vars = true) : map_vars_(map_vars) {}

  uint64_t hash(const Any& value) {
    return with_stack([&] { return hash_here(value); });  // one level of stack per level of nesting
  }

 private:
  uint64_t hash_here(const Any& value) {
    uint64_t h = static_cast<uint64_t>(value.is_object_like() ? AnyKind::kObject : value.kind());
    switch (value.kind()) {
      case AnyKind::kNone:
        return h;
      case AnyKind::kBool:
        return mix(h, value.as_bool());
      case AnyKind::kInt:
        return mix(h, static_cast<uint64_t>(value.as_int()));
      case AnyKind::kFloat: {
        double f = value.as_float();
        if (f == 0.0) f = 0.0;  // -0.0 equals 0.0
        if (std::isnan(f)) return mix(h, 0x7ff8000000000000ULL);
        uint64_t bits;
        std::memcpy(&bits, &f, sizeof(bits));
        return mix(h, bits);
      }
      case AnyKind::kDataType: {
        DataType t = value.as_dtype();
        return mix(h, (uint64_t(t.code) << 32) | (uint64_t(t.bits) << 16) | t.lanes);
      }
      case AnyKind::kDevice: {
        Device d = value.as_device();
        return mix(h, (uint64_t(uint32_t(d.device_type)) << 32) | uint32_t(d.device_id));
      }
      case AnyKind::kOpaquePtr:
        return mix(h, reinterpret_cast<uintptr_t>(value.as_opaque_ptr()));
      case AnyKind::kStr:
        return mix(h, std::hash<std::string>()(value.as_string()));
      default:
        return hash_object(value, h);
    }
  }

  uint64_t hash_object(const Any& value, uint64_t h) {
    const Object* object = value.object();
    // A node reached again (an expression shared in a DAG) hashes as it did
    // the first time: the variables inside it were numbered then and keep
    // their numbers, so its hash is the same; remembering it keeps hashing
    // linear in the DAG (an unrolled RNN reads each step's state thrice,
    // and as a tree it doubles with every step).
    auto seen = memo_.find(object);
    if (seen != memo_.end()) return seen->second;
    uint64_t result = hash_fields(value, h);
    memo_.emplace(object, result);
    return result;
  }

  uint64_t hash_fields(const Any& value, uint64_t h) {
    const Object* object = value.object();
    const TypeInfo& info = TypeRegistry::info(object->type_index());
    h = mix(h, std::hash<std::string>()(info.key));
    if (object->is_instance<ArrayNode>()) {
      for (const auto& item : static_cast<const ArrayNode*>(object)->items) h = mix(h, hash(item));
      return h;
    }
    if (object->is_instance<MapNode>()) {
      for (const auto& item : static_cast<const MapNode*>(object)->items) {
        h = mix(h, std::hash<std::string>()(item.first));
        h = mix(h, hash(item.second));
      }
      return h;
    }
    if (info.structural == StructuralKind::kUnique || value.kind() == AnyKind::kFunction ||
        (info.structural == StructuralKind::kBinding && !map_vars_)) {
      return mix(h, reinterpret_cast<uintptr_t>(object));
    }
    if (info.structural == StructuralKind::kBinding) {
      auto found = binding_order_.find(object);
      if (found != binding_order_.end()) return mix(h, found->second);
      size_t order = binding_order_.size();
      binding_order_[object] = order;
      h = mix(h, order);
    }
    for (const auto& field : info.fields) {
      if (field.flags & kStructuralIgnore) continue;
      h = mix(h, hash(field.get(object)));
    }
    if (info.get_bytes) h = mix(h, std::hash<std::string>()(info.get_bytes(object)));
    return h;
  }

  bool map_vars_;
  std::unordered_map<const Object*, size_t> binding_order_;
  std::unordered_map<const Object*, uint64_t> memo_;
};

}  // namespace

std::string repr(const Any& value) {
  std::string out;
  print(value, out);
  return out;
}

bool structural_equal(const Any& lhs, const Any& rhs) { return EqualChecker(false).equal(lhs, rhs); }

bool same_expression(const Any& lhs, const Any& rhs) { return EqualChecker(false, false).equal(lhs, rhs); }

std::optional<std::string> structural_difference(const Any& lhs, const Any& rhs) {
  EqualChecker checker(true);
  if (checker.equal(lhs, rhs)) return std::nullopt;
  return checker.difference();
}

uint64_t structural_hash(const Any& value) { return Hasher().hash(value); }

uint64_t expression_hash(const Any& value) { return Hasher(false).hash(value); }

}  // namespace loom
