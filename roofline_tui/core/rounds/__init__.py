"""The rounds of an optimisation run, on disk and compared (spec §8.3-§8.5).

Front ends import :mod:`roofline_tui.core.api`, not these modules. Bottom-up:

* :mod:`.records` — what a loaded round and a comparison hold (data only), and
  :func:`~.records.hardware_of`, the one answer to "which GPU did this round run on";
* :mod:`.reads` — each input file parsed once per analysis (a memo keyed by path and stat);
* :mod:`.fingerprint` — a round's inputs fingerprinted, the per-round cache keyed by them, and
  the one staleness rule (:func:`~.fingerprint.artifact_staleness`);
* :mod:`.analysis` — one round: load its inputs, analyse, write the artifact;
* :mod:`.snapshot` — one round loaded for comparison (stored artifact reused when current);
* :mod:`.compare` — rounds compared: movement, predicted vs actual, contradictions;
* :mod:`.annotate` — round-over-round fields in one round's artifact, and
  :func:`~.annotate.analyze_round_with_history`, what ``roofline analyze`` and the dashboard
  show;
* :mod:`.series` — view models for the dashboard and ``roofline rounds``;
* :mod:`.playbook` — the backend playbook, calibration and calibrated priors (spec §8.5).

The round-directory rule itself (file names, discovery, order, labels) is
:mod:`roofline_tui.core.layout`, a floor below: the importers and the watcher read it without
loading the engine. This package imports nothing.
"""
