# Two commands for a new user: `make run` (demo) and `make test` (suite).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
REPLOG := $(VENV)/bin/replog
SAMPLES := samples/generated
export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))

.PHONY: run test bench fuzz clean java

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(VENV)/.installed-run: pyproject.toml | $(PY)
	$(PY) -m pip install -q -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(PY)
	$(PY) -m pip install -q -e '.[test]'
	touch $@ $(VENV)/.installed-run

java: | $(PY)
	@$(PY) -m spark.java

run: $(VENV)/.installed-run java
	$(REPLOG) samples generate $(SAMPLES) --force
	$(REPLOG) ls $(SAMPLES)/kafka/broker-1
	$(REPLOG) doctor $(SAMPLES)/kafka/broker-1 || true
	$(REPLOG) fleet scan $(SAMPLES)/kafka --out $(SAMPLES)/fleet-out --force
	$(REPLOG) fleet report $(SAMPLES)/fleet-out

test: $(VENV)/.installed-test java
	$(PY) -m pytest

bench: $(VENV)/.installed-test
	$(PY) -m bench

clean:
	rm -rf $(VENV) $(SAMPLES)
