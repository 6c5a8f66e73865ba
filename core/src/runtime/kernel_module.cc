// Kernel modules: the kernel table, the checked call, and saving through
// the object serializer (loom/runtime/kernel_module.h).
#include "loom/runtime/kernel_module.h"

#include <set>

#include "loom/object/containers.h"
#include "loom/support/error.h"

namespace loom::runtime {

LOOM_REGISTER_OBJECT(BytesNode);
LOOM_REGISTER_OBJECT(KernelNode);
LOOM_REGISTER_OBJECT(KernelModuleNode);

namespace {
std::string bytes_of(const BytesNode& b) { return b.data; }
void set_bytes_of(BytesNode& b, const std::string& data) { b.data = data; }

// "opencl module" for "opencl.Module": how messages name a module kind.
std::string kind_of(const std::string& type_key) {
  size_t dot = type_key.find('.');
  return (dot == std::string::npos ? type_key : type_key.substr(0, dot)) + " module";
}
}  // namespace

void BytesNode::reflect(ReflectionBuilder<BytesNode>& r) { r.bytes(&bytes_of, &set_bytes_of); }

Bytes::Bytes(std::string data) {
  auto node = make_object<BytesNode>();
  node->data = std::move(data);
  data_ = std::move(node);
}

void KernelNode::reflect(ReflectionBuilder<KernelNode>& r) {
  r.field("name", &KernelNode::name, "the kernel's name, its function's")
      .field("args", &KernelNode::args, "each argument's kind after the launch sizes: buffer or a dtype")
      .elements<std::string>()
      .field("source", &KernelNode::source, "its text (GLSL, a disassembly), or empty")
      .field("binary", &KernelNode::binary, "its compiled code, or none", kOptional)
      .field("attrs", &KernelNode::attrs, "what else the backend keeps of it, by name");
}

Kernel::Kernel(std::string name, std::vector<std::string> args, std::string source, Bytes binary, Map attrs) {
  auto node = make_object<KernelNode>();
  node->name = std::move(name);
  node->args = Array(std::vector<Any>(args.begin(), args.end()));
  node->source = std::move(source);
  node->binary = std::move(binary);
  node->attrs = std::move(attrs);
  data_ = std::move(node);
}

std::vector<std::string> Kernel::arg_kinds() const {
  std::vector<std::string> out;
  for (const Any& a : get()->args) out.push_back(a.as_string());
  return out;
}

void KernelModuleNode::reflect(ReflectionBuilder<KernelModuleNode>& r) {
  r.field("kernels", &KernelModuleNode::kernels, "the kernel table").elements<Kernel>();
  r.field("launch_dims", &KernelModuleNode::launch_dims, "launch sizes before a kernel's arguments: 6 or 0")
      .field("device_id", &KernelModuleNode::device_id, "the device the kernels run on");
  r.structural(StructuralKind::kUnique);
}

// Every entry is a runtime.Kernel (check_kernels, which every module passes
// through before it runs: load and finish); this is on each launch's path.
const KernelNode& KernelModuleNode::kernel(size_t index) const {
  return *static_cast<const KernelNode*>(kernels[index].object());
}

std::vector<std::string> KernelModuleNode::function_names() const {
  std::vector<std::string> out;
  for (size_t k = 0; k < kernels.size(); ++k) out.push_back(kernel(k).name);
  return out;
}

std::optional<Function> KernelModuleNode::own_function(const std::string& name) const {
  for (size_t k = 0; k < kernels.size(); ++k) {
    if (kernel(k).name != name) continue;
    ObjectRef self(ObjectPtr<Object>(const_cast<KernelModuleNode*>(this)));
    return Function(
        [self, k](const Any* args, int32_t count) -> Any {
          const auto* m = static_cast<const KernelModuleNode*>(self.get());
          const KernelNode& kernel = m->kernel(k);
          size_t dims = static_cast<size_t>(m->launch_dims);
          if (count < 0 || static_cast<size_t>(count) != dims + kernel.args.size()) {
            LOOM_THROW(TypeError) << kind_of(m->Object::type_key()) << ": kernel '" << kernel.name << "' takes "
                                  << (dims ? std::to_string(dims) + " launch sizes and " : "") << kernel.args.size()
                                  << " arguments, got " << count << " values";
          }
          LaunchSizes sizes;
          for (size_t d = 0; d < dims / 2; ++d) {
            int64_t grid = args[d].as_int(), block = args[3 + d].as_int();
            if (grid < 0 || block < 1) {
              LOOM_THROW(Error) << kind_of(m->Object::type_key()) << ": kernel '" << kernel.name
                                << "': launch sizes must be positive (grid " << grid << ", block " << block << ")";
            }
            if (grid == 0) return Any();  // no work (an empty tensor)
            sizes.grid[d] = grid;
            sizes.block[d] = block;
          }
          m->launch(k, sizes, args + dims);
          return Any();
        },
        name);
  }
  return std::nullopt;
}

std::string KernelModuleNode::save_to_binary() const {
  return save_binary(Any(ObjectRef(ObjectPtr<Object>(const_cast<KernelModuleNode*>(this)))));
}

void KernelModuleNode::check_kernels() const {
  std::string kind = kind_of(Object::type_key());
  if (launch_dims != 0 && launch_dims != 6) {
    LOOM_THROW(Error) << kind << ": launch_dims is " << launch_dims << "; a kernel module's is 6 or 0";
  }
  if (device_id < 0) LOOM_THROW(Error) << kind << ": device " << device_id << " is not a device index";
  std::set<std::string> seen;
  for (size_t k = 0; k < kernels.size(); ++k) {
    const Object* object = kernels[k].object();
    if (!object || !object->is_instance<KernelNode>()) {
      LOOM_THROW(Error) << kind << ": kernel " << k << " is " << kernels[k].describe() << ", not a runtime.Kernel";
    }
    const KernelNode& kernel = this->kernel(k);
    if (kernel.name.empty()) LOOM_THROW(Error) << kind << ": kernel " << k << " has no name";
    if (!seen.insert(kernel.name).second)
      LOOM_THROW(Error) << kind << ": two kernels are named '" << kernel.name << "'";
    for (size_t i = 0; i < kernel.args.size(); ++i) {
      if (kernel.args[i].kind() != AnyKind::kStr) {
        LOOM_THROW(Error) << kind << ": kernel '" << kernel.name << "': argument " << i << " has the kind "
                          << kernel.args[i].describe() << ", not a string";
      }
      const std::string& a = kernel.args[i].as_string();
      if (a == "buffer") continue;
      try {
        (void)DataType::parse(a);
      } catch (const Error&) {
        LOOM_THROW(Error) << kind << ": kernel '" << kernel.name << "': argument " << i << " has the kind '" << a
                          << "', neither buffer nor a dtype";
      }
    }
  }
}

Any KernelModuleNode::read(const std::string& bytes, const std::string& type_key) {
  std::string kind = kind_of(type_key);
  if (!is_binary_document(bytes)) {
    LOOM_THROW(Error) << kind << ": the saved bytes are not a kernel module (" << bytes.size()
                      << " bytes; saved by an earlier Loom in a format of its own, or not a module: build the "
                         "library again)";
  }
  Any root;
  try {
    root = load_binary(bytes, kind);
  } catch (const Error& e) {
    LOOM_THROW(Error) << kind << ": corrupted bytes: " << e.what();
  }
  const Object* object = root.object();
  if (!object || object->type_key() != type_key) {
    LOOM_THROW(Error) << kind << ": the saved bytes hold " << root.describe() << ", not a " << type_key;
  }
  return root;
}

}  // namespace loom::runtime
