"""Amazon EKS's Kubernetes release calendar, as dated data: when each version left (or leaves) standard support, after
which EKS bills the control plane at the extended-support rate, and when extended support ends, after which EKS
creates no cluster on it (EKS user guide, "Understand the Kubernetes version lifecycle on EKS", release calendar).

Pure data and date arithmetic: no AWS call (``aws eks describe-cluster-versions`` gives the same dates live).
Dates are UTC days; "billing for extended support starts at the beginning of the day that the version reaches end of
standard support" (the same page), so on that day a version is already in extended support.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timezone
from typing import Literal

CALENDAR_URL = "https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html#kubernetes-release-calendar"
CALENDAR_READ = "awsdocs/amazon-eks-user-guide latest/ug/versioning/kubernetes-versions.adoc (commit 01385604)"
ENDOFLIFE = "https://endoflife.date/amazon-eks"
NEAR_DAYS = 90
"""A pinned version this close to the end of its standard support is warned about (EKS announces the date at least
60 days ahead: the same page's FAQ)."""

Support = Literal["standard", "extended", "ended", "unknown"]


@dataclass(frozen=True)
class EksVersion:
    version: str
    eks_release: date
    end_of_standard: date
    end_of_extended: date
    source: str
    """Where the dates were read: AWS's calendar, or a secondary copy where AWS's page as read did not list it yet."""


CALENDAR: dict[str, EksVersion] = {v.version: v for v in (
    EksVersion("1.28", date(2023, 9, 26), date(2024, 11, 26), date(2025, 11, 26), ENDOFLIFE),
    EksVersion("1.29", date(2024, 1, 23), date(2025, 3, 23), date(2026, 3, 23), CALENDAR_READ),
    EksVersion("1.30", date(2024, 5, 23), date(2025, 7, 23), date(2026, 7, 23), CALENDAR_READ),
    EksVersion("1.31", date(2024, 9, 26), date(2025, 11, 26), date(2026, 11, 26), CALENDAR_READ),
    EksVersion("1.32", date(2025, 1, 23), date(2026, 3, 23), date(2027, 3, 23), CALENDAR_READ),
    EksVersion("1.33", date(2025, 5, 29), date(2026, 7, 29), date(2027, 7, 29), CALENDAR_READ),
    EksVersion("1.34", date(2025, 10, 2), date(2026, 12, 2), date(2027, 12, 2), CALENDAR_READ),
    # AWS's calendar as read stops at 1.34: 1.35's dates are endoflife.date's (EKS release 2026-01-28, 14 + 12
    # months as EKS's policy says); **unconfirmed** on AWS's own page
    EksVersion("1.35", date(2026, 1, 28), date(2027, 3, 27), date(2028, 3, 27), ENDOFLIFE),
)}
"""Version -> its EKS dates. A version not here (1.36 exists on EKS: its dates were not found in a source read) has
``support() == "unknown"``."""


def today() -> date:
    """Today's UTC date: the day whose support status and rate the plan and the checks use."""
    return datetime.now(timezone.utc).date()


def support(version: str, on: date | None = None) -> Support:
    """``version``'s EKS support on ``on`` (default today): standard, extended (billed at the extended rate), ended
    (EKS creates no cluster on it), or unknown (not in :data:`CALENDAR`)."""
    found = CALENDAR.get(version)
    if found is None:
        return "unknown"
    day = on or today()
    if day >= found.end_of_extended:
        return "ended"
    return "extended" if day >= found.end_of_standard else "standard"


def days_of_standard_left(version: str, on: date | None = None) -> int | None:
    """Days until ``version`` leaves standard support (0 or less: it has); None when the calendar lacks it."""
    found = CALENDAR.get(version)
    return None if found is None else (found.end_of_standard - (on or today())).days
