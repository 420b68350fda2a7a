"""``dvecost`` as the program, with explorer settings changed first (an experiment driver, run
on the device): ``DMR=4096 python3 tools/device/variant.py analyze M.dve --backend gpu``.

DMR: ``Explorer.device_min_rows`` (the chunk size at which exploration moves to the device).
"""
import os
import sys

from statespace.explore import Explorer

if os.environ.get("DMR"):
    Explorer.device_min_rows = int(os.environ["DMR"])
from dvecost.cli import main  # noqa: E402

sys.argv[0] = "dvecost"
raise SystemExit(main())
