"""Importers: turn raw profiler output (PyTorch/Kineto traces, rocprofv3 kernel traces and rocpd
databases, Nsight Systems kernel summaries) into the upstream ``profile_topN.json``.

Each importer lives in its own module, and whoever runs one imports that module:
:mod:`.torch` (``import_torch``; a package), :mod:`.rocprof` (``import_rocprofv3``), :mod:`.nsys`
(``import_nsys``; a package: ``stats``, ``gpu_trace``, ``sqlite``), with what the two table
vendors share in :mod:`.tables` and the shared Top-N writer and ``ImportProblem`` in
:mod:`.common`. This package itself imports none of them, so ``roofline import torch`` never
pays for the table importers.
"""
