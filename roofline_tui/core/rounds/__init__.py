"""The rounds of an optimisation run, on disk and compared (spec §8.3-§8.5).

* :mod:`.layout` — the one round-directory rule: file names, discovery, order, labels;
* :mod:`.analysis` — one round: load its inputs, analyse, write the artifact;
* :mod:`.snapshot` — one round loaded for comparison (stored artifact reused when current);
* :mod:`.fingerprint` — a round's inputs fingerprinted, and the per-round cache keyed by them;
* :mod:`.compare` — rounds compared: movement, predicted vs actual, contradictions;
* :mod:`.annotate` — round-over-round fields in one round's artifact, and
  :func:`analyze_round_with_history`, what ``roofline analyze`` and the dashboard show;
* :mod:`.series` — view models for the dashboard and ``roofline rounds``;
* :mod:`.playbook` — the backend playbook, calibration and calibrated priors (spec §8.5).

Import from the modules themselves: this package imports nothing, so reading the round layout
(:mod:`.layout`, no engine import) stays cheap for the importers and the watcher.
"""
