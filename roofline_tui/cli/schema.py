"""``roofline schema``: print the JSON Schema of ``profile_roofline.json``."""

from __future__ import annotations

import argparse
import json
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("schema", help="print the JSON Schema of profile_roofline.json",
                       description="Print the JSON Schema of the artifact (profile_roofline.json). "
                                   "Unknown extra fields are allowed, as upstream files carry "
                                   "them.")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from roofline_tui.core.artifact import artifact_json_schema  # the engine: only to run

    sys.stdout.write(json.dumps(artifact_json_schema(), indent=2, sort_keys=True) + "\n")
    return 0
