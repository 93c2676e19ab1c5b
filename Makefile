# repairloop: `make test` and `make demo` work from a fresh clone with only Python and pip.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install lint test demo bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

install: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check repairloop tests
	$(BIN)/ruff format --check repairloop tests
	$(BIN)/mypy repairloop
	cd repairloop/runner/plugin && $(CURDIR)/$(BIN)/mypy --config-file $(CURDIR)/pyproject.toml --explicit-package-bases --cache-dir $(CURDIR)/.mypy_cache *.py

# Four workers on two cores: about half of the suite's time is spent waiting (test processes
# starting, timeouts the tests provoke), so more workers overlap the waits (on a quiet two-core
# machine: 399 s at -n 2, 343 s at -n 3, 319 s at -n 4, 327 s at -n 6).
test: lint
	$(BIN)/python -m pytest -q -n 4 --dist loadgroup

demo: $(STAMP)
	$(BIN)/repairloop run fixtures/demo

bench: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python tests/bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
