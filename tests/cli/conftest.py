"""Fixtures the command-line tests share with the suites of the code they drive.

``roofline rounds``/``playbook`` run on the edited demo copies of ``tests/core/rounds``, and
``roofline import`` through the ``cli`` runner of ``tests/importers``; they are imported here, not
redefined, so each fixture keeps one definition.
"""

from tests.core.rounds.conftest import demo, four_rounds, profile  # noqa: F401  (fixtures)
from tests.importers.conftest import cli  # noqa: F401  (fixture)
