// The only interface to libtorch (docs/extern-torchscript.md): a loaded
// TorchScript module, its methods' schemas, and a call.  Only
// torch_runner.cc includes libtorch's headers (about 12 s and 0.7 GB to
// compile), so the rest of the plugin builds like any other.
#ifndef LOOM_PLUGINS_TORCHSCRIPT_TORCH_RUNNER_H_
#define LOOM_PLUGINS_TORCHSCRIPT_TORCH_RUNNER_H_

#include <dlpack/dlpack.h>

#include <memory>
#include <string>
#include <vector>

#include <loom/object/any.h>

namespace loom::torchscript {

// One argument or result of a method's schema.
struct SchemaValue {
  std::string name;  // the argument's name; "" for a result
  std::string type;  // TorchScript's spelling: Tensor, int, List[Tensor], ...
  bool tensor = false;
};

struct Schema {
  std::vector<SchemaValue> arguments;  // without self
  std::vector<SchemaValue> results;    // a tuple's fields, one by one
};

class Script {
 public:
  // Loads torch.jit.save's bytes; Error with libtorch's reason.
  explicit Script(const std::string& bytes);
  ~Script();
  Script(const Script&) = delete;
  Script& operator=(const Script&) = delete;

  std::vector<std::string> method_names() const;
  // Error naming the module's methods when it has no such method.
  Schema schema(const std::string& method) const;
  // Runs `method` on `inputs` (CPU, compact; wrapped without a copy) and
  // writes its results into `outputs` (one copy each), after checking each
  // result's dtype and shape against its output; Error naming the output,
  // or libtorch's message.
  void run(const std::string& method, const std::vector<const DLTensor*>& inputs,
           const std::vector<const DLTensor*>& outputs) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace loom::torchscript

#endif  // LOOM_PLUGINS_TORCHSCRIPT_TORCH_RUNNER_H_
