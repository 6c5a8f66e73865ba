"""Plugins by name (docs/python.md, "Plugins"): discovery reads each
plugin's manifest without loading it; load() runs its init."""
from dataclasses import dataclass, field

from . import _core


@dataclass(frozen=True)
class PluginInfo:
    name: str
    version: str
    path: str
    state: str  # "discovered", "loaded" or "failed"
    provides: list = field(default_factory=list)
    requires: list = field(default_factory=list)
    description: str = ""
    error: str = ""  # the reason, when failed
    functions: list = field(default_factory=list)  # registered, when loaded


def _info(d):
    return PluginInfo(**d)


def available():
    """Every discovered plugin (no plugin code runs)."""
    return [_info(d) for d in _core.plugins_available()]


def info(name):
    """The plugin called `name`; LookupError when none is."""
    d = _core.plugin_info(name)
    if d is None:
        names = ", ".join(p.name for p in available())
        raise _core.LookupError(f"no plugin '{name}' (discovered: {names})")
    return _info(d)


def load(name):
    """Loads the plugin `name` (and what it requires); PluginError with the
    file and the reason when it cannot."""
    return _info(_core.plugin_load(name))


def load_path(path):
    """Loads the plugin in the file `path`."""
    return _info(_core.plugin_load_path(str(path)))


def search_path():
    """The folders searched for plugins, in order."""
    return list(_core.plugin_search_path())
