// Tuning's C++ side (docs/tuning.md): see tuning.h.
#include "tuning.h"

#include <loom/graph/calls.h>
#include <loom/ir/expr.h>
#include <loom/text/text.h>
#include <loom/object/function.h>
#include <loom/object/structural.h>
#include <loom/object/traversal.h>
#include <loom/support/json.h>
#include <loom/support/strings.h>
#include <loom/target/target.h>
#include <loom/tir/functor.h>
#include <loom/tir/layout.h>
#include <loom/schedule/schedule.h>
#include <loom/tir/util.h>

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>

#include "auto_schedule.h"

namespace loom::loop {

using namespace tir;  // NOLINT: the prim IR reads best unqualified here

namespace {
constexpr int kFormat = 1;  // the database's record format

std::string hex16(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

uint64_t fnv1a(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }
}  // namespace

PrimFunc canonical_task(const PrimFunc& f, std::string* hash) {
  PrimFunc bare(std::vector<Any>(f->params.begin(), f->params.end()), f->body, f->ret);
  std::string text = text::print_module(ir::IRModule({{"task", Any(bare)}}));
  // %name tokens (variables and buffers; the printer made them unique)
  // renamed in order of first appearance; a lone % is the modulo operator.
  std::map<std::string, std::string> names;
  std::string out;
  out.reserve(text.size());
  bool quoted = false;
  for (size_t k = 0; k < text.size();) {
    char c = text[k];
    if (c == '"' && (k == 0 || text[k - 1] != '\\')) quoted = !quoted;
    if (c != '%' || quoted) {
      out += c;
      ++k;
      continue;
    }
    size_t end = k + 1;
    while (end < text.size() && name_char(text[end])) ++end;
    if (end == k + 1) {  // the modulo operator, not a name
      out += c;
      ++k;
      continue;
    }
    std::string name = text.substr(k + 1, end - k - 1);
    auto [it, fresh] = names.emplace(name, "v" + std::to_string(names.size()));
    out += "%" + it->second;
    k = end;
  }
  if (hash) *hash = hex16(fnv1a(out));
  ir::IRModule parsed = text::parse_module(out, "<task>");
  return downcast<PrimFunc>(parsed.lookup("task"));
}

std::string target_key(const Any& target) { return target.is_none() ? "none" : repr(target); }

// ---------------------------------------------------------------------------
// The database
// ---------------------------------------------------------------------------

std::shared_ptr<const TuningDatabase> TuningDatabase::open(const std::string& path) {
  struct Cached {
    off_t size;
    int64_t mtime_ns;
    std::shared_ptr<const TuningDatabase> db;
  };
  static std::mutex mutex;
  static std::map<std::string, Cached> cache;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) LOOM_THROW(Error) << "tuning database '" << path << "': no such file";
  int64_t mtime = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(path);
  if (it != cache.end() && it->second.size == st.st_size && it->second.mtime_ns == mtime) return it->second.db;
  std::ifstream in(path);
  if (!in) LOOM_THROW(Error) << "tuning database '" << path << "': cannot be read";
  auto db = std::make_shared<TuningDatabase>();
  db->path_ = path;
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (trim(line).empty()) continue;
    std::string where = path + ":" + std::to_string(line_no);
    try {
      JsonValue v;
      try {
        v = parse_json(line, path);
      } catch (const ParseError& e) {
        // "PATH:1:COL: why" (the line alone) -> "PATH:LINE:COL: why".
        std::string why = e.what();
        std::string first = path + ":1:";
        throw Error(why.rfind(first, 0) == 0 ? where + ":" + why.substr(first.size()) : why);
      }
      if (v.kind != JsonValue::Kind::kObject)
        throw Error("a record is a JSON object, got " + std::string(v.kind_name()));
      auto field = [&](const char* key, JsonValue::Kind kind) -> const JsonValue* {
        const JsonValue* f = v.find(key);
        if (!f) return nullptr;
        bool ok = f->kind == kind || (kind == JsonValue::Kind::kFloat && f->kind == JsonValue::Kind::kInt);
        if (!ok)
          throw Error(std::string("field '") + key + "' must be a " +
                      (kind == JsonValue::Kind::kString  ? "string"
                       : kind == JsonValue::Kind::kArray ? "list"
                                                         : "number") +
                      ", got " + f->kind_name());
        return f;
      };
      const JsonValue* format = field("format", JsonValue::Kind::kFloat);
      if (!format) throw Error("the record has no 'format'");
      if (format->kind != JsonValue::Kind::kInt || format->integer != kFormat)
        throw Error("format " +
                    std::string(format->kind == JsonValue::Kind::kInt ? std::to_string(format->integer) : "?") +
                    " is not this Loom's record format (" + std::to_string(kFormat) + ")");
      TuningRecord r;
      r.line = line_no;
      for (auto [key, dest] :
           {std::pair<const char*, std::string*>{"task", &r.task}, {"target", &r.target}, {"cpu", &r.cpu}}) {
        const JsonValue* f = field(key, JsonValue::Kind::kString);
        if (!f) throw Error(std::string("the record has no '") + key + "'");
        *dest = f->string;
      }
      const JsonValue* trace = field("trace", JsonValue::Kind::kArray);
      if (!trace) throw Error("the record has no 'trace'");
      r.trace = to_json(*trace);  // kept as text, replayed on the task's function
      const JsonValue* error = v.find("error");
      const JsonValue* median = field("median_us", JsonValue::Kind::kFloat);
      if (!median && !error) throw Error("the record has neither 'median_us' nor 'error'");
      if (median) {
        r.median_us = median->kind == JsonValue::Kind::kInt ? static_cast<double>(median->integer) : median->number;
        if (!(r.median_us > 0) || !std::isfinite(r.median_us))
          throw Error("median_us must be a positive time, got " + std::to_string(r.median_us));
      } else {
        r.median_us = -1;  // a failed candidate: never applied
      }
      db->records_.push_back(std::move(r));
    } catch (const Error& e) {
      std::string why = e.what();
      if (why.rfind(where, 0) != 0) why = where + ": " + why;
      db->warnings_.push_back(why + "; the record is skipped");
    }
  }
  for (const std::string& w : db->warnings_) std::fprintf(stderr, "loom: warning: tuning database %s\n", w.c_str());
  cache[path] = Cached{st.st_size, mtime, db};
  return db;
}

