"""Device names without the peak table's models: arch keys, product keys, and which product of
the bundled table a device string names.

:mod:`roofline_tui.core.peaks` re-exports everything here. An importer identifies a device with
this module alone (:func:`bundled_products` reads the product column of the precompiled bundled
table, the file :mod:`roofline_tui.core.peaks` keeps in the user's cache): a trace import then
never loads pydantic or builds a model.
"""

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple, Protocol, TypeVar

from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.store import read_bytes, read_json


class _HasProduct(Protocol):
    @property
    def product(self) -> str | None: ...


_S = TypeVar("_S", bound=_HasProduct)


GFX_RE = lazy_compile(r"gfx[0-9a-f]{3,5}")  # an AMD arch inside any string
_SM_RE = lazy_compile(r"^(?:sm|compute)[_ ]?(\d{2,3})[a-z]?$")
CC_RE = lazy_compile(r"^(\d{1,2})\.(\d)[a-z]?$")  # a compute capability "9.0"
_TARGET_VERSION_RE = lazy_compile(r"^\d{5,6}$")

_CODENAMES = {
    "cdna2": "gfx90a",
    "cdna3": "gfx942",
    "cdna4": "gfx950",
    "ampere": "sm_80",
    "hopper": "sm_90",
    "blackwell": "sm_100",
}


def gfx_from_target_version(value: int) -> str | None:
    """ROCm ``Gfx_Target_Version`` (major*10000 + minor*100 + stepping) -> ``gfxNNN``."""
    if value < 10000:
        return None
    major, minor, step = value // 10000, (value // 100) % 100, value % 100
    if minor > 15 or step > 15:
        return None
    return f"gfx{major}{minor:x}{step:x}"


def normalize_arch(name: object) -> str | None:
    """Canonical arch key: ``gfx950``, ``gfx90a``, ``sm_90``, ``sm_100`` ...

    Accepts ``gfx950:sramecc+:xnack-``, ``amdgcn-amd-amdhsa--gfx942``, ``sm90``, ``sm_90a``,
    ``compute_90``, a compute capability ``"9.0"`` and a ROCm target version such as ``90500``.
    Anything else comes back lower-cased and stripped, or ``None`` when empty.
    """
    if name is None or isinstance(name, bool):
        return None
    if isinstance(name, int):
        return gfx_from_target_version(name)
    if isinstance(name, float):
        name = f"{name:.1f}"
    if not isinstance(name, str):
        return None
    s = name.strip().lower()
    if not s:
        return None
    m = GFX_RE.search(s)
    if m:
        return m.group(0)
    s = s.split(":")[0].strip()
    m = _SM_RE.match(s)
    if m:
        return f"sm_{m.group(1)}"
    m = CC_RE.match(s)
    if m:
        return f"sm_{m.group(1)}{m.group(2)}"
    if _TARGET_VERSION_RE.match(s):
        return gfx_from_target_version(int(s)) or s
    return _CODENAMES.get(s, s)


_VENDOR_WORDS = ("amd", "nvidia", "instinct", "tesla", "radeon", "geforce", "ai", "pro")
# Spellings profilers print that the prefix rule below cannot reach, normalised, -> the
# normalised ``product`` of their peak-table section.
_PRODUCT_ALIASES = {
    "a100pcie80gb": "a10080gbpcie",
    "a10040gbpcie": "a100pcie40gb",
    "a100sxm80gb": "a100",
    "a100sxm40gb": "a100sxm440gb",
    "h100sxm": "h100",
    "gh200": "gh200480gb",
    "gh200144ghbm3": "gh200144ghbm3e",
    "mi250xpackage2gcds": "mi250xpackage",
    # the RTX PRO 6000 Blackwell's two full-power editions share one section (the 300 W Max-Q
    # edition runs lower clocks and is not aliased)
    "rtx6000blackwellworkstationedition": "rtx6000blackwell",
    "rtx6000blackwellserveredition": "rtx6000blackwell",
    "8060sgraphics": "8060s",
}
# what may follow a product name in a device string and still mean that product
_PRODUCT_SUFFIX_RE = lazy_compile(r"^(?:sxm\d?|oam|hgx|dgx|vf)*(?:\d+gb)?(?:hbm\d?e?)?(?:vf)?$")


def normalize_product(name: object) -> str | None:
    """``"AMD Instinct MI325X"`` -> ``"mi325x"``; ``"H100 SXM"`` -> ``"h100sxm"``."""
    if not isinstance(name, str):
        return None
    words = re.findall(r"[a-z0-9]+", name.lower())
    words = [w for w in words if w not in _VENDOR_WORDS]
    s = "".join(words)
    return s or None


# A100 SXM4 boards that print their board number instead of their memory size
# (``NVIDIA A100-PG509-200``): the device's memory tells the 40 GB part from the 80 GB one.
_A100_SXM4_BOARD_RE = lazy_compile(r"^a100pg5\d{5}$")
_A100_SXM4_BY_MEMORY = (("a100-sxm4-40gb", 40), ("a100", 80))  # (section product, GB)


