// The kernel profiler (docs/rpc.md, "Profiles and traces").
#include "loom/runtime/profiler.h"

#include <algorithm>
#include <map>
#include <set>

#include "loom/support/json.h"

namespace loom::runtime {

void Profiler::start() {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.clear();
  dropped_ = 0;
  origin_ = Clock::now();
}

int64_t Profiler::now_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - origin_).count();
}

void Profiler::record(ProfileEvent event) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (events_.size() >= kMaxEvents) {
    ++dropped_;
    return;
  }
  events_.push_back(std::move(event));
}

std::string Profiler::to_json() const {
  std::lock_guard<std::mutex> lock(mutex_);
  struct Total {
    int64_t calls = 0, ns = 0, bytes = 0, flops = 0;  // flops -1: some call's unknown
  };
  std::map<std::pair<std::string, std::string>, Total> totals;
  int64_t all_ns = 0;
  for (const ProfileEvent& e : events_) {
    if (e.category != "kernel") continue;
    Total& t = totals[{e.name, e.device}];
    ++t.calls;
    t.ns += e.duration_ns;
    t.bytes += e.bytes;
    t.flops = t.flops < 0 || e.flops < 0 ? -1 : t.flops + e.flops;
    all_ns += e.duration_ns;
  }
  std::vector<std::pair<std::pair<std::string, std::string>, Total>> sorted(totals.begin(), totals.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
  JsonWriter json(0);
  json.begin_object().key("kernels").begin_array();
  for (const auto& [key, t] : sorted) {
    json.begin_object()
        .key("name")
        .value(key.first)
        .key("device")
        .value(key.second)
        .key("calls")
        .value(t.calls)
        .key("total_us")
        .value(static_cast<double>(t.ns) / 1e3)
        .key("mean_us")
        .value(static_cast<double>(t.ns) / 1e3 / static_cast<double>(t.calls))
        .key("share")
        .value(all_ns ? static_cast<double>(t.ns) / static_cast<double>(all_ns) : 0.0)
        .key("bytes")
        .value(t.bytes);
    if (t.flops >= 0) json.key("flops").value(t.flops);
    json.end_object();
  }
  json.end_array().key("total_us").value(static_cast<double>(all_ns) / 1e3).key("traceEvents").begin_array();
  // One trace thread per device, named by a metadata event.
  std::map<std::string, int64_t> tids;
  for (const ProfileEvent& e : events_) {
    if (tids.count(e.device)) continue;
    int64_t tid = static_cast<int64_t>(tids.size()) + 1;
    tids[e.device] = tid;
    json.begin_object().key("name").value("thread_name").key("ph").value("M").key("pid").value(int64_t{1});
    json.key("tid").value(tid).key("args").begin_object().key("name").value(e.device).end_object().end_object();
  }
  for (const ProfileEvent& e : events_) {
    json.begin_object().key("name").value(e.name).key("cat").value(e.category).key("ph").value("X");
    json.key("ts")
        .value(static_cast<double>(e.start_ns) / 1e3)
        .key("dur")
        .value(static_cast<double>(e.duration_ns) / 1e3);
    json.key("pid").value(int64_t{1}).key("tid").value(tids[e.device]);
    json.key("args").begin_object().key("device").value(e.device).key("bytes").value(e.bytes);
    if (e.flops >= 0) json.key("flops").value(e.flops);
    json.end_object();
    json.end_object();
  }
  json.end_array().key("dropped").value(dropped_).end_object();
  return json.str();
}

std::string profiles_json(const Module& root) {
  std::string json = "{";
  std::set<std::string> kinds;
  std::vector<Module> pending{root};
  for (size_t k = 0; k < pending.size(); ++k) {
    std::string profile = pending[k]->profile();
    if (!profile.empty() && kinds.insert(pending[k]->type_key()).second) {
      json += (json.size() > 1 ? ", \"" : "\"") + pending[k]->type_key() + "\": " + profile;
    }
    for (const Module& child : pending[k].imports()) pending.push_back(child);
  }
  return json + "}";
}

void set_profiling(const Module& root, bool on) {
  std::vector<Module> pending{root};
  for (size_t k = 0; k < pending.size(); ++k) {
    pending[k].node()->set_profiling(on);
    for (const Module& child : pending[k].imports()) pending.push_back(child);
  }
}

}  // namespace loom::runtime
