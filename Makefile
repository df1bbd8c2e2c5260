# Two entry points on a fresh machine (Debian/Ubuntu, no ROS installed): `make demo` and `make test`.
# Both create or reuse a venv with a pinned requirement set and this package installed in it.
#
#   ROS_DISTRO=jazzy (default) | kilted   which ROS 2 wheels from PyPI (requirements/<distro>.txt)
#   STACK=pip (default)   numpy, OpenCV, pyopencl, scipy pinned from PyPI (requirements/pip.txt)
#   STACK=apt             the distribution's python3-numpy/-opencv/-pyopencl/-scipy and
#                         pocl-opencl-icd (scripts/apt_stack.sh), the rest from requirements/apt.txt
#   STACK=oldest          Python 3.10 with the oldest supported numpy/OpenCV/pyopencl/scipy
#                         (requirements/oldest.txt); no ROS wheels exist for it: tests not marked ros
#   PYTEST_JOBS=2 (default)  test modules run in this many pytest-xdist workers, each module whole
#                         in one and each worker on a ROS domain of its own; 0 runs them in order
#
# Each combination has its own venv (.venv for the default, else .venv-<distro>-<stack>).
ROS_DISTRO ?= jazzy
STACK ?= pip
PYTEST_ARGS ?=
PYTEST_JOBS ?= 2

DISTROS := jazzy kilted
STACKS := pip apt oldest
ifeq ($(filter $(ROS_DISTRO),$(DISTROS)),)
$(error ROS_DISTRO=$(ROS_DISTRO): the set-up pins ROS 2 wheels for $(DISTROS) only; for Humble or another apt ROS follow README "On a robot")
endif
ifeq ($(filter $(STACK),$(STACKS)),)
$(error STACK=$(STACK): choose one of $(STACKS))
endif

ifeq ($(STACK)-$(ROS_DISTRO),pip-jazzy)
VENV ?= .venv
else ifeq ($(STACK),oldest)
VENV ?= .venv-oldest
else
VENV ?= .venv-$(ROS_DISTRO)-$(STACK)
endif
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

ifeq ($(STACK),oldest)
# pyenv's shim runs python3.10 only where 3.10 is a selected version: select it for this command.
PYTHON ?= PYENV_VERSION=3.10 python3.10
REQUIREMENTS := requirements/oldest.txt
PYTEST_MARKS := -m 'not ros'
else ifeq ($(STACK),apt)
PYTHON := /usr/bin/python3
REQUIREMENTS := requirements/apt.txt requirements/$(ROS_DISTRO).txt
VENV_FLAGS := --system-site-packages
else
PYTHON ?= python3
REQUIREMENTS := requirements/pip.txt requirements/$(ROS_DISTRO).txt
endif

# A regular (not editable) install: only it puts the ament index marker, package.xml, launch/ and
# config/ under the venv prefix. It is redone whenever a source of the package changes.
SOURCES := $(shell find cl_vision_nodes launch config resource -type f -not -name '*.pyc') \
	setup.py setup.cfg package.xml
# ROS 2 from PyPI wheels keeps its ament index under the venv prefix.
export AMENT_PREFIX_PATH := $(abspath $(VENV))$(if $(AMENT_PREFIX_PATH),:$(AMENT_PREFIX_PATH))
export RMW_IMPLEMENTATION ?= rmw_fastrtps_cpp

.PHONY: venv demo test bench clean

venv: $(STAMP)

# STACK=apt: pip may add packages beside the distribution's but never replace numpy, scipy or
# pyopencl (constraints.txt pins the installed versions; a conflict stops the install).
$(VENV)/.requirements: $(REQUIREMENTS) scripts/apt_stack.sh
ifeq ($(STACK),apt)
	bash scripts/apt_stack.sh
endif
	$(PYTHON) -m venv $(VENV_FLAGS) $(VENV)
ifeq ($(STACK),apt)
	bash scripts/apt_stack.sh --constraints $(PY) > $(VENV)/constraints.txt
	$(PY) -m pip install --quiet --disable-pip-version-check \
		$(addprefix -r ,$(REQUIREMENTS)) -c $(VENV)/constraints.txt
else
	$(PY) -m pip install --quiet --disable-pip-version-check $(addprefix -r ,$(REQUIREMENTS))
endif
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
# dependency: built from source when possible; without it the libelas comparisons skip. Built
# for each venv without pip's wheel cache: a wheel cached from the apt venv (numpy 1.24) fails
# to import under the pip stack's numpy 2 (its cache key is the sdist, not the numpy).
$(VENV)/.oracles: $(VENV)/.requirements
	CPPFLAGS="-I$$($(PY) -c 'import numpy; print(numpy.get_include())')" CFLAGS="-O3 -msse3" \
		$(PY) -m pip install --quiet --disable-pip-version-check --no-cache-dir \
		pyelas==1.0.1 || echo "pyelas did not build: libelas comparisons will be skipped"
	touch $@

test: $(STAMP) $(VENV)/.opencl $(VENV)/.oracles
	$(PY) -m pytest -q -n $(PYTEST_JOBS) --dist loadfile $(PYTEST_MARKS) $(PYTEST_ARGS) test

bench: $(STAMP) $(VENV)/.opencl $(VENV)/.oracles
	$(VENV)/bin/cl-vision bench all

clean:
	rm -rf .venv .venv-* build install log *.egg-info