std::vector<const TuningRecord*> TuningDatabase::best(const std::string& task, const std::string& target,
                                                      const std::string& cpu) const {
  // A trace measured more than once (a search measures its best again)
  // counts with the median of its times, so one lucky timing does not
  // decide; its first record stands for it.
  std::map<std::string, std::vector<const TuningRecord*>> by_trace;
  std::vector<std::string> order;
  for (const TuningRecord& r : records_) {
    if (!(r.median_us > 0 && r.task == task && r.target == target && r.cpu == cpu)) continue;
    auto& list = by_trace[r.trace];
    if (list.empty()) order.push_back(r.trace);
    list.push_back(&r);
  }
  std::vector<std::pair<double, const TuningRecord*>> ranked;
  for (const std::string& trace : order) {
    std::vector<double> times;
    for (const TuningRecord* r : by_trace[trace]) times.push_back(r->median_us);
    std::sort(times.begin(), times.end());
    size_t n = times.size();
    double median = n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
    ranked.emplace_back(median, by_trace[trace].front());
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<const TuningRecord*> out;
  for (const auto& [time, r] : ranked) out.push_back(r);
  return out;
}

// ---------------------------------------------------------------------------
// Sampling and features
// ---------------------------------------------------------------------------

namespace {

// Chooses uniformly among the options a rule allows (a negative seed:
// the rule's own choice), and remembers the choices (the search's knobs,
// also features of the cost model).
class SamplingDecider : public Decider {
 public:
  explicit SamplingDecider(int64_t seed) : sample_(seed >= 0), rng_(static_cast<uint64_t>(seed)) {}
  int64_t choose(const std::string& name, const std::vector<int64_t>& options, int64_t preferred) override {
    int64_t value = preferred;
    if (sample_ && options.size() > 1)
      value = options[std::uniform_int_distribution<size_t>(0, options.size() - 1)(rng_)];
    chosen.emplace_back(name, value);
    return value;
  }
  std::vector<std::pair<std::string, int64_t>> chosen;

 private:
  bool sample_;
  std::mt19937_64 rng_;
};

std::set<std::string> names_of(const Array& items) {
  std::set<std::string> out;
  for (const Any& a : items) out.insert(a.cast<std::string>());
  return out;
}

Array decisions_array(const std::vector<std::pair<std::string, int64_t>>& chosen) {
  std::vector<Any> out;
  for (const auto& [name, value] : chosen) out.push_back(Any(Array({Any(name), Any(value)})));
  return Array(out);
}

constexpr int64_t kMinWork = 32768;  // AutoSchedule.parallel_min_work's default

// Features of a scheduled loop nest for the cost model: fixed length, in
// the order of kFeatureNames.
const std::vector<std::string> kFeatureNames = {
    "log_work",    "loops",        "serial",           "parallel",      "vectorized", "unrolled",
    "max_depth",   "log_parallel", "vector_lanes",     "log_unroll",    "allocs",     "log_alloc_bytes",
    "inner_loads", "inner_stores", "log_inner_extent", "strided_inner", "nests",      "log_body_work"};

std::vector<double> features_of(const PrimFunc& f) {
  std::vector<double> x(kFeatureNames.size(), 0.0);
  double work = 0, alloc_bytes = 0, parallel_extent = 1, unroll = 1, inner_extent = 1, body_work = 0;
  int max_depth = 0;
  std::function<void(const Stmt&, double, int)> walk = [&](const Stmt& s, double times, int depth) {
    pre_order(s, [&](const Stmt& st) {
      if (const auto* a = st.as<AllocateNode>()) {
        x[10] += 1;
        double n = a->buffer->dtype.bits / 8.0;
        for (const Any& d : a->buffer->shape) n *= static_cast<double>(const_int(d.cast<PrimExpr>()).value_or(1));
        alloc_bytes += n;
      }
      if (const auto* l = st.as<ForNode>()) {
        double extent = static_cast<double>(const_int(l->extent).value_or(64));
        x[1] += 1;
        switch (l->for_kind()) {
          case ForKind::kParallel:
            x[3] += 1;
            parallel_extent = std::max(parallel_extent, extent);
            break;
          case ForKind::kVectorized:
            x[4] += 1;
            x[8] = std::max(x[8], extent);
            break;
          case ForKind::kUnrolled:
            x[5] += 1;
            unroll = std::max(unroll, extent);
            break;
          default:
            x[2] += 1;
        }
        if (depth == 0) x[16] += 1;
        max_depth = std::max(max_depth, depth + 1);
        if (!has_loop(l->body)) {
          // An innermost loop: its accesses, its extent, whether a load strides.
          int loads = 0, stores = 0;
          bool strided = false;
          Visitor v;
          v.on<BufferLoadNode>([&](const BufferLoadNode* ld) {
            ++loads;
            if (ld->indices.size() && uses_var(Any(ld->indices), l->loop_var.get()) &&
                !uses_var(ld->indices[ld->indices.size() - 1], l->loop_var.get()))
              strided = true;
            v.visit_children(ld);
          });
          v.on<BufferStoreNode>([&](const BufferStoreNode* stn) {
            ++stores;
            v.visit_children(stn);
          });
          v.visit(Any(l->body));
          double n = times * extent;
          if (n * (loads + stores) > body_work) {
            body_work = n * (loads + stores);
            x[12] = loads;
            x[13] = stores;
            inner_extent = extent;
            x[15] = strided ? 1 : 0;
          }
          work += n;
          return false;
        }
        walk(l->body, times * extent, depth + 1);
        return false;
      }
      return true;
    });
  };
  walk(f->body, 1, 0);
  x[0] = std::log2(1 + work);
  x[6] = max_depth;
  x[7] = std::log2(parallel_extent);
  x[9] = std::log2(unroll);
  x[11] = std::log2(1 + alloc_bytes);
  x[14] = std::log2(inner_extent);
  x[17] = std::log2(1 + body_work);
  return x;
}

// How many times the module's other functions name @name (its call sites).
int64_t call_sites(const ir::IRModule& module, const std::string& name) {
  int64_t n = 0;
  for (const std::string& other : module.names()) {
    if (other == name) continue;
    Visitor v;
    v.on<ir::GlobalVarNode>([&](const ir::GlobalVarNode* g) {
      if (g->name == name) ++n;
    });
    v.visit(Any(module.lookup(other)));
  }
  return n;
}

Array features_array(const PrimFunc& f) {
  std::vector<Any> out;
  for (double v : features_of(f)) out.push_back(Any(v));
  return Array(out);
}

PrimFunc scheduled(const PrimFunc& f, const std::string& how) {
  std::map<std::string, Any> attrs = f->attrs.get() ? f->attrs->items : std::map<std::string, Any>{};
  attrs[kScheduledAttr] = Any(how);
  return PrimFunc(std::vector<Any>(f->params.begin(), f->params.end()), f->body, f->ret, Map(attrs));
}

}  // namespace

void register_tuning_functions() {
  FunctionRegistry::register_function(
      "tune.tasks",
      Function::typed(
          [](ir::IRModule module) {
            // Each prim function AutoSchedule would schedule: its name, task
            // form, hash, target, its native intrinsics (which products
            // PairProducts will pair, so AutoSchedule lays out pair panels),
            // constant parameters and calls.
            std::map<std::string, std::set<size_t>> constant = graph::constant_inputs(module);
            std::vector<Any> out;
            for (const std::string& name : module.names()) {
              ir::BaseFunc value = module.lookup(name);
              if (!value.as<PrimFuncNode>() || !target::on_cpu_target(module, name)) continue;
              PrimFunc f = downcast<PrimFunc>(value);
              if (f->attrs.get() && f->attrs->items.count(kScheduledAttr)) continue;
              std::string hash;
              PrimFunc task = canonical_task(f, &hash);
              std::vector<Any> constants;
              std::vector<Buffer> params = task.buffer_params();
              for (size_t k : constant[name])
                if (k < params.size()) constants.push_back(Any(params[k]->name));
              target::Target t = target::function_target(module, name);
              std::vector<Any> native;
              for (const std::string& n : target::native_intrinsics(t)) native.push_back(Any(n));
              std::map<std::string, Any> entry{
                  {"name", Any(name)},
                  {"func", Any(task)},
                  {"hash", Any(hash)},
                  {"target", t.defined() ? Any(t) : Any()},
                  {"target_key", Any(target_key(t.defined() ? Any(t) : Any()))},
                  {"vector_bits", Any(int64_t{t.defined() ? target::vector_bits(t) : 128})},
                  {"native_intrinsics", Any(Array(native))},
                  {"constants", Any(Array(constants))},
                  {"calls", Any(call_sites(module, name))}};
              out.push_back(Any(Map(entry)));
            }
            return Array(out);
          },
          "tune.tasks"),
      "the tasks of a module as AutoSchedule sees it: [{name, func, hash, target, target_key, vector_bits, "
      "native_intrinsics, constants, calls}]");
  FunctionRegistry::register_function(
      "tune.sample",
      Function::typed(
          [](PrimFunc task, int64_t vector_bits, Array constants, Array native, int64_t seed) {
            SamplingDecider decider(seed);  // seed < 0: AutoSchedule's own choices
            Schedule s = schedule_with(task, static_cast<int>(vector_bits), names_of(constants), kMinWork, decider,
                                       names_of(native));
            PrimFunc done = scheduled(finish_schedule(s, task), "candidate");
            return Array(
                {Any(done), Any(s.trace_json()), Any(decisions_array(decider.chosen)), Any(features_array(done))});
          },
          "tune.sample"),
      "a candidate schedule of a task (vector_bits, constants and native_intrinsics as tune.tasks gives them; seed < "
      "0: AutoSchedule's own): [func, trace JSON, decisions, features]");
  FunctionRegistry::register_function(
      "tune.replay",
      Function::typed(
          [](PrimFunc task, std::string trace) {
            Schedule s = Schedule::replay(task, trace);
            PrimFunc done = scheduled(finish_schedule(s, task), "candidate");
            return Array({Any(done), Any(features_array(done))});
          },
          "tune.replay"),
      "a task with a trace replayed, marked scheduled: [func, features]; ScheduleError names the step that fails");
  FunctionRegistry::register_function("tune.feature_names",
                                      Function::typed(
                                          []() {
                                            std::vector<Any> out;
                                            for (const std::string& n : kFeatureNames) out.push_back(Any(n));
                                            return Array(out);
                                          },
                                          "tune.feature_names"),
                                      "the names of the loop-nest features tune.sample gives");
  FunctionRegistry::register_function(
      "tune.relayout",
      Function::typed(
          [](runtime::NDArray x, std::string layout) { return relayout(x, parse_layout(layout, x->shape.size())); },
          "tune.relayout"),
      "a CPU array re-laid out by a layout's text (\"0 // 16, 1, 0 % 16\"): the input a function whose "
      "param_layouts name that layout takes");
  FunctionRegistry::register_function(
      "tune.cpu", Function::typed([]() { return target::detect_cpu(); }, "tune.cpu"),
      "this machine's CPU as tuning records it: model name and widest vector extension");
}

}  // namespace loom::loop
