"""roofline_tui: roofline headroom analysis for the head kernels of an LLM serving profile."""

__version__ = "0.1.0"
