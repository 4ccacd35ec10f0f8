"""Which library NCCL loads as its network plugin and as its tuner, decided the way NCCL decides it, per version.

Encoded from NVIDIA/nccl's own source (the repository snapshot's release tags; file:line is where the rule is):

net plugin (the names NCCL passes to dlopen, in order; the first that opens wins, none: internal IB/socket):
- 2.18.1-2.18.6   src/net.cc:168-177 ncclNetPluginInit: NCCL_NET_PLUGIN set and non-empty -> only
                  "libnccl-net-<value>.so"; else "libnccl-net.so".
- 2.19.1-2.20.5   src/net.cc:216 (2.19) / :342 (2.20) ncclNetPluginInit: the same (ncclGetEnv instead of getenv).
- 2.21.5          src/net.cc:377-417 openNetPluginLib: set and non-empty -> "<value>" as given, then
                  "libnccl-net-<value>.so"; else "libnccl-net.so".
- 2.22.3-2.25.1   src/net.cc:376 (2.22), :378 (2.23), :665 (2.24, 2.25) openNetPluginLib with tryOpenLib: the same
                  order; tryOpenLib (src/net.cc:344) dlopens NULL (the program itself) for a name that is a
                  case-insensitive prefix of "STATIC_PLUGIN".
- 2.26.2-2.26.6   src/plugin/net.cc:70 ncclOpenNetPluginLib(ncclGetEnv("NCCL_NET_PLUGIN")) ->
                  src/plugin/plugin_open.cc:58 openPluginLib: as 2.22 (value as given, then prefixed; unset or
                  empty -> "libnccl-net.so").
- 2.27.3          src/plugin/net.cc:214-247 initPluginLibsOnceFunc: the variable, when set at all, is a
                  comma-separated list and the default "libnccl-net.so" is not tried; plugin_open.cc:57-91 per name:
                  a name that looks like lib*.so (at least 7 characters) is opened as given, any other name only as
                  "libnccl-net-<name>.so" (so a file path is never opened as given).
- 2.27.5-2.27.7   src/plugin/plugin_open.cc:57 (2.27.5) / :53 (2.27.6, 2.27.7): the name as given, then
                  "libnccl-net-<name>.so" unless the name has a '/' or looks like lib*.so; list as 2.27.3.
- 2.28.3-2.30.7   src/plugin/plugin_open.cc:63 (2.28, 2.29.2, 2.29.3), :64 (2.29.7), :78 (2.30.3, 2.30.4),
                  :79 (2.30.7, master): as 2.27.5; src/plugin/net.cc:244 (2.28.3), :248 (2.29.7), :266 (2.30.7):
                  "none" (any case) means no external plugin.

tuner (NCCL_TUNER_PLUGIN; the symbols NCCL accepts):
- 2.18            no tuner interface.
- 2.19.1-2.20.5   src/misc/tuner.cc:29-32: dlopen(NCCL_TUNER_PLUGIN) as given, only when set; symbol
                  "ncclTunerPlugin_v1" (src/include/nccl_tuner.h:53 NCCL_TUNER_PLUGIN_SYMBOL).
- 2.21.5-2.25.1   src/misc/tuner.cc openTunerPluginLib (2.21: :53-125; 2.22: :98; 2.25: :115): NCCL_TUNER_PLUGIN as
                  given then "libnccl-tuner-<value>.so", else "libnccl-tuner.so"; then NCCL_NET_PLUGIN as given then
                  "libnccl-net-<value>.so", else "libnccl-net.so" ("Users are allowed to pack tuner into the net
                  plugin"). Symbols: 2.21 v2 (nccl_tuner.h:58); 2.22-2.23 v3, v2 (tuner.cc:199-202); 2.24-2.25
                  v4, v3, v2 (tuner.cc:216-222).
- 2.26.2 on       src/plugin/tuner.cc:53-55 (2.26, 2.27), :61-63 (2.28), :62-64 (2.30.7): openPluginLib(TUNER,
                  NCCL_TUNER_PLUGIN) with the net rules above and prefix "libnccl-tuner"; when that fails, the
                  handle of the net plugin NCCL loaded (ncclGetNetPluginLib). Symbols v4..v2 (2.26, 2.27),
                  v5..v2 (2.28), v6..v2 (master: src/plugin/tuner.cc).

aws-ofi-nccl (aws/aws-ofi-nccl, tags v1.21.1 and the snapshot's HEAD): src/Makefile.am builds libnccl-net-ofi.so
(the library since 1.15.0, commit f71aea22), libnccl-net.so as a copy, and on AWS libnccl-ofi-tuner.so and
libnccl-tuner-ofi.so, all from one libinternal_plugin.la, so each carries the tuner; the tuner exports
ncclTunerPlugin_v2, _v3 and _v6 (src/tuner/nccl_ofi_tuner.cpp:185,242,274), none of them v1.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

OFI_TUNER_SYMBOLS = frozenset({2, 3, 6})
"""The tuner interface versions aws-ofi-nccl exports (src/tuner/nccl_ofi_tuner.cpp)."""


@dataclass(frozen=True)
class Nccl:
    tag: str
    era: str
    """Which rule set above: a18 (2.18-2.20), a21 (2.21-2.26), b273 (2.27.3), c275 (2.27.5 on)."""
    net_list: bool
    """NCCL_NET_PLUGIN is a comma-separated list and, once set, the default name is not tried (2.27 on)."""
    tuner_era: str
    """none (2.18), v219 (2.19-2.20), v221 (2.21-2.25), v226 (2.26 on)."""
    tuner_symbols: frozenset[int]
    none_word: bool = False
    """NCCL_NET_PLUGIN=none means no external plugin (2.28 on)."""

    @property
    def label(self) -> str:
        return self.tag.removeprefix("v").removesuffix("-1")


VERSIONS = (
    Nccl("v2.18.6-1", "a18", False, "none", frozenset()),
    Nccl("v2.19.4-1", "a18", False, "v219", frozenset({1})),
    Nccl("v2.20.5-1", "a18", False, "v219", frozenset({1})),
    Nccl("v2.21.5-1", "a21", False, "v221", frozenset({2})),
    Nccl("v2.22.3-1", "a21", False, "v221", frozenset({3, 2})),
    Nccl("v2.23.4-1", "a21", False, "v221", frozenset({3, 2})),
    Nccl("v2.24.3-1", "a21", False, "v221", frozenset({4, 3, 2})),
    Nccl("v2.25.1-1", "a21", False, "v221", frozenset({4, 3, 2})),
    Nccl("v2.26.6-1", "a21", False, "v226", frozenset({4, 3, 2})),
    Nccl("v2.27.3-1", "b273", True, "v226", frozenset({4, 3, 2})),
    Nccl("v2.27.5-1", "c275", True, "v226", frozenset({4, 3, 2})),
    Nccl("v2.27.7-1", "c275", True, "v226", frozenset({4, 3, 2})),
    Nccl("v2.28.9-1", "c275", True, "v226", frozenset({5, 4, 3, 2}), True),
    Nccl("v2.29.7-1", "c275", True, "v226", frozenset({5, 4, 3, 2}), True),
    Nccl("v2.30.7-1", "c275", True, "v226", frozenset({6, 5, 4, 3, 2}), True),
)
"""One release per rule set and per minor version, 2.18 to the newest tag in the snapshot (2.30.7)."""


def _looks_like_lib(name: str) -> bool:
    # plugin_open.cc (2.27.3): strlen >= strlen("libX.so") && starts "lib" && ends ".so"
    return len(name) >= len("libX.so") and name.startswith("lib") and name.endswith(".so")


def _candidates(era: str, prefix: str, name: str | None) -> list[str]:
    """The dlopen names for one plugin name (None or "": none given) under one rule set."""
    if not name:
        return [f"{prefix}.so"]
    if era == "a18":
        return [f"{prefix}-{name}.so"]
    if era == "a21":
        return [name, f"{prefix}-{name}.so"]
    if era == "b273":
        return [name] if _looks_like_lib(name) else [f"{prefix}-{name}.so"]
    out = [name]  # c275: as given, then prefixed unless a path or a library name (2.27.5 plugin_open.cc)
    if "/" not in name and not (name.startswith("lib") and name.endswith(".so")):
        out.append(f"{prefix}-{name}.so")
    return out


def net_names(v: Nccl, value: str | None) -> list[str]:
    """Every name NCCL ``v`` tries for its net plugin with NCCL_NET_PLUGIN=``value`` (None: unset), in order."""
    if not v.net_list:
        return _candidates(v.era, "libnccl-net", value)
    if value is None:
        return ["libnccl-net.so"]
    if v.none_word and value.lower() == "none":
        return []
    return [n for part in value.split(",") if part for n in _candidates(v.era, "libnccl-net", part)]


@dataclass(frozen=True)
class Loader:
    """glibc's dlopen search for a name without '/' (dlopen(3)): LD_LIBRARY_PATH, the ld.so cache, /lib and
    /usr/lib (and lib64 on 64-bit); a name with '/' is that path. ``root`` stands for the node's /."""

    root: Path
    ld_library_path: str = ""
    cache_dirs: tuple[str, ...] = ()

    def find(self, name: str) -> str | None:
        if "/" in name:
            return name if name.startswith("/") and (self.root / name.lstrip("/")).is_file() else None
        dirs = [d for d in self.ld_library_path.split(":") if d]
        dirs += list(self.cache_dirs) + ["/lib64", "/usr/lib64", "/lib", "/usr/lib"]
        for d in dirs:
            path = self.root / d.lstrip("/") / name
            if path.is_file():
                if path.is_symlink():  # dlopen loads the link's target (relative links only: the root is not /)
                    return "/" + str(path.resolve().relative_to(self.root.resolve()))
                return os.path.normpath(f"{d}/{name}")
        return None


