# Two commands do all the set-up: `make run` and `make test` (see README.md).
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
# Chart.js, marked, DOMPurify, highlight.js and KaTeX from npm (package-lock.json), served by the project itself.
VENDOR_STAMP := chat/static_vendor/.installed

.PHONY: run test install install-dev migrate bench screenshots clean

# Unless AGENT_MODULES is set (in the environment or .env), the demo team of agents/demo.py is
# served too, beside the demo agent the bootstrap seeds.
run: install migrate
	@if [ -z "$$AGENT_MODULES" ] && ! grep -qs '^AGENT_MODULES=' .env; then export AGENT_MODULES=agents.demo; fi; \
	$(PY) manage.py serve

test: install-dev
	bash scripts/test.sh

install: $(VENV)/.installed-runtime $(VENDOR_STAMP)
install-dev: $(VENV)/.installed-dev $(VENDOR_STAMP)

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed-runtime: requirements.txt | $(VENV)/bin/python
	$(PIP) install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

# requirements-dev.txt includes requirements.txt: one pip run resolves and installs both (from a
# clean clone, `make test` ran pip twice, the second resolving every runtime pin again).
$(VENV)/.installed-dev: requirements.txt requirements-dev.txt | $(VENV)/bin/python
	$(PIP) install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $(VENV)/.installed-runtime $@

$(VENDOR_STAMP): package.json package-lock.json scripts/vendor_static.sh
	bash scripts/vendor_static.sh
	touch $@

migrate: install
	$(PY) manage.py migrate --noinput
	$(PY) manage.py bootstrap

# The benchmarks of bench/README.md (about twenty minutes; the machine should be otherwise idle).
bench: install-dev
	$(PY) -m bench.run_write_cost sqlite
	$(PY) -m bench.run_write_cost postgres
	$(PY) -m bench.inprocess_runs sqlite
	$(PY) -m bench.inprocess_runs postgres
	$(PY) -m bench.session_quota sqlite
	$(PY) -m bench.session_quota postgres
	$(PY) -m bench.compare
	$(PY) -m bench.inprocess_http
	$(PY) -m bench.background
	$(PY) -m bench.sdk_call
	$(PY) -m bench.slow_streams --db sqlite,postgres
	$(PY) -m bench.slow_streams --db postgres --concurrency 1024 --run-threads 512 --warmup 40
	$(PY) -m bench.internals --db sqlite
	$(PY) -m bench.internals --db postgres --requests 200 --arms django-middleware,drf-render
	DB_POOL_TIMEOUT=1 $(PY) -m bench.internals --db postgres --only http --rounds 1 --requests 100 --arms django-handler --suffix _django_handler

# Re-take the README's pictures in docs/ (headless Chromium): every test named *screenshot*.
screenshots: install-dev
	SCREENSHOTS_DIR=docs $(PY) -m pytest tests/ui -q -k screenshot

clean:
	rm -rf $(VENV) var node_modules chat/static_vendor
