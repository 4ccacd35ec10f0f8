"""The jsii floor: a CDK app with one resource. Nothing can synthesize faster than this.

``FLOOR_BARE=1`` also turns off CDK's built-in CloudFormation validation engine (as
fmcluster's app does), leaving only the cost of starting jsii and synthesizing.
"""
import os

from aws_cdk import App, CfnResource, Stack

app = App(builtin_cloud_formation_validation=False) if os.environ.get("FLOOR_BARE") == "1" else App()
stack = Stack(app, "floor")
CfnResource(stack, "Handle", type="AWS::CloudFormation::WaitConditionHandle")
app.synth()
