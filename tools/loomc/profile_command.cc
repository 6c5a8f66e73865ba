#include "profile_command.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "loom/support/error.h"
#include "loom/support/file.h"

namespace loomc {

namespace {

using loom::JsonValue;

double number(const JsonValue* v) {
  if (!v) return 0;
  return v->kind == JsonValue::Kind::kInt ? static_cast<double>(v->integer) : v->number;
}

struct KernelTotal {
  std::string name, device;
  int64_t calls = 0;
  double total_us = 0;
  int64_t bytes = 0;
  int64_t flops = 0;  // -1: some call's count is unknown
};

// A kernel's flops from its JSON object (absent: unknown).
int64_t flops_of(const JsonValue* object) {
  const JsonValue* v = object ? object->find("flops") : nullptr;
  return v ? static_cast<int64_t>(number(v)) : -1;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out.flush()) LOOM_THROW(Error) << "cannot write " << path;
}

std::string fixed(double v, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, v);
  return text;
}

void print_table(const std::vector<KernelTotal>& kernels) {
  double all = 0;
  int64_t calls = 0;
  for (const KernelTotal& k : kernels) {
    all += k.total_us;
    calls += k.calls;
  }
  std::cout << "  " << calls << " kernel call(s), " << fixed(all / 1e3, 3) << " ms in kernels\n";
  std::cout << "   share   total ms  calls    mean us      GB/s   GFLOP/s  device     kernel\n";
  for (const KernelTotal& k : kernels) {
    char line[512];
    double gbs = k.total_us > 0 ? static_cast<double>(k.bytes) / (k.total_us * 1e3) : 0;
    std::string gflops =
        k.flops < 0 || k.total_us <= 0 ? "-" : fixed(static_cast<double>(k.flops) / (k.total_us * 1e3), 2);
    std::snprintf(line, sizeof line, "  %5.1f%% %10.3f %6lld %10.2f %9.2f %9s  %-9s  %s",
                  all > 0 ? 100 * k.total_us / all : 0, k.total_us / 1e3, static_cast<long long>(k.calls),
                  k.total_us / static_cast<double>(k.calls), gbs, gflops.c_str(), k.device.c_str(), k.name.c_str());
    std::cout << line << "\n";
  }
}

std::string escape_html(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Kernels by time, longest first: an inline SVG bar chart, no script, no
// network.
void write_html(const std::vector<KernelTotal>& kernels, const std::string& title, const std::string& path) {
  double all = 0, top = 0;
  int64_t calls = 0;
  for (const KernelTotal& k : kernels) {
    all += k.total_us;
    calls += k.calls;
    top = std::max(top, k.total_us);
  }
  size_t rows = std::min<size_t>(kernels.size(), 40);
  size_t name_width = 0;
  for (size_t i = 0; i < rows; ++i) name_width = std::max(name_width, kernels[i].name.size());
  const int row = 34, label = static_cast<int>(std::min<size_t>(name_width, 60)) * 13 + 20, bar = 520;
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" << escape_html(title) << "</title>\n"
    << "<style>body{font-family:monospace;background:#fff;color:#111;margin:24px}"
    << "h1{font-size:22px}p{font-size:16px}</style></head><body>\n"
    << "<h1>Loom profile: " << escape_html(title) << "</h1>\n<p>" << calls << " kernel calls, " << fixed(all / 1e3, 3)
    << " ms in kernels; the " << rows << " longest kernels by total time</p>\n"
    << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << label + bar + 220 << "\" height=\""
    << row * static_cast<int>(rows) + 10 << "\" font-family=\"monospace\" font-size=\"22\">\n";
  for (size_t i = 0; i < rows; ++i) {
    const KernelTotal& k = kernels[i];
    int y = static_cast<int>(i) * row;
    int width = top > 0 ? std::max(1, static_cast<int>(bar * k.total_us / top)) : 1;
    std::string name = k.name.size() > 60 ? k.name.substr(0, 57) + "..." : k.name;
    h << "<text x=\"0\" y=\"" << y + 24 << "\">" << escape_html(name) << "</text>"
      << "<rect x=\"" << label << "\" y=\"" << y + 4 << "\" width=\"" << width << "\" height=\"" << row - 8
      << "\" fill=\"#3b6fb6\"><title>" << escape_html(k.name) << " on " << escape_html(k.device) << ": " << k.calls
      << " call(s)</title></rect>"
      << "<text x=\"" << label + width + 8 << "\" y=\"" << y + 24 << "\">" << fixed(k.total_us / 1e3, 3) << " ms "
      << fixed(all > 0 ? 100 * k.total_us / all : 0, 1) << "%</text>\n";
  }
  h << "</svg>\n</body></html>\n";
  write_text(path, h.str());
}

}  // namespace

