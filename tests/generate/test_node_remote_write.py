"""The self-managed nodes' role may remote-write to the project's own workspace, and only that (issue 12)."""

from __future__ import annotations

from support import Synthesized


def _statements(resources: dict, actions: str) -> list[dict]:
    return [s for r in resources.values() if r["Type"] == "AWS::IAM::Policy"
            for s in r["Properties"]["PolicyDocument"]["Statement"] if actions in str(s.get("Action"))]


def test_self_managed_nodes_remote_write_to_the_projects_workspace_only(synthesized: Synthesized) -> None:
    resources = synthesized.template("p4d-on-demand-cluster")["Resources"]
    (statement,) = _statements(resources, "aps:")
    assert statement["Action"] == "aps:RemoteWrite" and statement["Effect"] == "Allow"
    # the workspace ARN is this project's observability stack's output, never a wildcard
    output = statement["Resource"]["Fn::GetStackOutput"]
    assert output["StackName"] == "p4d-on-demand-observability"
    assert output["OutputName"].startswith("PublishOutputFnGetAttPrometheusWorkspaceArn")
    role = next(lid for lid, r in resources.items() if r["Type"] == "AWS::IAM::Role" and lid.startswith("NodeRole"))
    policy = next(r for r in resources.values() if r["Type"] == "AWS::IAM::Policy"
                  and "aps:RemoteWrite" in str(r["Properties"]["PolicyDocument"]))
    assert policy["Properties"]["Roles"] == [{"Ref": role}]
