"""The API permission a GB200 node needs to find its UltraServer's IMEX members, exactly, and nothing of the kind
where no group needs IMEX: self-managed nodes call EC2 DescribeInstanceTopology (+ DescribeInstances for the
members' addresses), HyperPod nodes call HyperPod's node API (ListClusterNodes, DescribeClusterNode)."""

from __future__ import annotations

from support import Synthesized


def _statements(template: dict, prefix: str) -> dict[str, dict]:
    [policy] = [r for lid, r in template["Resources"].items()
                if r["Type"] == "AWS::IAM::Policy" and lid.startswith(prefix)]
    return {st["Sid"]: st for st in policy["Properties"]["PolicyDocument"]["Statement"]}


def _actions(statement: dict) -> list[str]:
    actions = statement["Action"]
    return [actions] if isinstance(actions, str) else actions


def test_self_managed_gb200_nodes_may_read_the_instance_topology(synthesized: Synthesized) -> None:
    reads = _actions(_statements(synthesized.template("p6e-gb200-ultraserver-cluster"), "NodeHealthPolicy")["DescribeNodes"])
    assert sorted(reads) == ["autoscaling:DescribeAutoScalingInstances", "ec2:DescribeInstanceTopology",
                             "ec2:DescribeInstances"]


def test_nodes_without_imex_get_no_ec2_reads(synthesized: Synthesized) -> None:
    reads = _actions(_statements(synthesized.template("p4d-on-demand-cluster"), "NodeHealthPolicy")["DescribeNodes"])
    assert reads == ["autoscaling:DescribeAutoScalingInstances"]


def test_hyperpod_gb200_nodes_may_list_their_clusters_nodes_and_nothing_of_ec2(synthesized: Synthesized) -> None:
    statements = _statements(synthesized.template("p6e-gb200-hyperpod-cluster"), "HyperPodExecutionPolicy")
    members = statements["FindUltraServerMembers"]
    assert sorted(_actions(members)) == ["sagemaker:DescribeClusterNode", "sagemaker:ListClusterNodes"]
    assert members["Resource"] == {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":sagemaker:",
                                                     {"Ref": "AWS::Region"}, ":", {"Ref": "AWS::AccountId"},
                                                     ":cluster/*"]]}
    granted = {a for st in statements.values() for a in _actions(st)}
    assert not {a for a in granted if a.startswith("ec2:Describe") and "Instance" in a}


def test_hyperpod_without_imex_gets_no_node_api(synthesized: Synthesized) -> None:
    statements = _statements(synthesized.template("p5en-hyperpod-cluster"), "HyperPodExecutionPolicy")
    assert "FindUltraServerMembers" not in statements
