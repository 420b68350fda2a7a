"""Run-time concerns shared by every package: the lowest floor, knowing no model and no graph.

- :mod:`runtime.errors`: the root of dvecost's errors and the errors of a run: limits that stop
  an exploration with what it found, stops from outside (signals, ``--timeout``), memory that
  ran out, a GPU that cannot be had;
- :mod:`runtime.device`: NumPy or CuPy (``backend='auto'|'cpu'|'gpu'``, the deferred device of
  ``auto``), the one way back to the host, the device's free memory and out-of-memory errors,
  the one fallback warning;
- :mod:`runtime.warmup`: the command line's start-up of CuPy and CUDA in the background;
- :mod:`runtime.memory`: this process's resident memory, now and at its peak;
- (``runtime.comm``) the collective operations that let one search run over several
  processes or GPUs;
- (``runtime.guard``) allocation failures agreed between processes: every process stops at
  the same collective;
- (``runtime.layout``) which process holds which ids of a graph spread over processes: runs of
  consecutive ids.

Nothing here imports another package of the project; every package may import it. Importing
``runtime`` imports none of its modules (and no CuPy).
"""
