"""Make the helper modules of this folder (``ss_*.py``) importable from its tests."""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
