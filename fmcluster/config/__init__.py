"""Structure: project files -> pydantic models, one module per section, and the loader.

``load(ref)`` reads a project by name or path and returns a :class:`LoadedProject` (the
validated :class:`Project` and the line of every field), or raises
:class:`fmcluster.errors.ConfigError` listing every problem as ``file:line  path  message``.
"""

from fmcluster.config.compute import ComputeGroup
from fmcluster.config.loader import (
           LoadedProject,
           format_path,
           line_for,
           load,
           parse,
           projects_dir,
           resolve,
           shipped_default,
)
from fmcluster.config.network import Network
from fmcluster.config.project import DNS_NAME, Project

__all__ = ["DNS_NAME", "ComputeGroup", "LoadedProject", "Network", "Project", "format_path", "line_for", "load",
           "parse", "projects_dir", "resolve", "shipped_default"]
