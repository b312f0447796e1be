# Two commands do all the set-up: `make run` and `make test` (see README.md).
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip

.PHONY: run test install install-dev migrate bench clean

run: install migrate
	$(PY) manage.py serve

test: install-dev
	bash scripts/test.sh

install: $(VENV)/.installed-runtime
install-dev: $(VENV)/.installed-dev

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed-runtime: requirements.txt | $(VENV)/bin/python
	$(PIP) install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements.txt requirements-dev.txt $(VENV)/.installed-runtime
	$(PIP) install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

migrate: install
	$(PY) manage.py migrate --noinput
	$(PY) manage.py bootstrap

bench: install-dev
	$(PY) -m bench

clean:
	rm -rf $(VENV) var
