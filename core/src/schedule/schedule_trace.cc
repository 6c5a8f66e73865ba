// A Schedule's trace (loom/schedule/schedule.h, docs/tuning.md "Traces"): the
// steps as JSON, and their replay, each step checked and applied by the
// primitive it names.  Steps are recorded by Schedule::Recorder
// (schedule_internal.h), which each primitive holds while it runs.
#include "loom/schedule/schedule.h"

#include "loom/support/strings.h"
#include "loom/tir/layout.h"

namespace loom::tir {

std::string Schedule::trace_json() const {
  JsonValue steps;
  steps.kind = JsonValue::Kind::kArray;
  steps.array = trace_;
  return to_json(steps);
}

namespace {
// The arguments of one trace step, read by position with their types
// checked (a ScheduleError naming the primitive and the argument).
class StepArgs {
 public:
  StepArgs(const JsonValue& step, const std::string& primitive) : step_(step), primitive_(primitive) {}
  const std::string& str(size_t k) const { return expect(k, JsonValue::Kind::kString, "a string").string; }
  int64_t integer(size_t k) const { return expect(k, JsonValue::Kind::kInt, "an integer").integer; }
  std::vector<std::string> names(size_t k) const {
    std::vector<std::string> out;
    for (const JsonValue& n : expect(k, JsonValue::Kind::kArray, "a list of names").array) {
      if (n.kind != JsonValue::Kind::kString) fail(k, "a list of names");
      out.push_back(n.string);
    }
    return out;
  }
  // A layout's text, applied to the buffer's indices (its rank is theirs).
  Schedule::IndexMap layout(size_t k) const {
    return [text = str(k)](const std::vector<PrimExpr>& indices) {
      Layout parsed;
      try {
        parsed = parse_layout(text, indices.size());
      } catch (const Error& e) {
        throw ScheduleError(e.what());
      }
      return apply_layout(parsed, indices);
    };
  }

 private:
  const JsonValue& expect(size_t k, JsonValue::Kind kind, const char* what) const {
    const JsonValue& v = step_.array[k];
    if (v.kind != kind) fail(k, std::string(what) + ", got " + v.kind_name());
    return v;
  }
  [[noreturn]] void fail(size_t k, const std::string& what) const {
    throw ScheduleError(primitive_ + ": argument " + std::to_string(k) + " must be " + what);
  }
  const JsonValue& step_;
  const std::string& primitive_;
};

// Every primitive a trace may name: its arguments after the name, and the call.
struct TracePrimitive {
  const char* name;
  size_t arity;
  void (*apply)(Schedule& s, const StepArgs& a);
};
const TracePrimitive kTracePrimitives[] = {
    {"split", 2, [](Schedule& s, const StepArgs& a) { s.split(a.str(1), a.integer(2)); }},
    {"partition", 2, [](Schedule& s, const StepArgs& a) { s.partition(a.str(1), a.integer(2)); }},
    {"fuse", 2, [](Schedule& s, const StepArgs& a) { s.fuse(a.str(1), a.str(2)); }},
    {"reorder", 1, [](Schedule& s, const StepArgs& a) { s.reorder(a.names(1)); }},
    {"parallel", 1, [](Schedule& s, const StepArgs& a) { s.parallel(a.str(1)); }},
    {"vectorize", 1, [](Schedule& s, const StepArgs& a) { s.vectorize(a.str(1)); }},
    {"unroll", 1, [](Schedule& s, const StepArgs& a) { s.unroll(a.str(1)); }},
    {"bind", 2, [](Schedule& s, const StepArgs& a) { s.bind(a.str(1), a.str(2)); }},
    {"decompose_reduction", 1, [](Schedule& s, const StepArgs& a) { s.decompose_reduction(a.str(1)); }},
    {"compute_inline", 1, [](Schedule& s, const StepArgs& a) { s.compute_inline(a.str(1)); }},
    {"reverse_compute_inline", 1, [](Schedule& s, const StepArgs& a) { s.reverse_compute_inline(a.str(1)); }},
    {"cache_read", 3, [](Schedule& s, const StepArgs& a) { s.cache_read(a.str(1), a.layout(2), a.str(3)); }},
    {"transform_layout", 2, [](Schedule& s, const StepArgs& a) { s.transform_layout(a.str(1), a.layout(2)); }},
    {"cache_write", 2, [](Schedule& s, const StepArgs& a) { s.cache_write(a.str(1), a.str(2)); }},
    {"compute_at", 2, [](Schedule& s, const StepArgs& a) { s.compute_at(a.str(1), a.str(2)); }},
    {"allocate_at", 2, [](Schedule& s, const StepArgs& a) { s.allocate_at(a.str(1), a.str(2)); }},
    {"rfactor", 1, [](Schedule& s, const StepArgs& a) { s.rfactor(a.str(1)); }},
};
}  // namespace

void Schedule::apply(const JsonValue& step) {
  if (step.kind != JsonValue::Kind::kArray || step.array.empty() || step.array[0].kind != JsonValue::Kind::kString)
    throw ScheduleError("a trace step is an array [primitive, arguments...], got " + std::string(step.kind_name()));
  const std::string& primitive = step.array[0].string;
  std::vector<std::string> known;
  for (const TracePrimitive& p : kTracePrimitives) {
    known.push_back(p.name);
    if (primitive != p.name) continue;
    size_t given = step.array.size() - 1;
    if (given != p.arity) {
      throw ScheduleError(primitive + " takes " + std::to_string(p.arity) + " arguments in a trace, got " +
                          std::to_string(given));
    }
    p.apply(*this, StepArgs(step, primitive));
    return;
  }
  throw ScheduleError("'" + primitive + "' is not a schedule primitive" + did_you_mean(primitive, known));
}

Schedule Schedule::replay(PrimFunc func, const std::string& trace) {
  JsonValue steps = parse_json(trace, "<trace>");
  if (steps.kind != JsonValue::Kind::kArray)
    throw ScheduleError(std::string("a trace is a JSON array of steps, got ") + steps.kind_name());
  Schedule s(std::move(func));
  for (size_t k = 0; k < steps.array.size(); ++k) {
    try {
      s.apply(steps.array[k]);
    } catch (const ScheduleError& e) {
      throw ScheduleError("step " + std::to_string(k + 1) + " of the trace: " + e.what());
    }
  }
  return s;
}

}  // namespace loom::tir
