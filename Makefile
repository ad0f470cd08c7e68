# Two commands set everything up: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PLUGIN_DIRS := $(wildcard plugins/*/pyproject.toml)

STAGE ?= dev

.PHONY: install test lint typecheck unit demo demo-formations serve bench clean package deploy

install: $(STAMP)

$(STAMP): pyproject.toml requirements-infra.txt $(PLUGIN_DIRS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,embeddings]' $(foreach p,$(PLUGIN_DIRS),-e $(dir $(p)))
	$(BIN)/python -m pip install --quiet --no-deps -r requirements-infra.txt
	touch $(STAMP)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy

unit: install
	$(BIN)/pytest -n 2

test: install lint typecheck unit

demo: install
	$(BIN)/pawl demo

# The demo's suite as code: `pawl plan` / `pawl apply` of examples/support-suite.yaml.
demo-formations: install
	$(BIN)/pawl demo --formations

serve: install
	$(BIN)/pawl serve

bench: install
	$(BIN)/python bench/run_throughput.py
	$(BIN)/python bench/settle.py

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