def sized_board_product(name: object, mem_bytes: float | None) -> str | None:
    """The section product a board-number device name stands for, told apart by the device's
    memory (``totalGlobalMem``); ``None`` when ``name`` is not such a board or the memory is
    unknown or fits neither part. 40 GB parts report about 39.4 GiB, 80 GB parts about 79.2."""
    norm = normalize_product(name)
    if norm is None or not _A100_SXM4_BOARD_RE.match(norm) or not mem_bytes:
        return None
    gb = mem_bytes / 1e9
    for product, size_gb in _A100_SXM4_BY_MEMORY:
        if 0.9 * size_gb <= gb <= 1.1 * size_gb:
            return product
    return None


def match_product(name: object, sections: Iterable[_S]) -> _S | None:
    """The section whose ``product`` the device/product string names, or ``None``.

    Matching ignores case, spaces, punctuation and vendor words (``NVIDIA``, ``AMD Instinct``);
    a few spellings are aliased (``A100-PCIE-80GB``); a form-factor/memory suffix (``SXM5``,
    ``80GB HBM3``, ``OAM``, ``VF``) is tolerated, other suffixes (``PCIe``, ``NVL``) are not,
    because those parts have different bandwidth and get their own sections.
    """
    wanted = normalize_product(name)
    if not wanted:
        return None
    wanted = _PRODUCT_ALIASES.get(wanted, wanted)
    best: _S | None = None
    for sec in sections:
        have = normalize_product(sec.product)
        if not have:
            continue
        if wanted == have:
            return sec
        if wanted.startswith(have) and _PRODUCT_SUFFIX_RE.match(wanted[len(have) :]):
            if best is None or len(have) > len(normalize_product(best.product) or ""):
                best = sec
    return best


# ---------------------------------------------------------------------------------------------
# the bundled table's products, from its precompiled form


# A peak table is a page of prose with a few yaml blocks; anything larger is not one.
MAX_PEAKS_BYTES = 4 * 1024 * 1024
COMPILED_FORMAT = 1
_PEAKS_MODULE = Path(__file__).resolve().parent / "peaks.py"


def bundled_path() -> str:
    """The bundled ``data/peaks.md``: the file beside the package (an installed or editable
    tree), else where the package's resources say (a zipped install)."""
    beside = Path(__file__).resolve().parent.parent / "data" / "peaks.md"
    if beside.is_file():
        return str(beside)
    from importlib import resources  # costs a few ms of imports: only when it is needed

    return str(resources.files("roofline_tui").joinpath("data/peaks.md"))


def peaks_cache_dir() -> Path:
    """Where the precompiled bundled table is kept: ``$XDG_CACHE_HOME/roofline_tui`` (else
    ``~/.cache/roofline_tui``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "roofline_tui"


def compiled_location(md: bytes) -> tuple[str, Path]:
    """(digest, path) of the precompiled form of the table ``md``: keyed by a hash of the table
    *and* of the module that parses it (core/peaks.py), so that a changed table or a changed
    parser never reads a stale file."""
    import hashlib  # (OpenSSL: not loaded at import)

    digest = hashlib.sha256(md + b"\0" + _PEAKS_MODULE.read_bytes()).hexdigest()
    return digest, peaks_cache_dir() / f"peaks-{digest[:24]}.json"


class Compiled(NamedTuple):
    """A precompiled table's content, its shape checked (the sections' fields are not)."""

    sections: list[object]
    problems: list[str]


def read_compiled(md: bytes) -> tuple[str, Path, Compiled | None]:
    """(digest, path, content) of the precompiled form of ``md``; the content is None unless
    the file exists with the expected shape (format, digest, a list of sections, a list of
    problem strings). Raises OSError only for ``core/peaks.py`` itself unreadable."""
    digest, cache = compiled_location(md)
    try:
        doc = read_json(cache, max_bytes=MAX_PEAKS_BYTES)
    except (OSError, ValueError):
        return digest, cache, None
    if not (isinstance(doc, dict) and doc.get("format") == COMPILED_FORMAT
            and doc.get("sha256") == digest):
        return digest, cache, None
    sections, problems = doc.get("sections"), doc.get("problems")
    if not (isinstance(sections, list) and isinstance(problems, list)
            and all(isinstance(p, str) for p in problems)):
        return digest, cache, None
    return digest, cache, Compiled(sections, problems)


class ProductEntry(NamedTuple):
    """One section of the bundled table, as far as naming a device goes."""

    product: str | None
    gfx: str


def bundled_products() -> list[ProductEntry] | None:
    """The (product, arch) of every section of the bundled table, in the table's order, read
    from its precompiled form; None when there is none yet (or it does not match the table):
    the caller then loads the table itself (:func:`roofline_tui.core.peaks.load_peak_table`),
    which writes it."""
    try:
        md = read_bytes(Path(bundled_path()), max_bytes=MAX_PEAKS_BYTES)
        _digest, _cache, doc = read_compiled(md)
    except OSError:
        return None
    if doc is None:
        return None
    out: list[ProductEntry] = []
    for sec in doc.sections:
        if not isinstance(sec, dict):
            return None
        product, gfx = sec.get("product"), sec.get("gfx")
        if not isinstance(gfx, str) or not (product is None or isinstance(product, str)):
            return None  # not what the models would take: let them say so
        out.append(ProductEntry(product, gfx))
    return out
