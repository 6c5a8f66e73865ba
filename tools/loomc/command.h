// loomc's command table: each command declares its words, arguments, flags,
// help and handler once (main.cc lists them); parsing, the usage errors (an
// option the command does not take, a value missing, a wrong number of
// arguments, an unknown command with a did-you-mean) and every help text
// are made from the table.
#ifndef LOOM_TOOLS_LOOMC_COMMAND_H_
#define LOOM_TOOLS_LOOMC_COMMAND_H_

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace loomc {

struct Flag {
  std::string name;       // "--config", "-o"
  std::string value;      // its value's placeholder ("FILE.yaml"); empty for a switch
  bool repeated = false;  // may be given more than once (--input), in order
};

// What the command line gave a command: its positional arguments (after
// the command's words) and its flags.
struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::vector<std::string>> flags;  // switches map to {""}

  bool has(const std::string& flag) const { return flags.count(flag) != 0; }
  // The flag's value, or `fallback` when it was not given.
  std::string get(const std::string& flag, const std::string& fallback = "") const;
  // Every value of a repeated flag, in order.
  std::vector<std::string> all(const std::string& flag) const;
};

struct Command {
  std::string name;      // its words: "build", "plugins list"
  std::string synopsis;  // what follows the words in a usage line; '\n' continues it
  std::string help;      // what it does, lines of at most 56 columns separated by '\n'
  std::vector<Flag> flags;
  size_t min_args = 0, max_args = 0;  // positional arguments
  std::string args_error;             // the usage error when their number is wrong
  std::function<int(const Args&)> run;
  // The words after the command go to `run` as positional arguments,
  // unparsed: the command parses them itself (import and tune, in Python;
  // call, whose arguments may look like options).
  bool verbatim = false;
  // Whether loomc reports the search path's ignored entries and refused
  // plugins first (plugins list prints them with its table).
  bool warns = true;

  // Built by name: Command::named("build", "INPUT --config FILE", "...")
  //   .takes("--config", "FILE.yaml").arguments(1, 1, "build takes one input file").runs(...)
  static Command named(std::string name, std::string synopsis, std::string help) {
    Command c;
    c.name = std::move(name);
    c.synopsis = std::move(synopsis);
    c.help = std::move(help);
    return c;
  }
  Command& takes(std::string flag, std::string value = "", bool repeated = false) {
    flags.push_back({std::move(flag), std::move(value), repeated});
    return *this;
  }
  Command& arguments(size_t min, size_t max, std::string error) {
    min_args = min;
    max_args = max;
    args_error = std::move(error);
    return *this;
  }
  Command& runs(std::function<int(const Args&)> handler) {
    run = std::move(handler);
    return *this;
  }
  Command& unparsed() {
    verbatim = true;
    return *this;
  }
  Command& without_warnings() {
    warns = false;
    return *this;
  }
};

struct Table {
  std::vector<Command> commands;
  std::map<std::string, std::string> aliases;     // a first word read as another ("plugin" -> "plugins")
  std::map<std::string, std::string> group_help;  // `loomc GROUP --help` for a group with its own text
  std::string footer;                             // after the list of commands in `loomc --help`
  std::function<void()> warn;                     // what `warns` runs
};

// "loomc: MESSAGE" and where to read more (COMMAND's help when one is
// named) on stderr; exit status 2.
int usage_error(const std::string& message, const std::string& command = "");

// `loomc --help`: every command of the table with its synopsis and help.
std::string main_help(const Table& table);

// Runs the command `args` names (the words after `loomc`); the exit status.
int dispatch(const Table& table, const std::vector<std::string>& args);

}  // namespace loomc

#endif  // LOOM_TOOLS_LOOMC_COMMAND_H_
