"""The analysis defaults: which Top-N entries are analysed when no flag says otherwise.

A leaf (it imports nothing, of the package or beyond): the parser (``cli/args.py``, whose
analysis arguments ``roofline analyze``, ``rounds``, ``playbook``, ``dash`` and ``demo`` share)
states them in its help without importing the engine, and the engine (``core/analyze.py``)
analyses with them — one value, read by both.
"""

# an entry is a head when its pct_gpu_time (or serving_weighted_pct) is at least this
DEFAULT_HEAD_THRESHOLD_PCT = 5.0
# at most this many heads, biggest first
DEFAULT_MAX_HEADS = 8
