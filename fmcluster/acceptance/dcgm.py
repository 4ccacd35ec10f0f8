"""``dcgmi diag`` text output (DCGM 4: NVIDIA/DCGM ``dcgmi/Diag.cpp``, ``HelperDisplayAsCli``).

The table, as dcgmi prints it::

    Successfully ran diagnostic for group.
    +---------------------------+------------------------------------------------+
    | Diagnostic                | Result                                         |
    +===========================+================================================+
    |-----  Metadata  ----------+------------------------------------------------|
    | DCGM Version              | 4.2.3                                          |
    |-----  Deployment  --------+------------------------------------------------|
    | software                  | Pass                                           |
    |                           | GPU0: Pass                                     |
    +-----  Integration  -------+------------------------------------------------+
    | pcie                      | Fail                                           |
    |                           | GPU3: Fail                                     |
    | Warning: GPU3             | Only 16 NvLinks are up out of the expected 18  |
    +---------------------------+------------------------------------------------+

A test's row carries its overall result (Pass, Fail, Warn, Skip, Not Run: ``HelperDisplayDiagResult``);
the rows under it carry each entity's (``GPU<n>: <result>``) and its warnings, wrapped at 45
characters (``DisplayVerboseInfo``). The NvLink message is ``DCGM_FR_GPU_EXPECTED_NVLINKS_UP_MSG``
(``dcgmlib/dcgm_errors.h``), raised by the pcie plugin when ``pcie.gpu_nvlinks_expected_up`` is set.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

SUCCESS = "Successfully ran diagnostic for group."
FOOTER = "+---------------------------+------------------------------------------------+"
RESULTS = ("Pass", "Fail", "Warn", "Skip", "Not Run")
_ENTITY = re.compile(r"^(GPU|CPU|NvSwitch|Link)(\d+): (Pass|Fail|Warn|Skip|Not Run)$")
_CATEGORY = re.compile(r"^[|+]-----\s+(\w+)\s+-+\+")


@dataclass
class DiagTest:
    name: str
    category: str | None
    result: str
    entities: dict[str, str] = field(default_factory=dict)
    """``GPU0`` -> its result."""
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Diag:
    ran: bool
    """dcgmi printed "Successfully ran diagnostic for group."."""
    complete: bool
    """The closing border after the last category is there."""
    metadata: dict[str, str]
    tests: tuple[DiagTest, ...]
    errors: tuple[str, ...]
    """Lines dcgmi printed outside the table (``Error: ...``)."""

    @property
    def failed(self) -> list[DiagTest]:
        return [t for t in self.tests if t.result == "Fail" or "Fail" in t.entities.values()]

    @property
    def gpus(self) -> set[str]:
        return {e for t in self.tests for e in t.entities if e.startswith("GPU")}


def parse_dcgm_diag(lines: list[str] | tuple[str, ...]) -> Diag:
    ran = complete = False
    metadata: dict[str, str] = {}
    tests: list[DiagTest] = []
    errors: list[str] = []
    category: str | None = None
    in_table = False
    warning_of: DiagTest | None = None
    for raw in lines:
        line = raw.rstrip()
        if line.strip() == SUCCESS:
            ran = True
            continue
        if line.startswith(("Error:", "Error ")):
            errors.append(line.strip())
            continue
        if m := _CATEGORY.match(line):
            category = m.group(1)
            in_table = True
            complete = False
            continue
        if line == FOOTER:
            complete = in_table and category is not None and category != "Metadata"
            continue
        if not (line.startswith("|") and line.endswith("|")) or line.startswith("+"):
            continue
        cells = [c.strip() for c in line[1:-1].split("|")]
        if len(cells) != 2:
            continue
        name, info = cells
        if name == "Diagnostic" and info == "Result":
            in_table = True
            continue
        if category == "Metadata" or category is None:
            if name:
                metadata[name] = info
            continue
        if name and name.startswith("Warning") or name == "" and warning_of is not None and not _ENTITY.match(info):
            if tests and name:
                tests[-1].warnings.append(info)
                warning_of = tests[-1]
            elif warning_of is not None and warning_of.warnings:
                warning_of.warnings[-1] += info  # a message wrapped at 45 characters
            continue
        if name == "" and (m := _ENTITY.match(info)):
            if tests:
                tests[-1].entities[f"{m.group(1)}{m.group(2)}"] = m.group(3)
            warning_of = None
            continue
        if name and info in RESULTS:
            tests.append(DiagTest(name, category, info))
            warning_of = None
    return Diag(ran, complete, metadata, tuple(tests), tuple(errors))
