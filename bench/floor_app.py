"""The jsii floor: a CDK app with one resource. Nothing can synthesize faster than this.

``FLOOR_BARE=1`` also turns off CDK's built-in CloudFormation validation engine (as
fmcluster's app does), leaving only the cost of starting jsii and synthesizing.

``FLOOR_NAG=1`` adds cdk-nag's AwsSolutions pack as fmcluster's app adds it (a validation plugin).

``FLOOR_TEMPLATES=DIR`` (a cloud assembly of one project, e.g. the default's) replaces the one resource with that
project's resources and outputs, ``FLOOR_COPIES`` times (default 1), each a single L1 construct
(``CfnResource``/``CfnOutput``: one jsii round trip each, the fewest CDK allows) with the template's own
properties: the least any CDK app can spend to make the same templates, per project. Its ratios are the floor
of fmcluster's (``synth_bench.py``: ``l1_1``, ``l1_20``).
"""
import json
import os
from pathlib import Path

from aws_cdk import App, CfnOutput, CfnResource, Stack, Token, Validations

bare = os.environ.get("FLOOR_BARE") == "1"
app = App(builtin_cloud_formation_validation=False) if bare else App()
templates = os.environ.get("FLOOR_TEMPLATES")
if templates:
    manifest = json.loads((Path(templates) / "manifest.json").read_text())
    stacks = [(art.get("displayName", name), art["properties"]["templateFile"])
              for name, art in manifest["artifacts"].items() if art["type"] == "aws:cloudformation:stack"]
    for copy in range(int(os.environ.get("FLOOR_COPIES", "1"))):
        for name, template_file in stacks:
            template = json.loads((Path(templates) / template_file).read_text())
            stack = Stack(app, f"{name}-{copy:02d}")
            for logical_id, resource in template.get("Resources", {}).items():
                if resource["Type"] == "AWS::CDK::Metadata":
                    continue
                CfnResource(stack, logical_id, type=resource["Type"], properties=resource.get("Properties"))
            for key, output in template.get("Outputs", {}).items():
                export = output.get("Export", {}).get("Name")
                CfnOutput(stack, key, value=Token.as_string(output["Value"]),
                          export_name=f"{export}-{copy:02d}" if isinstance(export, str) else None)
else:
    stack = Stack(app, "floor")
    CfnResource(stack, "Handle", type="AWS::CloudFormation::WaitConditionHandle")
if os.environ.get("FLOOR_NAG") == "1":
    from cdk_nag import AwsSolutionsChecks

    Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))
app.synth()
