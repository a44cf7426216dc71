# Two commands for a new user: `make run` (demo) and `make test` (suite).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
REPLOG := $(VENV)/bin/replog
SAMPLES := samples/generated
FLEET_OUT := out/fleet
PAGES := out/pages
export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))

.PHONY: run test test-fast test-brokers brokers chromium lint bench golden fuzz clean java screenshots

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
	@$(PY) -m replog.spark.java

# The demo walkthrough. doctor and replay exit 1 on the planted damage and divergence: that is their job, so 1 is
# accepted, 2 is not.
run: $(VENV)/.installed-run java
	$(REPLOG) samples generate $(SAMPLES) --force
	$(REPLOG) ls $(SAMPLES)/kafka/broker-1
	$(REPLOG) doctor $(SAMPLES)/kafka/broker-2 $(SAMPLES)/kafka/broker-3 --html $(PAGES)/doctor.html || test $$? -eq 1
	$(REPLOG) replay b1=$(SAMPLES)/kafka/broker-1/orders-2 b2=$(SAMPLES)/kafka/broker-2/orders-2 b3=$(SAMPLES)/kafka/broker-3/orders-2 --html $(PAGES)/replay-orders-2.html || test $$? -eq 1
	$(REPLOG) impact b1=$(SAMPLES)/kafka/broker-1/orders-2 b2=$(SAMPLES)/kafka/broker-2/orders-2 b3=$(SAMPLES)/kafka/broker-3/orders-2 || test $$? -eq 1
	$(REPLOG) doctor $(SAMPLES)/rocketmq/damaged || test $$? -eq 1
	$(REPLOG) replay master=$(SAMPLES)/rocketmq/master slave=$(SAMPLES)/rocketmq/slave --protocol autoswitch --html $(PAGES)/replay-rocketmq.html || test $$? -eq 1
	$(REPLOG) impact master=$(SAMPLES)/rocketmq/master slave=$(SAMPLES)/rocketmq/slave --protocol autoswitch || test $$? -eq 1
	$(REPLOG) fleet scan $(SAMPLES)/kafka $(SAMPLES)/rocketmq --out $(FLEET_OUT) --force || test $$? -eq 1
	$(REPLOG) fleet report $(FLEET_OUT) --html $(PAGES)/fleet.html || test $$? -eq 1
	@echo "report pages: $(PAGES)/*.html"

# --durations: the slowest tests at the end of the run, to keep the whole under its 30 minutes.
# Three workers (pytest-xdist): the Kafka lab, the RocketMQ lab and the rest of the suite side by side (the labs wait
# on their JVMs most of the time); each lab and the Spark sessions stay on one worker (tests/conftest.py, xdist_group).
TEST_WORKERS ?= 3
test: $(VENV)/.installed-test java brokers chromium lint
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup --durations=25

# The broker lab's jars (tests/brokers/pom.xml), resolved once from Maven Central into ~/.cache/replog/brokers/.
# Without Maven or Java this says so and goes on: the lab's tests then skip, or fail under CI=true.
brokers: | $(PY)
	@$(PY) -m tests.brokers.jars || test "$$CI" != true

# Every lab scenario of every version (make test runs a bounded set of them).
test-brokers: $(VENV)/.installed-test brokers
	REPLOG_LAB=all $(PY) -m pytest -m brokers tests/brokers -p no:randomly

# The report pages are drawn by headless Chromium in the tests: installed from Debian's packages when missing and
# this runs as root (CI's clean machine); elsewhere the page tests say what to install.
chromium:
	@command -v chromium >/dev/null || { test "$$(id -u)" = 0 && command -v apt-get >/dev/null && \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
		|| echo "make: no chromium (Debian: apt-get install chromium); the page tests will skip"; }

# mypy cannot follow the editable install's import hook, so it checks a farm of symlinks,
# $(TYPECHECK)/replog/<folder> -> <folder> (and bench); its paths are mapped back to the folders.
TYPECHECK := $(VENV)/typecheck
lint: $(VENV)/.installed-test
	$(VENV)/bin/ruff check .
	@mkdir -p $(TYPECHECK)/replog
	@for p in formats recovery spark toolkit samples; do ln -sfn ../../../$$p $(TYPECHECK)/replog/$$p; done
	@ln -sfn ../../bench $(TYPECHECK)/bench
	@cd $(TYPECHECK) && { ../bin/mypy --config-file ../../pyproject.toml -p replog -p bench > mypy.out 2>&1; \
		rc=$$?; sed -E 's#^replog/(formats|recovery|spark|toolkit|samples)/#\1/#' mypy.out; exit $$rc; }

# Everything but the Spark session, the benchmark and the broker lab (real Kafka tools): no Java needed.
test-fast: $(VENV)/.installed-test
	$(PY) -m pytest -m "not spark and not bench and not brokers"

bench: $(VENV)/.installed-test brokers
	$(PY) -m bench --brokers

# Every command on the sample fleet and the real broker files, outputs hashed into $(GOLDEN)/SUMS: run it before and
# after a change that must not change behaviour, then `$(PY) -m bench.golden compare DIR_BEFORE DIR_AFTER`.
GOLDEN ?= out/golden
golden: $(VENV)/.installed-test java
	$(PY) -m bench.golden run $(GOLDEN) --spark

fuzz: $(VENV)/.installed-test
	$(PY) -m tests.fuzz --seconds $${FUZZ_SECONDS:-60}

# The report pages' pictures (docs/pages.md, in docs/screenshots/): the pages `make run` wrote, drawn by headless Chromium at 1200 px
# and palette-compressed (Debian: chromium, pngquant, optipng). NAME:HEIGHT picks the top of each page.
SHOTS := replay-orders-2:1500 replay-rocketmq:1400 fleet:1900 doctor:1500
screenshots: run
	@mkdir -p docs/screenshots
	@for shot in $(SHOTS); do name=$${shot%%:*}; height=$${shot##*:}; \
		chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars --window-size=1200,$$height \
			--screenshot=docs/screenshots/$$name.png file://$(abspath $(PAGES))/$$name.html 2>/dev/null; \
		pngquant --force --skip-if-larger --quality 60-90 --output docs/screenshots/$$name.png docs/screenshots/$$name.png; \
		optipng -quiet -o2 docs/screenshots/$$name.png; done
	@ls -l docs/screenshots

clean:
	rm -rf $(VENV) $(SAMPLES) out
