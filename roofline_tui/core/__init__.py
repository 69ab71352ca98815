"""The pure engine: loaders, op-class models, metrics, routing and writers.

Nothing under this package may import textual (a test checks it in a subprocess).
"""
