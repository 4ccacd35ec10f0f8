#!/usr/bin/env python3
"""CDK entry point: `npx cdk synth -c project=NAME` (default: default; `all` for every project)."""
from fmcluster.stacks.app import main

main()
