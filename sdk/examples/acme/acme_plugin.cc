// The Acme plugin: its init registers every extension point of the
// compiler a backend has (docs/plugins.md, "Write a backend"), each in its
// own file:
//   the operator acme.swish (type rule, lowering) ...... swish.cc
//   the pass AcmeFuseSwish ............................. swish.cc
//   the target kind acme (attributes, traits, pipeline)  here
//   the pattern table acme (what partitioning gives it)  here
//   the codegen acme, derived from the C codegen ....... codegen.cc
// What runs a built model (the device acme, the runtime module acme and
// its loader) is the plugin acme_runtime (acme_runtime_plugin.cc), which
// this one requires.
#include <loom/graph/pattern_table.h>
#include <loom/plugin_sdk.h>
#include <loom/runtime/module.h>
#include <loom/target/c_source.h>
#include <loom/target/codegen.h>
#include <loom/target/target.h>

#include "acme.h"

LOOM_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("acme") LOOM_PLUGIN_VERSION("1.0.0")
                         LOOM_PLUGIN_DESCRIPTION("Acme DSP: an example backend using every extension point; "
                                                 "its runtime is the plugin acme_runtime")
                             LOOM_PLUGIN_REQUIRES("acme_runtime"));

LOOM_PLUGIN_INIT(ctx) {
  using loom::Function;
  acme::register_swish();

  // The target kind: its attributes (checked in YAML at file:line:col),
  // what the core's passes may assume of it (traits), and the pipeline a
  // config without pipeline.passes runs.
  loom::target::TargetTraits traits;
  traits.vector_bits = [](const loom::target::Target&) -> int64_t { return 0; };  // scalar C
  traits.native_intrinsics = loom::target::CSourcePrinter::intrinsics();
  traits.threads_attr = "num-threads";
  traits.default_pipeline = {"AcmeFuseSwish", "cpu"};
  traits.codegen_needs = {"intrinsics_lowered"};
  loom::target::TargetKindRegistry::register_kind(
      loom::target::TargetKindEntry::named("acme")
          .attrs({{"cflags", "str", std::string("-O2"), "flags for Acme's C compiler (the system compiler here)"},
                  loom::SchemaField{"num-threads", "int", int64_t{1}, "DSP cores for parallel loops"}.between(1, 64)})
          .doc("the Acme DSP: C compiled by its compiler")
          .traits(traits));

  // A tag: a named preset of the kind's attributes, for the boards that
  // have four DSP cores (target: {tag: acme_quad}; `loomc targets list`).
  loom::target::TargetTagRegistry::register_tag(
      loom::target::TargetTag{"acme_quad", "acme", loom::Map({{"num-threads", loom::Any(int64_t{4})}}),
                              "an Acme board with four DSP cores", ""});

  // The pattern table: what partitioning gives acme when a model is built
  // for a CPU (target: {kind: llvm, partition: [acme]}): its swish, and
  // the float32 elementwise work around it.  Its codegen gets each region.
  using loom::graph::op;
  using loom::graph::wildcard;
  auto float32 = [](loom::graph::Pattern p) { return p.has_dtype(loom::DataType::Float(32)); };
  loom::graph::PatternTableRegistry::register_table(
      "acme", {{"acme.swish", float32(op("acme.swish", {wildcard()})), nullptr},
               {"acme.sigmoid", float32(op("sigmoid", {wildcard()})), nullptr},
               {"acme.multiply", float32(op("multiply", {wildcard(), wildcard()})), nullptr},
               {"acme.add", float32(op("add", {wildcard(), wildcard()})), nullptr}});

  // The codegen; its modules are made by acme_runtime.
  loom::target::CodegenRegistry::register_codegen(
      "acme", Function::typed([](loom::ir::IRModule m, loom::target::Target t) { return acme::codegen(m, t); },
                              "acme.codegen"));
}
