// A plugin's declarations (loom/plugin.h, ".loom_declarations"), read off
// the registries after its init ran: the capabilities it registered and the
// schemas of its passes, target kinds, operators and config keys.  This is
// what `loomc plugins declare` writes and loom_add_plugin embeds at build
// time, so a plugin's `provides` and schemas are declared once, in code.
#ifndef LOOM_DRIVER_DECLARATIONS_H_
#define LOOM_DRIVER_DECLARATIONS_H_

#include <string>

namespace loom::driver {

// The JSON text of the declarations of everything `owner` (a loaded
// plugin's name) registered.
std::string plugin_declarations(const std::string& owner);

}  // namespace loom::driver

#endif  // LOOM_DRIVER_DECLARATIONS_H_
