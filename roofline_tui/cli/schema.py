"""``roofline schema``: print the JSON Schema of ``profile_roofline.json``."""

from __future__ import annotations

import argparse
import json
import sys


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("schema", help="print the JSON Schema of profile_roofline.json",
                       description="Print the JSON Schema of the artifact (profile_roofline.json). "
                                   "Unknown extra fields are allowed, as upstream files carry "
                                   "them.")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--topn", action="store_true",
                       help="print instead the JSON Schema of the Top-N extension our "
                            "importers write under x_roofline (profile_topN.json)")
    which.add_argument("--diff", action="store_true",
                       help="print instead the JSON Schema of `roofline diff --json`")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if getattr(args, "topn", False):
        from roofline_tui.core.topn_ext import schema  # the engine: only to run

        doc = schema()
    elif getattr(args, "diff", False):
        from roofline_tui.core.diff import Diff

        doc = Diff.model_json_schema()
    else:
        from roofline_tui.core.artifact import artifact_json_schema

        doc = artifact_json_schema()
    sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return 0
