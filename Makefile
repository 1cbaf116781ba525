# Longshore: two commands for a newcomer, `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
CDK_DIR := .cdk-cli
CDK := $(CDK_DIR)/node_modules/.bin/cdk
ASLV := $(CDK_DIR)/node_modules/.bin/asl-validator
CLUSTER ?= demo
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export CDK_DISABLE_VERSION_CHECK := 1
export CDK_DISABLE_CLI_TELEMETRY := true
export MOTO_EC2_LOAD_DEFAULT_AMIS := false
export AWS_DEFAULT_REGION ?= us-east-1

.PHONY: demo test test-fast lint unit bench bench-scale synth tools clean chaos fuzz

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip==26.3
	$(PY) -m pip install -q -e . --group dev --group infra
	touch $(STAMP)

$(CDK_DIR)/.installed: infra/package.json
	mkdir -p $(CDK_DIR)
	cp infra/package.json infra/package-lock.json $(CDK_DIR)/ 2>/dev/null || cp infra/package.json $(CDK_DIR)/
	cd $(CDK_DIR) && npm ci --no-audit --no-fund --silent 2>/dev/null || (cd $(CDK_DIR) && npm install --no-audit --no-fund --silent)
	touch $@

tools: $(STAMP) $(CDK_DIR)/.installed

demo: $(STAMP)
	$(VENV)/bin/longshore demo

lint: $(STAMP)
	$(VENV)/bin/ruff check functions sim infra tests bench app.py
	$(VENV)/bin/ruff format --check functions sim infra tests bench app.py
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy infra app.py
	$(VENV)/bin/lint-imports

unit: tools
	PATH="$(CURDIR)/$(CDK_DIR)/node_modules/.bin:$$PATH" $(VENV)/bin/pytest -n 2 --dist loadgroup

test: lint unit

# The fast loop while editing: every test not marked `slow` (tests/README.md says what is), in one process.
test-fast: tools
	PATH="$(CURDIR)/$(CDK_DIR)/node_modules/.bin:$$PATH" $(VENV)/bin/pytest -m "not slow" $(ARGS)

chaos: $(STAMP)
	$(VENV)/bin/longshore chaos --seeds $${SEEDS:-200} --jobs 2 --report reports/chaos

fuzz: $(STAMP)
	$(PY) -m tests.fuzz.run $(ARGS)

bench: $(STAMP)
	$(PY) -m bench.run

bench-scale: $(STAMP)
	$(PY) -m bench.scale $(ARGS)

synth: tools
	$(CDK) synth -c cluster=$(CLUSTER) --no-notices --no-version-reporting -q

clean:
	rm -rf $(VENV) $(CDK_DIR) cdk.out .mypy_cache .pytest_cache .ruff_cache
