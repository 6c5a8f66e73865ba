"""loom.build (docs/python.md, "Build and run")."""
import json
import os

from . import _core

Config = _core.Config


def _config(config):
    if isinstance(config, Config):
        return config
    if isinstance(config, dict):
        # JSON is YAML: the dict goes through the same reader as a file.
        return Config.parse(json.dumps(config), "<dict>")
    if isinstance(config, (str, os.PathLike)):
        return Config.load(os.fspath(config))
    raise _core.TypeError(f"config must be a YAML path, a dict or a loom.Config, got {type(config).__name__}")


def build(module, config, verbose=False):
    """Compiles an IRModule with a config (YAML path, dict, or Config) into
    a runtime Module; its functions take NumPy arrays or NDArrays.  With
    verbose=True (or LOOM_LOG=info in the environment) each pass prints one
    line with its time on stderr as it ends, and codegen one at the end."""
    if isinstance(module, str):
        raise _core.TypeError("build takes an IRModule; parse text with loom.parse first")
    return _core.build(module, _config(config), bool(verbose))
