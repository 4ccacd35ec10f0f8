# fmcluster. `make synth` and `make test` set everything up on first use.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
PROJECT ?= default
# The ParallelCluster release, stated once in fmcluster/pcluster_facts.py.
PCLUSTER_VERSION := $(shell sed -n 's/^PCLUSTER_VERSION = "\(.*\)"/\1/p' fmcluster/pcluster_facts.py)
# jsii needs Node >= 22: use the one pinned in package.json, not the machine's.
export PATH := $(CURDIR)/node_modules/.bin:$(CURDIR)/$(VENV)/bin:$(PATH)
export CDK_DISABLE_CLI_TELEMETRY := true
# Bytecode cached as on a workstation, even where the machine's environment says not to (CI's sets
# PYTHONDONTWRITEBYTECODE): otherwise every process compiles fmcluster again (the CLI, `cdk synth`'s app) and
# every test worker rewrites every test module's asserts again (~10 s per worker).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup synth test rehearse bench plan docs prices clean pcluster-venv wheel-check prometheus3

setup: $(VENV)/.installed node_modules/.installed

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

synth: setup  ## synthesize projects/$(PROJECT).yaml to cdk.out/ and print its plan
	cdk synth -c project=$(PROJECT) --quiet --no-notices
	fmcluster diagram $(PROJECT) --optional --out cdk.out/$(PROJECT)-diagram.png
	fmcluster plan $(PROJECT)

plan: setup
	fmcluster plan $(PROJECT)

prices: setup  ## regenerate fmcluster/prices.json from the AWS Price List API (needs credentials; OFFLINE=1: without)
	$(PY) -m fmcluster.aws.pricetable $(if $(OFFLINE),--offline,)

docs: setup  ## regenerate docs/project-file.md (every key, from the pydantic models) and docs/teams.md (what teams mean)
	$(PY) -m fmcluster.generate.reference
	$(PY) -m fmcluster.generate.teamsdoc

test: setup pcluster-venv prometheus3  ## the full test suite: unit tests, cfn-lint, cdk-nag, shellcheck, promtool, ParallelCluster schema, deploy rehearsal
	$(PY) -m pytest -n auto --dist worksteal  # a worker per core; an idle one takes half of a busy one's queue

rehearse: setup  ## the deploy rehearsal alone: cdk bootstrap/deploy/destroy against moto on loopback (also in `make test`)
	$(PY) -m pytest -m rehearsal tests/rehearsal

# The Prometheus 3 LTS line the nodes run as their agent, for the agent tests (Debian's stable package, 2.42, stays the
# stand-in for Amazon Managed Prometheus): Debian sid's packages unpacked in .tools/ (tools/fetch_prometheus3.sh).
prometheus3: .tools/prometheus3/usr/bin/prometheus

.tools/prometheus3/usr/bin/prometheus: tools/fetch_prometheus3.sh
	tools/fetch_prometheus3.sh .tools/prometheus3

# ParallelCluster pins CDK v1 and jsii 1.85: its schema validator lives in a venv of its own.
pcluster-venv: .venv-pcluster/.installed

.venv-pcluster/.installed: fmcluster/pcluster_facts.py
	python3 -m venv .venv-pcluster
	.venv-pcluster/bin/pip install --quiet --upgrade pip
	.venv-pcluster/bin/pip install --quiet aws-parallelcluster==$(PCLUSTER_VERSION)
	touch $@

wheel-check: setup  ## build the wheel, install it in a fresh venv, plan/render/synthesize from it
	tools/check_wheel.sh

bench: setup pcluster-venv  ## synth-time benchmarks, where the time goes, bad-input refusal times (.bench/synth.json, profile.json, corpus.json; see bench/README.md)
	$(PY) bench/synth_bench.py
	$(PY) bench/synth_profile.py
	$(PY) bench/corpus_bench.py

clean:
	rm -rf cdk.out .bench .pytest_cache
