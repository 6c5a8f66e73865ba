#include "graph_util.h"

#include <unordered_set>
#include <vector>

#include "loom/ir/op.h"
#include "loom/support/stack.h"

namespace loom::passes {

FunctionNames::FunctionNames(const ir::IRModule& module) {
  for (const std::string& name : module.names()) taken_.insert(name);
}

std::string FunctionNames::fresh(const std::string& hint) {
  std::string base = hint;
  for (char& c : base)
    if (c == '.') c = '_';
  std::string name = base;
  int64_t& k = next_suffix_[base];  // the suffixes below it are taken: linear over many fresh names
  while (taken_.count(name)) name = base + "_" + std::to_string(++k);
  taken_.insert(name);
  return name;
}

}  // namespace loom::passes