void print_kernel_table(const JsonValue& profile) {
  std::vector<KernelTotal> kernels;
  if (const JsonValue* list = profile.find("kernels")) {
    for (const JsonValue& k : list->array) {
      KernelTotal t;
      if (const JsonValue* v = k.find("name")) t.name = v->string;
      if (const JsonValue* v = k.find("device")) t.device = v->string;
      t.calls = static_cast<int64_t>(number(k.find("calls")));
      t.total_us = number(k.find("total_us"));
      t.bytes = static_cast<int64_t>(number(k.find("bytes")));
      t.flops = flops_of(&k);
      kernels.push_back(t);
    }
  }
  print_table(kernels);
  if (const JsonValue* dropped = profile.find("dropped"); dropped && dropped->integer > 0) {
    std::cout << "  (" << dropped->integer << " later call(s) not recorded: the profiler keeps 2^20)\n";
  }
}

void write_trace(const std::vector<JsonValue>& profiles, const std::string& path) {
  std::string out = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [";
  bool first = true;
  for (const JsonValue& p : profiles) {
    const JsonValue* events = p.find("traceEvents");
    if (!events) continue;
    for (const JsonValue& e : events->array) {
      out += (first ? "\n" : ",\n") + loom::to_json(e);
      first = false;
    }
  }
  write_text(path, out + "\n]}\n");
}

int profile_command(const std::string& trace, const std::string& html) {
  JsonValue doc = loom::parse_json(loom::read_file(trace), trace);
  const JsonValue* events = doc.kind == JsonValue::Kind::kObject ? doc.find("traceEvents") : &doc;
  if (!events || events->kind != JsonValue::Kind::kArray) {
    LOOM_THROW(Error) << trace << ": not a Chrome trace (an object with \"traceEvents\", or an array of events)";
  }
  std::map<std::pair<std::string, std::string>, KernelTotal> totals;
  for (const JsonValue& e : events->array) {
    const JsonValue* ph = e.find("ph");
    const JsonValue* cat = e.find("cat");
    const JsonValue* name = e.find("name");
    if (!ph || ph->string != "X" || !name || (cat && cat->string != "kernel")) continue;
    std::string device;
    if (const JsonValue* args = e.find("args")) {
      if (const JsonValue* d = args->find("device")) device = d->string;
    }
    KernelTotal& t = totals[{name->string, device}];
    t.name = name->string;
    t.device = device;
    ++t.calls;
    t.total_us += number(e.find("dur"));
    const JsonValue* args = e.find("args");
    if (args) t.bytes += static_cast<int64_t>(number(args->find("bytes")));
    int64_t flops = flops_of(args);
    t.flops = t.flops < 0 || flops < 0 ? -1 : t.flops + flops;
  }
  std::vector<KernelTotal> kernels;
  for (auto& [key, t] : totals) kernels.push_back(t);
  std::stable_sort(kernels.begin(), kernels.end(),
                   [](const KernelTotal& a, const KernelTotal& b) { return a.total_us > b.total_us; });
  std::cout << "profile " << trace << ":\n";
  print_table(kernels);
  if (!html.empty()) {
    write_html(kernels, trace, html);
    std::cout << "wrote " << html << "\n";
  }
  return 0;
}

}  // namespace loomc
