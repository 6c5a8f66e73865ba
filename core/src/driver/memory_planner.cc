// The VM's static memory plan; see memory_planner.h.
#include "memory_planner.h"

#include <algorithm>
#include <climits>
#include <numeric>
#include <optional>
#include <string>

namespace loom::driver::vm {

namespace {
using runtime::ShapeExpr;

int find(std::vector<int>& parent, int x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

// Two symbolic sizes share a storage only when they are the same
// expression over the same variables.
std::string shape_key(const ShapeExpr& e) {
  const runtime::ShapeExprNode* n = e.get();
  switch (n->shape_op()) {
    case runtime::ShapeOp::kConst:
      return std::to_string(n->value);
    case runtime::ShapeOp::kVar:
      return "v" + std::to_string(n->value);
    default:
      return "(" + std::to_string(n->op) + " " + shape_key(downcast<ShapeExpr>(n->a)) + " " +
             shape_key(downcast<ShapeExpr>(n->b)) + ")";
  }
}

struct Storage {
  std::optional<int64_t> bytes;  // constant size
  std::string key;               // symbolic size, compared by structure
  ShapeExpr size;
  size_t busy_until;
  int32_t device;
};

int64_t assign(std::vector<Storage>& storages, const Allocation& a, size_t start, size_t end) {
  ShapeExpr size = runtime::tensor_bytes(a.dtype, a.shape);
  std::optional<int64_t> bytes = size.as_constant();
  std::string key = bytes ? "" : shape_key(size);
  int best = -1;
  for (size_t i = 0; i < storages.size(); ++i) {
    const Storage& s = storages[i];
    if (s.busy_until >= start || s.device != a.device) continue;
    if (bytes && s.bytes) {
      // Best fit: the smallest that holds it, else the largest (grown).
      if (best < 0) {
        best = static_cast<int>(i);
        continue;
      }
      const Storage& b = storages[best];
      bool fits = *s.bytes >= *bytes, best_fits = *b.bytes >= *bytes;
      if ((fits && (!best_fits || *s.bytes < *b.bytes)) || (!fits && !best_fits && *s.bytes > *b.bytes)) {
        best = static_cast<int>(i);
      }
    } else if (!bytes && !s.bytes && s.key == key) {
      best = static_cast<int>(i);
      break;
    }
  }
  if (best < 0) {
    storages.push_back(Storage{bytes, key, size, end, a.device});
    return static_cast<int64_t>(storages.size() - 1);
  }
  Storage& s = storages[best];
  if (bytes && *bytes > *s.bytes) {
    s.bytes = bytes;
    s.size = size;
  }
  s.busy_until = end;
  return best;
}
}  // namespace

StoragePlan plan_storage(const std::vector<Instr>& code, int32_t num_registers,
                         const std::vector<Allocation>& allocations) {
  std::vector<int> parent(num_registers);
  std::iota(parent.begin(), parent.end(), 0);
  auto unite = [&](int a, int b) { parent[find(parent, a)] = find(parent, b); };
  for (const Instr& in : code) {
    if (in.op == runtime::kVMMove || in.op == runtime::kVMGetItem) unite(in.dst, in.a);
    if (in.op == runtime::kVMTuple || in.op == runtime::kVMCallGraph || in.op == runtime::kVMCallPacked)
      for (int32_t r : in.args) unite(in.dst, r);
  }
  std::vector<size_t> first(num_registers, SIZE_MAX), last(num_registers, 0);
  std::vector<bool> escapes(num_registers, false);
  auto touch = [&](int32_t r, size_t pos) {
    int c = find(parent, r);
    first[c] = std::min(first[c], pos);
    last[c] = std::max(last[c], pos);
  };
  for (size_t pos = 0; pos < code.size(); ++pos) {
    const Instr& in = code[pos];
    if (in.dst >= 0) touch(in.dst, pos);
    for (int32_t r : in.args) touch(r, pos);
    if (runtime::reads_register_a(in.op)) touch(in.a, pos);
    if (in.op == runtime::kVMRet) escapes[find(parent, in.a)] = true;
  }

  StoragePlan plan;
  std::vector<Storage> storages;
  for (const Allocation& a : allocations) {
    int c = find(parent, a.reg);
    plan.storage_of.push_back(escapes[c] || a.own ? -1 : assign(storages, a, first[c], last[c]));
  }
  for (const Storage& s : storages) {
    plan.storage_bytes.push_back(s.size);
    plan.storage_device.push_back(s.device);
  }
  return plan;
}

}  // namespace loom::driver::vm
