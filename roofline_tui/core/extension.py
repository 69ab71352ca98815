"""The key under which our importers write what the upstream Top-N schema has no field for
(``core.topn_ext`` holds its models; this module is imported by importers that must not load
pydantic models at start-up)."""

EXTENSION_KEY = "x_roofline"
EXTENSION_VERSION = 1
