#include "loom/transform/infer_type.h"

#include "loom/graph/type_infer.h"
#include "loom/transform/property.h"

namespace loom::transform {

Pass InferType() {
  return module_pass(PassInfo::named("InferType")
                         .summary("infer the types of graph expressions and function results")
                         .establishes({property::kTypesInferred})
                         .preserves({property::kAll}),
                     [](const IRModule& module, const PassContext&) {
                       std::vector<ir::Diagnostic> problems;
                       IRModule typed = graph::infer_types(module, &problems);
                       if (!problems.empty()) {
                         std::string message = "type inference failed:";
                         for (const auto& d : problems) message += "\n  " + d.to_string();
                         throw TypeInferenceError(message);
                       }
                       return typed;
                     });
}

namespace {
const bool registered = [] {
  PassRegistry::register_pass(InferType());
  return true;
}();
}  // namespace

}  // namespace loom::transform
