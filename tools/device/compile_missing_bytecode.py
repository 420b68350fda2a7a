"""Compile the bytecode of every module that ``dvecost analyze --backend gpu`` imports and that
has none (run on the device, whose image sets PYTHONDONTWRITEBYTECODE and ships NumPy and
cuda-bindings without bytecode, so that every process compiles ~170 modules again, ~0.5 s):
what a ``pip install`` leaves. Prints the modules found without bytecode, by package, and
compiles the whole of each such package (modules imported later, during exploration or by
the cycle engine, included)."""

import collections
import compileall
import importlib.util
import os
import py_compile
import sys

import cupy

import dvecost.analysis  # noqa: F401
import dvecost.cli  # noqa: F401

cupy.empty(1)
missing = collections.Counter()
for name, m in list(sys.modules.items()):
    f = getattr(m, "__file__", None)
    if f and f.endswith(".py") and not os.path.exists(importlib.util.cache_from_source(f)):
        missing[name.split(".")[0]] += 1
        py_compile.compile(f, doraise=True)
print("bytecode missing for", sum(missing.values()), "modules:", dict(missing.most_common()))
for top in missing:
    m = sys.modules[top]
    for p in getattr(m, "__path__", []):   # packages only (a module was compiled above)
        if os.path.isdir(p) and "site-packages" in p:
            compileall.compile_dir(p, quiet=2, workers=8)
            print("compiled the package", p)
