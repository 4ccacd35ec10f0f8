"""The side path that talks to AWS, for the CLI's account commands only; synthesis never calls it.

- :mod:`~fmcluster.aws.session`: the one AWS session every command makes (Region, bounded waits) and the
  translation of what can go wrong into one line (:class:`AwsError`);
- :mod:`~fmcluster.aws.stacks`: read contracts back from deployed stacks' outputs (boto3);
- :mod:`~fmcluster.aws.grafana`: push dashboards to an Amazon Managed Grafana workspace;
- :mod:`~fmcluster.aws.pricing`: on-demand prices from the AWS Price List API (``plan --prices``);
- :mod:`~fmcluster.aws.stackstate`: the project's stacks as CloudFormation holds them (``status``, ``destroy``);
- :mod:`~fmcluster.aws.status` and :mod:`~fmcluster.aws.connect`: a cluster's state and nodes, the node a Session
  Manager session starts on (each orchestrator's module: ``selfmanaged``, ``parallelcluster``, ``hyperpod``, ``pcs``;
  shared shapes and EC2 reads in :mod:`~fmcluster.aws.nodes`), the alerts firing (:mod:`~fmcluster.aws.alerts`).

This module imports no boto3, so a command can catch :class:`AwsError` without loading it.
"""

ACCOUNT_EXIT = 1
"""Exit code when the account, its credentials or the network are the problem."""
INPUT_EXIT = 2
"""Exit code when what the user gave is the problem (an unknown profile, no Region, a Region the zone contradicts)."""


class StackOutputsError(RuntimeError):
    """A deployed stack is missing, or lacks an output the caller needs."""


class AwsError(RuntimeError):
    """One line that says what went wrong with the account, the network or the Region, and what to do.

    ``exit_code`` is :data:`ACCOUNT_EXIT` or :data:`INPUT_EXIT`.
    """

    def __init__(self, message: str, exit_code: int = ACCOUNT_EXIT) -> None:
        super().__init__(" ".join(message.split()))  # one line, whatever botocore's message held
        self.exit_code = exit_code
