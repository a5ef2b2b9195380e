# Every target builds the local virtual environment first, so a fresh clone needs only `make`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev,hf]" -c constraints.txt
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/alemlite demo

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/pytest -n 2 --dist loadfile -q

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: $(STAMP)
	$(BIN)/python -m benchmarks.dining_throughput

clean:
	rm -rf $(VENV) runs .pytest_cache .ruff_cache
