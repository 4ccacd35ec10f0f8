"""One synthesis for ``fmcluster deploy``: the cloud assembly the guard judges is the one ``cdk deploy --app DIR``
deploys, so no second synthesis (with other context, another cdk.json, another checkout) can slip between them.

It builds the app as ``app.py`` does under the CDK CLI (:func:`fmcluster.stacks.app.build`: cdk-nag on unless
``-c nag=false``, termination protection unless ``-c protect=false``), with cdk.json's context, the ``-c`` values
the user gave, and the context the CLI itself adds to every synthesis (``contextFromSettings`` in the CDK CLI's
toolkit-lib ``api/cloud-assembly/environment.ts``: path and asset metadata, version reporting, bundling every stack),
so a stack first deployed by ``cdk deploy`` keeps its ``AWS::CDK::Metadata`` and its metadata.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fmcluster.stacks.app import build, new_app

CLI_CONTEXT = {
    # cdk deploy option -> the context key the CDK CLI sets to true unless the option is negated (--no-...)
    "path-metadata": "aws:cdk:enable-path-metadata",
    "asset-metadata": "aws:cdk:enable-asset-metadata",
    "version-reporting": "aws:cdk:version-reporting",
}
BUNDLING_STACKS = "aws:cdk:bundling-stacks"
DISABLE_STAGING = "aws:cdk:disable-asset-staging"
"""``--no-staging``: assets are used where they are instead of copied into the assembly."""


@dataclass(frozen=True)
class Assembly:
    directory: Path
    templates: dict[str, dict]
    """Stack name -> template, as written into ``directory``."""
    protected: dict[str, bool]
    """Stack name -> termination protection, as ``cdk deploy`` will set it."""


def cli_context(flags: dict[str, bool]) -> dict[str, object]:
    """The context the CDK CLI adds to a synthesis, given the ``--[no-]path-metadata``-style options seen
    (``flags``: option name -> its value; ``staging`` included)."""
    out: dict[str, object] = {key: True for option, key in CLI_CONTEXT.items() if flags.get(option, True)}
    if not flags.get("version-reporting", True):
        out["aws:cdk:disable-version-reporting"] = True
    if not flags.get("staging", True):
        out[DISABLE_STAGING] = True
    out[BUNDLING_STACKS] = ["**"]
    return out


def synthesize_assembly(ref: str, outdir: Path, context: dict[str, object]) -> Assembly:
    """The project ``ref`` synthesized into ``outdir`` with ``context`` (the user's ``-c`` values and
    :func:`cli_context`), as ``cdk synth -c project=REF`` writes it.

    Raises :class:`fmcluster.errors.ConfigError` for a bad file and ``RuntimeError`` (``ValidationFailed``) when
    cdk-nag refuses the templates (its findings are printed above).
    """
    app = new_app(outdir=str(outdir), context={**context, "project": ref})
    build(app, [ref])
    cloud = app.synth()
    return Assembly(directory=outdir,
                    templates={stack.stack_name: stack.template for stack in cloud.stacks},
                    protected={stack.stack_name: bool(stack.termination_protection) for stack in cloud.stacks})
