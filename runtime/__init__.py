"""Run-time concerns shared by every package: the lowest floor, knowing no model and no graph.

What lives here: run-time errors and limits (stops with what was found so far), the choice
between NumPy and CuPy, moving arrays to the host, recognising the device's out-of-memory
errors, the process's memory, and (``runtime.comm``) the collective operations that let one
search run over several processes or GPUs. Nothing here imports another package of the
project; every package may import it.
"""
