"""The key under which our importers write what the upstream Top-N schema has no field for
(``core.topn_ext`` holds its models; this module is imported by importers that must not load
pydantic models at start-up)."""

EXTENSION_KEY = "x_roofline"
EXTENSION_VERSION = 1

# the bounds of a recorded argument value (``args[].value``, Kineto's Concrete Inputs): the
# importer cuts to them and the Top-N's reader refuses past them
MAX_VALUE_CHARS = 64  # a recorded string value is cut to this many characters
MAX_VALUE_ITEMS = 16  # a recorded list value holds at most this many numbers
