# Two commands set everything up: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PLUGIN_DIRS := $(wildcard plugins/*/pyproject.toml)
# -qq: errors only. A newcomer saw ~100 lines of warnings (index locations this machine's
# pip config names but lacks, setuptools' editable-install notice) and nothing they could act on.
PIP := $(BIN)/python -m pip install -qq --disable-pip-version-check
# Each stamp is one layer of the install; a later target adds only the layers it lacks, so
# `make demo` (base) followed by `make test` installs the dev tools and the embeddings extra.
BASE_STAMP := $(VENV)/.installed-base
EMBEDDINGS_STAMP := $(VENV)/.installed-embeddings
DEV_STAMP := $(VENV)/.installed-dev
CHROMIUM ?= /usr/bin/chromium

STAGE ?= dev

.PHONY: install install-base install-embeddings test-tools test check lint typecheck unit demo \
	demo-formations serve bench bench-targets bench-console clean package deploy cli-operations

# Everything: what `make test` needs (dev tools, the embeddings extra, infra linting).
install: $(DEV_STAMP)

# What the demo and `pawl serve` need (the `local` extra: moto's server, rich, PyYAML), and
# nothing heavier (no torch). `pip install .` alone is the API client and plugin API.
install-base: $(BASE_STAMP)

# The `local` embedding backend: torch (CPU) and sentence-transformers, about 1 GB.
install-embeddings: $(EMBEDDINGS_STAMP)

# pip stays below 26.3, which chalice 1.34 requires (a newer pip makes every later install
# print a resolver error).
$(BASE_STAMP): pyproject.toml $(PLUGIN_DIRS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade 'pip<26.3'
	$(PIP) -e '.[local]' $(foreach p,$(PLUGIN_DIRS),-e $(dir $(p)))
	touch $@

$(EMBEDDINGS_STAMP): $(BASE_STAMP)
	$(PIP) -e '.[embeddings]'
	touch $@

$(DEV_STAMP): $(BASE_STAMP) $(EMBEDDINGS_STAMP) requirements-infra.txt
	$(PIP) -e '.[local,dev,embeddings]'
	$(PIP) --no-deps -r requirements-infra.txt
	touch $@

# The report's layout test renders it in Debian's Chromium (never a downloaded browser);
# the README quickstart's test runs its commands, which read fields with jq.
test-tools:
	test -x $(CHROMIUM) && command -v jq >/dev/null || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium jq)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy

unit: install test-tools
	$(BIN)/pytest -n 2

test: install test-tools lint typecheck unit

# The edit loop's fast lane: lint and every test not marked `slow` (no subprocesses, no
# end-to-end runs, no browser). `make test` runs everything.
check: install
	$(BIN)/ruff check .
	$(BIN)/pytest -n 2 -m 'not slow'

demo: install-base
	$(BIN)/pawl demo

# The demo's suite as code: `pawl plan` / `pawl apply` of examples/support-suite.yaml.
demo-formations: install-base
	$(BIN)/pawl demo --formations

serve: install-base
	$(BIN)/pawl serve

bench: install
	$(BIN)/python bench/run_throughput.py
	$(BIN)/python bench/settle.py
	$(BIN)/python bench/cli_startup.py
	$(BIN)/python bench/latency.py

# Issue 27's "keep what holds" table: 1k and 100k runs through pawl serve and the kill -9
# matrix (about 15-20 minutes on an idle 2-core machine, far longer on a loaded one;
# docs/scaling.md).
bench-targets: install
	$(BIN)/python bench/scale.py --targets

# The API commands' table the CLI reads at start-up (pawl/cli/operations.json), from the
# routes; tests/unit/test_operation_table.py fails until it is rewritten after a route change.
cli-operations: install-base
	$(BIN)/python -m pawl.cli.generate

# The console's pages over a 100,000-item run and an eval with 500 runs (about 15 minutes,
# most of it seeding; BENCH_ARGS=--quick for a 2,000-item smoke run). docs/scaling.md.
bench-console: install
	$(BIN)/python bench/console_size.py $(BENCH_ARGS)

# dist/$(STAGE)/: sam.json (SAM template, cfn-lint clean) and deployment.zip.
package: install
	$(BIN)/python -m chalicelib.infra package --stage $(STAGE) $(PACKAGE_ARGS)

# Needs the AWS CLI, credentials, and an S3 bucket for the code (ARTIFACT_BUCKET).
# Not run in CI. README "Deploy to AWS".
deploy: package
	test -n "$(ARTIFACT_BUCKET)" || (echo "set ARTIFACT_BUCKET=<an S3 bucket for the code zip>" && exit 2)
	aws cloudformation package --template-file dist/$(STAGE)/sam.json \
		--s3-bucket $(ARTIFACT_BUCKET) --s3-prefix pawl-$(STAGE) \
		--output-template-file dist/$(STAGE)/packaged.yaml
	aws cloudformation deploy --template-file dist/$(STAGE)/packaged.yaml \
		--stack-name pawl-$(STAGE) --capabilities CAPABILITY_IAM CAPABILITY_AUTO_EXPAND

clean:
	rm -rf $(VENV) .pawl-state dist

# The client's methods (pawl/_operations.py), generated from the route table: rerun after a
# route changes (tests/unit/test_sdk_operations.py fails until then).
.PHONY: sdk
sdk: install
	$(BIN)/python -m pawl._generate
	$(BIN)/ruff format --check pawl/_operations.py
