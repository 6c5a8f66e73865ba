// The command table's parser, usage errors and help; see command.h.
#include "command.h"

#include <iostream>
#include <set>
#include <sstream>

#include "loom/support/strings.h"
#include "loom/version.h"

namespace loomc {

std::string Args::get(const std::string& flag, const std::string& fallback) const {
  auto it = flags.find(flag);
  return it == flags.end() || it->second.empty() ? fallback : it->second.back();
}

std::vector<std::string> Args::all(const std::string& flag) const {
  auto it = flags.find(flag);
  return it == flags.end() ? std::vector<std::string>{} : it->second;
}

int usage_error(const std::string& message, const std::string& command) {
  std::cerr << "loomc: " << message << "\nTry 'loomc " << (command.empty() ? "" : command + " ") << "--help'.\n";
  return 2;
}

namespace {

constexpr size_t kHelpColumn = 30;

// "  NAME SYNOPSIS" (continued lines under the synopsis) and the help at
// kHelpColumn, on the same line when the usage leaves room.
void write_entry(std::ostream& out, const Command& c) {
  std::vector<std::string> usage = loom::split(c.synopsis, '\n', true);
  std::string head = "  " + c.name;
  std::string last = head + (usage.empty() || usage[0].empty() ? "" : " " + usage[0]);
  for (size_t i = 1; i < usage.size(); ++i) {
    out << last << "\n";
    last = std::string(head.size() + 1, ' ') + usage[i];
  }
  std::vector<std::string> help = loom::split(c.help, '\n', true);
  size_t k = 0;
  if (!help.empty() && last.size() + 2 <= kHelpColumn) {
    out << last << std::string(kHelpColumn - last.size(), ' ') << help[k++] << "\n";
  } else {
    out << last << "\n";
  }
  for (; k < help.size(); ++k) out << std::string(kHelpColumn, ' ') << help[k] << "\n";
}

std::string usage_line(const Command& c) {
  std::string synopsis = c.synopsis;
  for (size_t at = synopsis.find('\n'); at != std::string::npos; at = synopsis.find('\n', at))
    synopsis.replace(at, 1, " ");
  return "loomc " + c.name + (synopsis.empty() ? "" : " " + synopsis);
}

std::string command_help(const Command& c) {
  std::ostringstream out;
  out << "Usage: " << usage_line(c) << "\n\n";
  for (const std::string& line : loom::split(c.help, '\n', true)) out << "  " << line << "\n";
  return out.str();
}

std::vector<std::string> first_words(const Table& t) {
  std::vector<std::string> words;
  std::set<std::string> seen;
  for (const Command& c : t.commands) {
    std::string word = c.name.substr(0, c.name.find(' '));
    if (seen.insert(word).second) words.push_back(word);
  }
  for (const auto& [alias, target] : t.aliases) words.push_back(alias);
  return words;
}

const Command* find(const Table& t, const std::string& name) {
  for (const Command& c : t.commands) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

// The commands of group `word` ("plugins" -> list, info, ...).
std::vector<const Command*> group(const Table& t, const std::string& word) {
  std::vector<const Command*> members;
  for (const Command& c : t.commands) {
    if (loom::starts_with(c.name, word + " ")) members.push_back(&c);
  }
  return members;
}

int group_usage(const Table& t, const std::string& word, bool asked) {
  auto help = t.group_help.find(word);
  if (help != t.group_help.end()) {
    std::cout << help->second;
  } else {
    std::cout << "Usage:\n";
    for (const Command* c : group(t, word)) write_entry(std::cout, *c);
  }
  return asked ? 0 : 2;
}

bool is_help(const std::string& a) { return a == "--help" || a == "-h"; }

// The words after the command's into `args`, checked against its flags.
int parse(const Command& c, const std::vector<std::string>& words, Args* args) {
  if (c.verbatim) {
    args->positional = words;
    return 0;
  }
  std::vector<std::string> names;
  for (const Flag& f : c.flags) names.push_back(f.name);
  for (size_t k = 0; k < words.size(); ++k) {
    const std::string& a = words[k];
    if (a.size() < 2 || a[0] != '-') {
      args->positional.push_back(a);
      continue;
    }
    const Flag* flag = nullptr;
    for (const Flag& f : c.flags) {
      if (f.name == a) flag = &f;
    }
    if (!flag) {
      std::string takes = names.empty() ? "it takes no options" : "it takes " + loom::join(names, ", ");
      return usage_error(
          "unknown option '" + a + "' for '" + c.name + "'" + loom::did_you_mean(a, names) + " (" + takes + ")",
          c.name);
    }
    if (args->has(a) && !flag->repeated) return usage_error(a + " is given twice to '" + c.name + "'", c.name);
    if (flag->value.empty()) {
      args->flags[a].push_back("");
      continue;
    }
    if (k + 1 >= words.size()) return usage_error(a + " needs a value (" + flag->value + ")", c.name);
    args->flags[a].push_back(words[++k]);
  }
  size_t n = args->positional.size();
  if (n < c.min_args || n > c.max_args) return usage_error(c.args_error + "\nusage: " + usage_line(c), c.name);
  return 0;
}

}  // namespace

std::string main_help(const Table& t) {
  std::ostringstream out;
  out << "loomc -- the Loom compiler driver\n\nUsage: loomc [--help] [--version] COMMAND [ARGS...]\n"
      << "       loomc COMMAND --help\n\nCommands:\n";
  for (const Command& c : t.commands) write_entry(out, c);
  out << "\n" << t.footer;
  return out.str();
}

int dispatch(const Table& t, const std::vector<std::string>& words) {
  if (words.empty()) {
    std::cout << main_help(t);
    return 2;
  }
  const std::string& first = words[0];
  if (is_help(first)) {
    std::cout << main_help(t);
    return 0;
  }
  if (first == "--version") {
    std::cout << "loomc " << LOOM_VERSION << "\n";
    return 0;
  }
  if (first[0] == '-') return usage_error("unknown option '" + first + "' (options follow the command)");
  std::string word = t.aliases.count(first) ? t.aliases.at(first) : first;
  const Command* command = find(t, word);
  size_t used = 1;
  if (!command) {
    std::vector<const Command*> members = group(t, word);
    if (members.empty())
      return usage_error("unknown command '" + first + "'" + loom::did_you_mean(first, first_words(t)));
    if (words.size() < 2 || is_help(words[1])) return group_usage(t, word, words.size() >= 2);
    command = find(t, word + " " + words[1]);
    used = 2;
    if (!command) {
      std::vector<std::string> subs, usages;
      for (const Command* c : members) {
        subs.push_back(c->name.substr(word.size() + 1));
        usages.push_back("usage: " + usage_line(*c));
      }
      return usage_error("unknown " + word + " command '" + words[1] + "'" + loom::did_you_mean(words[1], subs) + "\n" +
                         loom::join(usages, "\n"));
    }
  }
  std::vector<std::string> rest(words.begin() + used, words.end());
  if (!command->verbatim) {
    for (const std::string& a : rest) {
      if (is_help(a)) {
        std::cout << command_help(*command);
        return 0;
      }
    }
  }
  Args args;
  if (int status = parse(*command, rest, &args)) return status;
  if (command->warns && t.warn) t.warn();
  return command->run(args);
}

}  // namespace loomc
