#!/usr/bin/env python3
"""CDK entry point: `npx cdk synth -c project=NAME` (default: default; `all` for every project)."""
import gc

# Importing CDK's Python modules creates some 175,000 long-lived objects (its classes) and no garbage; the cyclic
# collector would walk them some 300 times while they load (0.25 s of CPU). Off while they load, then frozen: later
# collections skip them. Reference counting frees everything as before.
gc.disable()
from fmcluster.stacks.app import main  # noqa: E402

gc.freeze()
gc.enable()
main()
