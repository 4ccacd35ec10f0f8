"""docs/teams.md: what each ``teams`` key means (one meaning, :data:`fmcluster.config.teams.MEANING`) and how each
orchestrator enforces it or why it refuses it (its ``teams``, ``teams_how`` and ``teams_why`` traits,
:mod:`fmcluster.orchestrators`). Regenerate with ``make docs`` (``python -m fmcluster.generate.teamsdoc``);
tests/generate/test_teamsdoc.py fails when the committed file is stale."""

from __future__ import annotations

import sys

from fmcluster.config.teams import MEANING
from fmcluster.generate.reference import write_or_check
from fmcluster.orchestrators import ORCHESTRATORS

DOC = "docs/teams.md"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render() -> str:
    drivers = [o for o in ORCHESTRATORS.values() if o.slurm or o.teams]
    lines = [
        "# Teams: one meaning per key",
        "",
        "<!-- Generated from fmcluster/config/teams.py (MEANING) and fmcluster/orchestrators.py (teams, teams_how,",
        "     teams_why) by `make docs` (python -m fmcluster.generate.teamsdoc). Do not edit: tests/generate/",
        "     test_teamsdoc.py fails when this file and the code disagree. -->",
        "",
        "Each key of a team under `teams:` means one thing on every orchestrator. Where an orchestrator cannot",
        "honour a key with that meaning, `fmcluster validate` refuses the key (check `teams-supported`) instead of",
        "weakening it. A key left at its default asks for nothing.",
        "",
        "| key | meaning | " + " | ".join(f"`{o.name}`" for o in drivers) + " |",
        "|---|---|" + "---|" * len(drivers),
    ]
    for key, meaning in MEANING.items():
        cells = []
        for o in drivers:
            how = dict(o.teams_how).get(key)
            cells.append(_cell(how) if how is not None else "refused")
        lines.append(f"| `{key}` | {_cell(meaning)} | " + " | ".join(cells) + " |")
    lines += ["", "Why a key is refused:", ""]
    lines += [f"- `{o.name}`: {o.teams_why}." for o in drivers if set(MEANING) - set(o.teams)]
    lines += [
        "",
        "On Slurm the teams script (`/usr/local/sbin/fmcluster-slurm-teams` on the node that runs slurmctld) holds",
        "every association under the accounts it marks (`Organization=fmcluster`) to the project file: a hand-added",
        "user is removed at the next run, and `fmcluster-slurm-teams check` fails while one is there. A member or a",
        "team removed while its jobs run is blocked for new submissions (`MaxSubmitJobs=0`) and removed by a later",
        "run once its jobs end (`check` exits 3 meanwhile); the cluster update does not fail. Members need a Linux",
        "account with the same UID on every node (fmcluster does not create users): the script names a member with",
        "no account on slurmctld's node, and runs `scontrol reconfigure` when slurmctld does not yet know a member's",
        "UID (Slurm refuses such a member with the same \"Invalid account\" message as a user in no team).",
        "",
        "A job asking for more nodes than its team's cap is refused at submit (`QOSGrpNodeLimit`, the QoS's",
        "`Flags=DenyOnLimit`) instead of waiting for ever. `fmcluster acceptance render` and `acceptance first-job`",
        "on a project with Slurm teams need `--account TEAM`: the jobs run as that team (`#SBATCH --account`) on its",
        "nodes of each group, submitted by one of its members.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check``, compare) ``docs/teams.md``."""
    return write_or_check(DOC, render(), argv)


if __name__ == "__main__":
    sys.exit(main())
