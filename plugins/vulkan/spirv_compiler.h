// The shader compiler of the vulkan plugin's compiler half
// (docs/target-vulkan.md): libshaderc and SPIRV-Tools.  Only
// spirv_compiler.cc includes their headers.
#ifndef LOOM_PLUGINS_VULKAN_SPIRV_COMPILER_H_
#define LOOM_PLUGINS_VULKAN_SPIRV_COMPILER_H_

#include <string>
#include <vector>

#include "glsl_printer.h"

namespace loom::vulkan {

// GLSL -> SPIR-V (libshaderc), checked by SPIRV-Tools' validator: fills
// kernel.spirv; Error naming the kernel, with the compiler's or the
// validator's message.
void compile(Kernel& kernel);
// SPIR-V as text (SPIRV-Tools' disassembler), for the functions below.
std::string disassemble(const std::vector<uint32_t>& words);
// Assembles SPIR-V text and validates it as compile() does: Error naming
// the kernel and the assembler's line or the validator's message.
void validate_assembly(const std::string& name, const std::string& assembly);

}  // namespace loom::vulkan

#endif  // LOOM_PLUGINS_VULKAN_SPIRV_COMPILER_H_
