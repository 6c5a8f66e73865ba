// The null plugin: the smallest plugin that provides a target.  Its target
// kind "null_target" generates nothing; it exists so that discovery, lazy loading by
// capability, target validation and the C0/C1 rules (a pipeline option, C0,
// that contradicts a target constraint, C1) are exercised without a
// real backend (the kind is not called "null": YAML reads that as no value).
// It has no vector unit, so 'tir.vectorize: true' against it
// is overridden with a warning; its tag null_wide has one.
#include <loom/plugin_sdk.h>
#include <loom/runtime/thread_pool.h>
#include <loom/target/target.h>

LOOM_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("null") LOOM_PLUGIN_VERSION("1.0.0")
                         LOOM_PLUGIN_DESCRIPTION("The null target: generates nothing; for tests and dispatch"));

LOOM_PLUGIN_INIT(ctx) {
  loom::target::TargetTraits traits;
  traits.vector_bits = loom::target::TargetTraits::vector_bits_from_attr("vector-bits");
  traits.threads_attr = "num-threads";
  loom::target::TargetKindRegistry::register_kind(
      loom::target::TargetKindEntry::named("null_target")
          .attrs(
              {loom::SchemaField{"num-threads", "int", int64_t{1}, "threads (only checked, nothing runs)"}.between(
                   0, loom::runtime::kMaxThreads),
               loom::SchemaField{"vector-bits", "int", int64_t{0}, "vector width; 0: no vector unit"}.between(0, 512)})

          .doc("a target that generates nothing")
          .traits(traits));
  // A tag: a named preset of the kind's attributes (target: {tag: null_wide}).
  loom::target::TargetTagRegistry::register_tag(
      loom::target::TargetTag{"null_wide", "null_target", loom::Map({{"vector-bits", loom::Any(int64_t{512})}}),
                              "the null target with a 512-bit vector unit", ""});
}
