// GLSL -> SPIR-V in process with libshaderc (the static shaderc_combined:
// Debian's shared libshaderc leaves glslang's and SPIRV-Tools' symbols
// undefined), then SPIRV-Tools' validator for the Vulkan 1.2 environment,
// so a module the driver would reject is an error at build time.
#include <shaderc/shaderc.h>
#include <spirv-tools/libspirv.h>

#include <loom/support/error.h>

#include <cstring>

#include "spirv_compiler.h"

namespace loom::vulkan {

namespace {
// SPIRV-Tools' validator for Vulkan 1.2 on `words`: Error naming the kernel
// and the validator's message (which quotes the offending instruction).
void validate(const std::string& name, const std::vector<uint32_t>& words) {
  spv_context context = spvContextCreate(SPV_ENV_VULKAN_1_2);
  spv_const_binary_t binary{words.data(), words.size()};
  spv_diagnostic diagnostic = nullptr;
  spv_result_t valid = spvValidate(context, &binary, &diagnostic);
  std::string why = diagnostic && diagnostic->error ? diagnostic->error : "";
  spvDiagnosticDestroy(diagnostic);
  spvContextDestroy(context);
  if (valid != SPV_SUCCESS) {
    while (!why.empty() && why.back() == '\n') why.pop_back();
    LOOM_THROW(Error) << "vulkan: kernel '" << name
                      << "' (an IR function of that name): its SPIR-V fails validation: " << why;
  }
}
}  // namespace

void compile(Kernel& kernel) {
  shaderc_compiler_t compiler = shaderc_compiler_initialize();
  shaderc_compile_options_t options = shaderc_compile_options_initialize();
  shaderc_compile_options_set_target_env(options, shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_2);
  shaderc_compile_options_set_optimization_level(options, shaderc_optimization_level_performance);
  std::string file = kernel.name + ".comp";
  shaderc_compilation_result_t result = shaderc_compile_into_spv(compiler, kernel.glsl.data(), kernel.glsl.size(),
                                                                 shaderc_compute_shader, file.c_str(), "main", options);
  bool ok = shaderc_result_get_compilation_status(result) == shaderc_compilation_status_success;
  std::string message = ok ? "" : shaderc_result_get_error_message(result);
  if (ok) {
    size_t bytes = shaderc_result_get_length(result);
    kernel.spirv.resize(bytes / 4);
    std::memcpy(kernel.spirv.data(), shaderc_result_get_bytes(result), kernel.spirv.size() * 4);
  }
  shaderc_result_release(result);
  shaderc_compile_options_release(options);
  shaderc_compiler_release(compiler);
  if (!ok) {
    while (!message.empty() && message.back() == '\n') message.pop_back();
    LOOM_THROW(Error) << "vulkan: kernel '" << kernel.name
                      << "' (an IR function of that name) does not compile as GLSL (" << file
                      << ":LINE is a line of inspect_source(\"glsl\")):\n"
                      << message;
  }
  validate(kernel.name, kernel.spirv);
}

std::string disassemble(const std::vector<uint32_t>& words) {
  spv_context context = spvContextCreate(SPV_ENV_VULKAN_1_2);
  spv_text text = nullptr;
  spv_diagnostic diagnostic = nullptr;
  spv_result_t done =
      spvBinaryToText(context, words.data(), words.size(), SPV_BINARY_TO_TEXT_OPTION_NONE, &text, &diagnostic);
  std::string out = done == SPV_SUCCESS ? std::string(text->str, text->length) : "";
  std::string why = diagnostic && diagnostic->error ? diagnostic->error : "";
  spvTextDestroy(text);
  spvDiagnosticDestroy(diagnostic);
  spvContextDestroy(context);
  if (done != SPV_SUCCESS) LOOM_THROW(Error) << "vulkan: SPIR-V that does not disassemble: " << why;
  return out;
}

void validate_assembly(const std::string& name, const std::string& assembly) {
  spv_context context = spvContextCreate(SPV_ENV_VULKAN_1_2);
  spv_binary binary = nullptr;
  spv_diagnostic diagnostic = nullptr;
  spv_result_t done = spvTextToBinary(context, assembly.data(), assembly.size(), &binary, &diagnostic);
  std::vector<uint32_t> words = done == SPV_SUCCESS
                                    ? std::vector<uint32_t>(binary->code, binary->code + binary->wordCount)
                                    : std::vector<uint32_t>();
  std::string why = diagnostic && diagnostic->error ? diagnostic->error : "";
  size_t line = diagnostic ? diagnostic->position.line + 1 : 0;
  spvBinaryDestroy(binary);
  spvDiagnosticDestroy(diagnostic);
  spvContextDestroy(context);
  if (done != SPV_SUCCESS) {
    LOOM_THROW(Error) << "vulkan: kernel '" << name << "': line " << line << " of its SPIR-V assembly: " << why;
  }
  validate(name, words);
}

}  // namespace loom::vulkan
