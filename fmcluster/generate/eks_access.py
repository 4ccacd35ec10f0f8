"""How a person reaches a HyperPod EKS cluster's Kubernetes API with the project's endpoint settings: the commands
``fmcluster first-job`` and ``fmcluster acceptance`` print before their kubectl steps, and docs/hyperpod-eks.md
explains.

The cluster uses API authentication and gives its creator no access: only ``orchestrator.hyperpod_eks.admins`` hold
cluster admin (an access entry each). Its endpoint is private unless the project opens it to
``public_access_cidrs``:

- **public** (to the project's CIDRs): ``aws eks update-kubeconfig`` and kubectl from a machine in those networks;
- **private**: the endpoint answers inside the VPC only, and its security group admits HTTPS from the HyperPod nodes.
  A Session Manager port-forwarding session through a node (``AWS-StartPortForwardingSessionToRemoteHost``: AWS
  Systems Manager user guide, "Port forwarding to a remote host") carries the workstation's local port to the
  endpoint's port 443; kubectl then talks to ``https://127.0.0.1:PORT`` and checks the certificate against the
  endpoint's own name (``--tls-server-name``). HyperPod's Session Manager target
  (``sagemaker-cluster:<id>_<group>-<instance>``, ``fmcluster connect --print``) takes session documents of the
  port type (AWS's HyperPod ``easy-ssh.sh`` starts ``AWS-StartSSHSession`` on it); that it takes this one is
  **unconfirmed** offline: where it does not, use a public endpoint limited to your CIDRs.
"""

from __future__ import annotations

from fmcluster.contracts import EKS_CLUSTER_NAME_OUTPUT, stack_name
from fmcluster.plan import ClusterPlan

LOCAL_PORT = 8443
"""The workstation's end of the tunnel (any free port above 1024: kubectl needs no privilege)."""
PORT_FORWARD_DOCUMENT = "AWS-StartPortForwardingSessionToRemoteHost"
"""AWS's Session Manager document for a tunnel to a host the target reaches (parameters ``host``, ``portNumber``,
``localPortNumber``; AWS Systems Manager user guide, "Start a session", port forwarding to remote hosts)."""
DOCS = "docs/hyperpod-eks.md"


def access_commands(cluster: ClusterPlan, region: str | None = None) -> list[tuple[str, str]]:
    """(what, command) in order: a person who holds one of the admins' roles runs them on a workstation."""
    eks = cluster.hyperpod_eks
    where = f" --region {region}" if region else ""
    stack = stack_name(cluster.project, "cluster")
    name = (f"EKS=$(aws cloudformation describe-stacks{where} --stack-name {stack} --query "
            f"\"Stacks[0].Outputs[?OutputKey=='{EKS_CLUSTER_NAME_OUTPUT}'].OutputValue\" --output text)")
    kubeconfig = f"aws eks update-kubeconfig{where} --name \"$EKS\""
    steps = [("the EKS cluster's name (the cluster stack's output)", name),
             ("a kubeconfig entry for it (as one of orchestrator.hyperpod_eks.admins)", kubeconfig)]
    if eks.public_endpoint:
        return [*steps, (f"from a network in public_access_cidrs ({', '.join(eks.public_access_cidrs)})",
                         "kubectl get nodes")]
    host = (f"HOST=$(aws eks describe-cluster{where} --name \"$EKS\" --query cluster.endpoint --output text "
            "| sed 's|^https://||')")
    tunnel = (f"$(fmcluster connect {cluster.project} --print) --document-name {PORT_FORWARD_DOCUMENT} "
              f"--parameters \"host=$HOST,portNumber=443,localPortNumber={LOCAL_PORT}\"")
    server = (f"kubectl config set-cluster \"$(aws eks describe-cluster{where} --name \"$EKS\" --query cluster.arn "
              f"--output text)\" --server https://127.0.0.1:{LOCAL_PORT} --tls-server-name \"$HOST\"")
    return [*steps, ("the private endpoint's host name", host),
            (f"in a second terminal, keep a tunnel open to it through a HyperPod node (Session Manager; leaves "
             f"127.0.0.1:{LOCAL_PORT} listening)", tunnel),
            ("point the kubeconfig entry at the tunnel, checking the endpoint's own certificate name", server),
            ("then, while the tunnel is open", "kubectl get nodes")]


def access_text(cluster: ClusterPlan, region: str | None = None) -> str:
    """The steps as text for a terminal: what each does, then the command, indented."""
    endpoint = (f"public, open to {', '.join(cluster.hyperpod_eks.public_access_cidrs)}"
                if cluster.hyperpod_eks.public_endpoint else "private: through a Session Manager tunnel")
    lines = [f"Reach the Kubernetes API (endpoint {endpoint}; {DOCS}):"]
    for what, command in access_commands(cluster, region):
        lines += [f"  # {what}", f"  {command}"]
    return "\n".join(lines)
