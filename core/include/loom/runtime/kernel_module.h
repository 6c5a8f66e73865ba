// Kernel modules (docs/runtime.md, "Kernel modules"): the one base of the
// runtime modules whose functions are kernels a backend launches on its
// device (opencl, vulkan, npu, the SDK's acme).  The base holds the kernel
// table (each kernel's name, argument kinds and code), the launch sizes
// that come before a kernel's arguments, and the device; it checks every
// call's argument count and launch sizes, and it saves the module, the
// backend's own reflected fields included, through the object serializer's
// binary form (loom/object/serialization.h), so a backend writes no binary
// format and no field parser of its own, and a corrupted payload is a Loom
// Error naming the module kind.
#ifndef LOOM_RUNTIME_KERNEL_MODULE_H_
#define LOOM_RUNTIME_KERNEL_MODULE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "loom/object/serialization.h"
#include "loom/runtime/module.h"

namespace loom::runtime {

// Raw bytes as an object (compiled code: a program binary, SPIR-V, a
// command stream, an object file): the serializer's binary form stores them
// in its blob section, as they are.
class BytesNode : public Object {
 public:
  std::string data;
  LOOM_OBJECT(BytesNode, Object, "runtime.Bytes");
  static void reflect(ReflectionBuilder<BytesNode>& r);
};
class Bytes : public ObjectRef {
 public:
  LOOM_OBJECT_REF(Bytes, ObjectRef, BytesNode)
  explicit Bytes(std::string data);
  const std::string& data() const { return get()->data; }
};

// One kernel: its name, the kind of each argument after the launch sizes
// ("buffer", or a scalar's dtype such as "int64"), and its code as the
// backend keeps it: `source` (text: GLSL, a disassembly; "" when the
// module's own source holds it), `binary` (none or compiled code) and
// `attrs` (anything else, by name: the npu's DPS signature).
class KernelNode : public Object {
 public:
  std::string name;
  Array args;
  std::string source;
  Bytes binary;
  Map attrs = Map::empty();
  LOOM_OBJECT(KernelNode, Object, "runtime.Kernel");
  static void reflect(ReflectionBuilder<KernelNode>& r);
};
class Kernel : public ObjectRef {
 public:
  LOOM_OBJECT_REF(Kernel, ObjectRef, KernelNode)
  Kernel(std::string name, std::vector<std::string> args, std::string source = "", Bytes binary = Bytes(),
         Map attrs = Map::empty());
  // The argument kinds as strings.
  std::vector<std::string> arg_kinds() const;
};

// The launch sizes of a kernel call with launch_dims == 6: a grid of
// blocks, each of `block` threads, per axis (all at least 1).
struct LaunchSizes {
  int64_t grid[3] = {1, 1, 1};
  int64_t block[3] = {1, 1, 1};
};

class KernelModuleNode : public ModuleNode {
 public:
  Array kernels;            // of runtime.Kernel, names unique
  int64_t launch_dims = 6;  // 6 (grid x, y, z, block x, y, z) or 0 (none)
  int64_t device_id = 0;    // the backend's device index

  std::vector<std::string> function_names() const override;
  // A kernel's function: (launch sizes..., arguments...).  The count is
  // checked (TypeError naming the kernel), then the sizes (an Error for a
  // block under 1 or a grid under 0); a grid of 0 is no work.
  std::optional<Function> own_function(const std::string& name) const override;
  // The module, its subclass's fields included, in the serializer's binary
  // form.
  std::string save_to_binary() const override;

  const KernelNode& kernel(size_t index) const;

  // A loader body: `bytes` read back as a T (the serializer's checks: an
  // Error, never a crash, for anything malformed), the kernel table checked
  // (check_kernels), restore() called.  Errors name T's type key.
  template <class T>
  static Module load(const std::string& bytes) {
    return finish(read_as<T>(bytes));
  }
  // Registers T's object type and the loader of module kind `kind`
  // (load<T>): all a runtime half's init does for its module kind.
  template <class T>
  static void register_loader(const std::string& kind) {
    (void)T::runtime_type_index();
    ModuleLoaderRegistry::register_loader(
        kind, Function::typed([](std::string bytes) { return load<T>(bytes); }, kind + ".load"));
  }
  // A module a backend made in process (its make_module): checked and
  // restored as a loaded one is.
  template <class T>
  static Module finish(ObjectPtr<T> node) {
    node->check_kernels();
    node->restore();
    return Module(node);
  }

  // Checks what any kernel table must be: launch_dims 0 or 6, names
  // non-empty and unique, each argument kind "buffer" or a dtype; Error
  // naming the module kind and the kernel.  make_module functions call it
  // too.
  void check_kernels() const;

  LOOM_ABSTRACT_OBJECT(KernelModuleNode, ModuleNode, "runtime.KernelModule");
  static void reflect(ReflectionBuilder<KernelModuleNode>& r);

 protected:
  // Runs kernel `index` with its checked launch sizes (all 1 when
  // launch_dims is 0) on `args`, exactly kernel(index).args.size() values.
  virtual void launch(size_t index, const LaunchSizes& sizes, const Any* args) const = 0;
  // Makes a loaded module ready to run (a program built, a stream
  // decoded); nothing by default.  An Error here fails the load.
  virtual void restore() {}

 private:
  template <class T>
  static ObjectPtr<T> read_as(const std::string& bytes) {
    (void)T::runtime_type_index();  // known to the serializer by its key
    Any root = read(bytes, T::_type_key);
    auto* node = const_cast<T*>(static_cast<const T*>(root.object()));
    if (!node) LOOM_THROW(Error) << T::_type_key << ": nothing loaded";  // read() checked the type
    return ObjectPtr<T>(node);
  }
  // The object `bytes` hold, checked to be exactly of `type_key`.
  static Any read(const std::string& bytes, const std::string& type_key);
};

}  // namespace loom::runtime

#endif  // LOOM_RUNTIME_KERNEL_MODULE_H_