def net_plugin(v: Nccl, env: dict[str, str], loader: Loader) -> str | None:
    """The file NCCL ``v`` loads as its net plugin under ``env``, or None (internal IB/sockets)."""
    for name in net_names(v, env.get("NCCL_NET_PLUGIN")):
        if (found := loader.find(name)) is not None:
            return found
    return None


def tuner(v: Nccl, env: dict[str, str], loader: Loader, ofi_files: set[str]) -> str | None:
    """The aws-ofi-nccl file NCCL ``v`` takes its tuner from under ``env``, or None. ``ofi_files``: the image's
    aws-ofi-nccl libraries (each carries the tuner, with the symbols in OFI_TUNER_SYMBOLS)."""
    if v.tuner_era == "none":
        return None
    t, n = env.get("NCCL_TUNER_PLUGIN"), env.get("NCCL_NET_PLUGIN")
    if v.tuner_era == "v219":
        names = [t] if t is not None else []
    elif v.tuner_era == "v221":
        names = _candidates("a21", "libnccl-tuner", t) + _candidates("a21", "libnccl-net", n)
    else:
        names = _candidates(v.era, "libnccl-tuner", t)
    lib = next((found for name in names if (found := loader.find(name)) is not None), None)
    if lib is None and v.tuner_era == "v226":
        lib = net_plugin(v, env, loader)
    if lib is None or lib not in ofi_files or not (v.tuner_symbols & OFI_TUNER_SYMBOLS):
        return None
    return lib
