"""AWS ParallelCluster 3 as the Slurm orchestrator: settings, config generation, checks, CLI.

No CDK here: :mod:`fmcluster.parallelcluster.generate` builds the cluster configuration as
plain data (strings may be CDK tokens); :mod:`fmcluster.stacks.parallelcluster` deploys it.
"""
