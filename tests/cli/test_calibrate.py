"""``roofline calibrate`` on CPU: the sweep, its stopping rule and budget, the section writer and
the output rule, all driven by a synthetic GPU; the command without PyTorch or without a GPU in
a subprocess.

The synthetic GPU is a roofline: one matmul takes ``max(flops / (peak × efficiency), bytes /
bandwidth) + launch``, where the efficiency models wave quantisation over 132 SMs (256×256
tiles) and the k-loop's prologue, so the rate depends on the shape and has a maximum just below
the peak. Its clock only moves when it is asked to time something, so every run is exact and
instant.
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import textwrap
import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from roofline_tui.calibrate import (
    DEFAULT_OUT,
    Calibration,
    CopyResult,
    DeviceInfo,
    DtypeResult,
    Plateau,
    Shape,
    ShapeResult,
    ShapeSearch,
    SweepSettings,
    TimingPlan,
    choose_output,
    data_sheet_for,
    render_section,
    run_calibration,
    settings_for,
    sweep_dtype,
    write_section,
)
from roofline_tui.calibrate import sweep as sweep_mod
from roofline_tui.calibrate.section import MEASURED_SOURCE
from roofline_tui.cli import calibrate as cli_calibrate
from roofline_tui.cli import main
from roofline_tui.core.peaks import load_peak_table, parse_peaks_md, resolve_peaks

from .helpers import one_line, roofline

WHEN = datetime(2025, 6, 1, 12, 30, 0, tzinfo=UTC)


class FakeGPU:
    """A deterministic device for the sweep: see the module docstring."""

    def __init__(self, *, peaks: dict[str, float] | None = None, bw: float = 4.0e12,
                 sms: int = 132, launch: float = 4e-6, shape_cost: float = 0.25,
                 copy_cost: float = 0.1, flat: bool = False,
                 lacks: dict[str, str] | None = None, fails: dict[str, str] | None = None,
                 name: str = "NVIDIA Fake X1", arch: str = "sm_90",
                 mem_bytes: int = 80 << 30) -> None:
        self.peaks = peaks if peaks is not None else {"bf16": 800e12, "fp16": 800e12,
                                                      "fp8": 1600e12}
        self.bw, self.sms, self.launch, self.flat = bw, sms, launch, flat
        self.shape_cost, self.copy_cost = shape_cost, copy_cost
        self.lacks = lacks if lacks is not None else {}
        self.fails = fails or {}
        self.name, self.arch, self.mem_bytes = name, arch, mem_bytes
        self.now = 0.0
        self.matmuls: list[tuple[int, int, int, str]] = []
        self.copies: list[int] = []

    def clock(self) -> float:
        return self.now

    def device_info(self) -> DeviceInfo:
        return DeviceInfo(name=self.name, arch=self.arch, vendor="nvidia", arch_raw="9.0",
                          index=0, torch="2.5.1+cu124", cuda="12.4", cu=self.sms,
                          mem_bytes=self.mem_bytes, l2_bytes=50 << 20)

    def unsupported(self, dtype: str) -> str | None:
        return self.lacks.get(dtype)

    def efficiency(self, m: int, n: int, k: int) -> float:
        if self.flat:
            return 1.0
        tiles = math.ceil(m / 256) * math.ceil(n / 256)
        waves = math.ceil(tiles / self.sms)
        return tiles / (waves * self.sms) * k / (k + 256)

    def matmul(self, m: int, n: int, k: int, dtype: str) -> float:
        self.matmuls.append((m, n, k, dtype))
        self.now += self.shape_cost
        if dtype in self.fails:
            raise RuntimeError(self.fails[dtype])
        flops = 2 * m * n * k
        size = 1 if dtype == "fp8" else 2
        moved = (m * k + n * k) * size + m * n * 2
        return max(flops / (self.peaks[dtype] * self.efficiency(m, n, k)),
                   moved / self.bw) + self.launch

    def copy(self, nbytes: int) -> float:
        self.copies.append(nbytes)
        self.now += self.copy_cost
        return 2 * nbytes / (0.9 * self.bw)


def calibrate(gpu: FakeGPU, settings: SweepSettings | None = None,
              dtypes: tuple[str, ...] = ("bf16", "fp16", "fp8")) -> Calibration:
    return run_calibration(gpu, settings or settings_for(), dtypes=dtypes, clock=gpu.clock,
                           now=lambda: WHEN)


# --------------------------------------------------------------------------- the sweep


def test_the_sweep_finds_the_fake_peak_within_tolerance() -> None:
    gpu = FakeGPU()
    cal = calibrate(gpu)
    for dtype, peak in gpu.peaks.items():
        res = cal.result(dtype)
        assert res is not None and res.best is not None, dtype
        assert 0.95 * peak <= res.best.flops_s <= peak, (dtype, res.best)
        # the neighbourhood walk improved on the first seed (8192³: 94% of peak here)
        first = res.history[0]
        assert res.best.flops_s > first.flops_s
    # the copy: 2 × size bytes over the fake's 90% stream efficiency
    assert cal.copy is not None
    assert cal.copy.bytes_s == pytest.approx(0.9 * gpu.bw)
    assert cal.copy.bytes_moved == 2 * cal.copy.nbytes == 2 << 30


def test_every_shape_is_on_the_256_grid_and_tried_once() -> None:
    gpu = FakeGPU()
    cal = calibrate(gpu)
    s = settings_for()
    for res in cal.dtypes:
        shapes = [h.shape for h in res.history]
        assert len(shapes) == len(set(shapes)) == res.tried
        for sh in shapes:
            assert all(d % 256 == 0 and s.min_dim <= d <= s.max_dim
                       for d in (sh.m, sh.n, sh.k)), sh


def test_the_stopping_rule_stops_early_when_the_best_holds() -> None:
    # flat device, no launch overhead: every shape runs at exactly the peak, so the first
    # shape stays the best and the sweep stops after `patience` more
    gpu = FakeGPU(flat=True, launch=0.0)
    settings = settings_for()
    res = sweep_dtype(gpu, "bf16", budget_s=1000.0, settings=settings, clock=gpu.clock)
    assert res.stopped == f"best held for {settings.patience} shapes"
    assert res.tried == settings.patience + 1
    assert res.seconds < 1000.0 / 10
    assert res.best is not None and res.best.flops_s == pytest.approx(800e12)


def test_gains_below_min_gain_do_not_keep_the_sweep_going() -> None:
    rule = Plateau(patience=3, min_gain=0.01, min_shapes=1)
    sh = Shape(1024, 1024, 1024)
    rates = [100.0, 100.5, 100.9, 101.2]  # each a new best, none 1% above the one before
    for r in rates:
        rule.observe(ShapeResult(sh, sh.flops / r))
    assert rule.best is not None and rule.best.flops_s == pytest.approx(101.2)
    assert rule.held == 3 and rule.done
    rule.observe(ShapeResult(sh, sh.flops / 110.0))  # a real gain resets the count
    assert rule.held == 0 and not rule.done
    rule.observe(None)  # a failed shape counts as one that did not beat the best
    assert rule.held == 1


def test_min_shapes_holds_off_the_stop() -> None:
    rule = Plateau(patience=1, min_shapes=5)
    sh = Shape(1024, 1024, 1024)
    for _ in range(4):
        rule.observe(ShapeResult(sh, 1.0))
    assert not rule.done
    rule.observe(ShapeResult(sh, 1.0))
    assert rule.done


@pytest.mark.parametrize("seconds", [3.0, 6.0, 20.0])
def test_seconds_bounds_the_whole_run(seconds: float) -> None:
    # a slow device that never stops on patience: the budget alone ends each sweep
    gpu = FakeGPU(shape_cost=0.5)
    settings = replace(settings_for(seconds=seconds), patience=10_000)
    cal = calibrate(gpu, settings, dtypes=("bf16", "fp16"))
    assert cal.elapsed_s <= seconds
    assert gpu.now <= seconds
    for res in cal.dtypes:
        assert res.stopped == "time budget"
        assert res.tried >= 1


def test_quick_is_about_ten_seconds_and_the_default_about_a_minute() -> None:
    assert settings_for(quick=True).seconds == 10.0
    assert settings_for().seconds == 60.0
    assert settings_for(quick=True, seconds=4).seconds == 4.0
    assert settings_for(quick=True).timing.repeats < settings_for().timing.repeats
    # the parser states these defaults without importing the sweep
    assert float(cli_calibrate.DEFAULT_SECONDS_HELP) == sweep_mod.DEFAULT.seconds
    assert float(cli_calibrate.QUICK_SECONDS_HELP) == sweep_mod.QUICK.seconds


def test_unused_time_passes_to_the_next_dtype() -> None:
    gpu = FakeGPU(flat=True, launch=0.0, shape_cost=0.5)
    settings = replace(settings_for(seconds=40.0), patience=4, min_shapes=1)
    cal = calibrate(gpu, settings, dtypes=("bf16", "fp16"))
    bf16, fp16 = cal.result("bf16"), cal.result("fp16")
    assert bf16 is not None and fp16 is not None
    assert bf16.stopped.startswith("best held") and fp16.stopped.startswith("best held")
    assert cal.elapsed_s < 40.0 / 2


def test_a_dtype_the_device_lacks_is_skipped_with_its_reason() -> None:
    gpu = FakeGPU(lacks={"fp8": "fp8 matmul needs sm_89 or newer; this is sm_80"})
    cal = calibrate(gpu)
    fp8 = cal.result("fp8")
    assert fp8 is not None and fp8.best is None and fp8.tried == 0
    assert fp8.skipped == "fp8 matmul needs sm_89 or newer; this is sm_80"
    assert not [m for m in gpu.matmuls if m[3] == "fp8"]  # never asked to run it
    assert [r.dtype for r in cal.dtypes] == ["bf16", "fp16", "fp8"]  # order kept
    text = render_section(cal)
    assert "fp8 (fp8 matmul needs sm_89 or newer; this is sm_80)" in text
    (sec,), problems = parse_peaks_md(text)
    assert problems == [] and set(sec.measured_flops) == {"bf16", "fp16"}
    assert sec.unmeasured is not None and "fp8: fp8 matmul needs sm_89" in sec.unmeasured


def test_a_dtype_whose_shapes_all_fail_is_given_up() -> None:
    gpu = FakeGPU(fails={"fp8": "CUBLAS_STATUS_NOT_SUPPORTED"})
    settings = settings_for()
    cal = calibrate(gpu, settings)
    fp8 = cal.result("fp8")
    assert fp8 is not None and fp8.best is None
    assert fp8.tried == settings.fail_limit and fp8.stopped == "failed"
    assert fp8.skipped is not None and "CUBLAS_STATUS_NOT_SUPPORTED" in fp8.skipped


def test_one_failing_shape_is_recorded_and_the_sweep_goes_on() -> None:
    gpu = FakeGPU()
    real = gpu.matmul

    def sometimes(m: int, n: int, k: int, dtype: str) -> float:
        if (m, n, k) == (4096, 4096, 4096):
            gpu.now += gpu.shape_cost
            raise RuntimeError("CUDA out of memory")
        return real(m, n, k, dtype)

    gpu.matmul = sometimes  # type: ignore[method-assign]
    res = sweep_dtype(gpu, "bf16", 30.0, settings_for(), clock=gpu.clock)
    assert res.best is not None
    assert res.errors == ["4096x4096x4096: CUDA out of memory"]


def test_shapes_too_large_for_the_device_memory_are_not_proposed() -> None:
    settings = settings_for()
    search = ShapeSearch(settings, dtype="bf16", mem_bytes=2 << 30)  # a quarter: 512 MiB
    seen: list[Shape] = []
    for _ in range(60):
        sh = search.propose(seen[-1] if seen else None)
        if sh is None:
            break
        seen.append(sh)
    assert seen and all(sh.operand_bytes("bf16") <= (2 << 30) // 4 for sh in seen)


# --------------------------------------------------------------------------- the section


def _section(text: str, tmp_path: Path) -> tuple[Path, list, list[str]]:
    path = tmp_path / "peaks.measured.md"
    write_section(path, text, replace=True)
    sections, problems = load_peak_table(path)
    return path, sections, problems


def _yaml_of(text: str) -> dict:
    import yaml

    return yaml.safe_load(text.split("```yaml\n", 1)[1].split("```", 1)[0])


BUNDLED = load_peak_table(None)[0]


def test_the_section_round_trips_through_the_loader(tmp_path: Path) -> None:
    """A part the bundled table does not know: the measurements are the whole section."""
    gpu = FakeGPU()
    cal = calibrate(gpu)
    sheet, note = data_sheet_for(cal.device, BUNDLED)
    assert sheet is None and "no section for NVIDIA Fake X1" in note
    text = render_section(cal, sheet=sheet, sheet_note=note,
                          command="roofline calibrate --quick")
    _path, sections, problems = _section(text, tmp_path)
    assert problems == []
    (sec,) = sections
    assert sec.gfx == "sm_90" and sec.product == "NVIDIA Fake X1"
    assert sec.source == "measured" and sec.default is True
    assert sec.cu == 132 and sec.l2_bytes == 50 << 20
    assert sec.flops == {}  # no data sheet known
    assert cal.copy is not None
    assert sec.hbm_bw_bytes_s == pytest.approx(cal.copy.bytes_s, rel=1e-4)  # the stream rate
    for dtype in ("bf16", "fp16", "fp8"):
        res = cal.result(dtype)
        assert res is not None and res.best is not None
        m = sec.measured_flops[dtype]
        assert m.flops == pytest.approx(res.best.flops_s, rel=1e-4)
        assert m.shape == str(res.best.shape) and m.date == "2025-06-01"
        assert m.source == MEASURED_SOURCE and m.stack == "torch 2.5.1+cu124, CUDA 12.4"
    peaks = resolve_peaks(sections, gfx="sm_90")  # a bare arch lookup finds it (default)
    assert peaks.source == "table"
    assert peaks.flops_basis == {"bf16": "measured", "fp16": "measured", "fp8": "measured"}
    # the fake runs bf16 and fp16 at one rate: the §8.2 check passes on the measurements
    assert peaks.compute_validated is True, peaks.compute_check
    assert resolve_peaks(sections, gfx="sm_90", device="NVIDIA Fake X1").product == sec.product


def test_a_known_part_keeps_its_data_sheet_beside_the_measurements(tmp_path: Path) -> None:
    gpu = FakeGPU(name="NVIDIA H200")
    cal = calibrate(gpu)
    sheet, note = data_sheet_for(cal.device, BUNDLED)
    assert sheet is not None and sheet.product == "h200", note
    text = render_section(cal, sheet=sheet, sheet_note=note)
    _path, sections, problems = _section(text, tmp_path)
    assert problems == []
    (sec,) = sections
    assert sec.product == "NVIDIA H200" and sec.flops == sheet.flops
    assert sec.hbm_bw_bytes_s == sheet.hbm_bw_bytes_s  # the memory roof stays the pin rate
    assert sec.source is not None and sec.source.startswith(sheet.source or "")
    data = _yaml_of(text)
    assert cal.copy is not None
    assert data["measured_hbm_bw_bytes_s"] == pytest.approx(cal.copy.bytes_s, rel=1e-4)
    assert data["calibration"]["hbm"]["share_of_pin_rate"] == pytest.approx(
        cal.copy.bytes_s / sheet.hbm_bw_bytes_s, abs=1e-4)
    peaks = resolve_peaks(sections, gfx="sm_90", device="H200")
    assert peaks.product == "NVIDIA H200"
    assert peaks.flops_basis["bf16"] == "measured" and peaks.flops_basis["fp32"] == "data sheet"
    assert peaks.flops["bf16"] == pytest.approx(sec.measured_flops["bf16"].flops)
    assert peaks.flops_data_sheet["bf16"] == sheet.flops["bf16"]
    assert peaks.compute_validated is True


def test_a_partition_does_not_inherit_the_whole_parts_data_sheet() -> None:
    gpu = FakeGPU(name="AMD Instinct MI300X", arch="gfx942", sms=38)
    sheet, note = data_sheet_for(calibrate(gpu, dtypes=("bf16",)).device, BUNDLED)
    assert sheet is None and "38" in note and "304" in note
    sheet, note = data_sheet_for(FakeGPU(name="AMD Instinct MI300X", arch="sm_90",
                                         sms=304).device_info(), BUNDLED)
    assert sheet is None and "gfx942" in note


def test_the_section_records_how_it_was_measured() -> None:
    cal = calibrate(FakeGPU(lacks={"fp8": "no fp8 here"}))
    text = render_section(cal, command="roofline calibrate --quick")
    data = _yaml_of(text)
    c = data["calibration"]
    assert c["date"] == "2025-06-01T12:30:00Z" and "2025-06-01" in text
    assert c["device_name"] == "NVIDIA Fake X1" and c["command"] == "roofline calibrate --quick"
    assert c["stack"] == {"torch": "2.5.1+cu124", "cuda": "12.4"}
    bf16 = cal.result("bf16")
    assert bf16 is not None and bf16.best is not None
    assert c["matmul"]["bf16"]["shape_mxnxk"] == str(bf16.best.shape)
    assert c["matmul"]["bf16"]["tflops"] == pytest.approx(bf16.best.flops_s / 1e12, abs=0.01)
    assert c["matmul"]["fp8"] == {"skipped": "no fp8 here"}
    assert c["hbm"]["copy_bytes"] == 1 << 30
    assert "fp8: no fp8 here" in data["measured_flops"]["unmeasured"]
    # the numbers are floats to YAML, not strings (PyYAML reads 8.0e12 as a string)
    assert isinstance(data["hbm_bw_bytes_s"], float)
    assert all(isinstance(v["flops"], float) for k, v in data["measured_flops"].items()
               if k in ("bf16", "fp16"))


def test_bf16_and_fp16_that_disagree_are_written_as_measured(tmp_path: Path) -> None:
    gpu = FakeGPU(peaks={"bf16": 800e12, "fp16": 600e12, "fp8": 1600e12})
    cal = calibrate(gpu)
    _path, sections, _problems = _section(render_section(cal), tmp_path)
    (sec,) = sections
    assert sec.measured_flops["bf16"].flops > sec.measured_flops["fp16"].flops * 1.2
    peaks = resolve_peaks(sections, gfx="sm_90")
    assert peaks.compute_validated is False  # §8.2: the loader refuses the compute axis
    assert any("mis-calibrated" in p for p in peaks.problems)


def test_odd_device_names_round_trip(tmp_path: Path) -> None:
    name = 'AMD Instinct MI300X "VF": #1\tx [bold]'
    gpu = FakeGPU(name=name, arch="gfx942")
    cal = calibrate(gpu)
    cal.device = replace(cal.device, arch_raw="gfx942:sramecc+:xnack-", vendor="amd",
                         hip="6.2.41133", cuda=None,
                         env={"PYTORCH_TUNABLEOP_ENABLED": "1"})
    text = render_section(cal)
    _path, sections, problems = _section(text, tmp_path)
    assert problems == []
    (sec,) = sections
    assert sec.product == name and sec.gfx == "gfx942"
    assert "\t" not in sec.title
    assert sec.measured_flops["bf16"].stack == (
        "torch 2.5.1+cu124, HIP 6.2.41133, PYTORCH_TUNABLEOP_ENABLED=1")
    data = _yaml_of(text)
    assert data["calibration"]["arch_reported"] == "gfx942:sramecc+:xnack-"
    assert data["calibration"]["stack"]["hip"] == "6.2.41133"
    assert data["calibration"]["stack"]["PYTORCH_TUNABLEOP_ENABLED"] == "1"


def test_no_section_without_a_bandwidth() -> None:
    cal = Calibration(device=FakeGPU().device_info(), started=WHEN, budget_s=1.0,
                      copy_error="boom",
                      dtypes=[DtypeResult("bf16", best=ShapeResult(Shape(1024, 1024, 1024),
                                                                   1e-3))])
    with pytest.raises(ValueError, match="boom"):
        render_section(cal)
    cal.copy = CopyResult(1 << 30, 1e-3)
    assert parse_peaks_md(render_section(cal))[0]


# --------------------------------------------------------------------------- the output rule


def test_output_rule(tmp_path: Path) -> None:
    default = choose_output(None, cwd=tmp_path)
    assert default.path == tmp_path / DEFAULT_OUT and not default.replace
    assert default.problem is None
    (tmp_path / DEFAULT_OUT).write_text("mine")
    refused = choose_output(None, cwd=tmp_path)
    assert refused.problem is not None and "--out" in refused.problem
    named = choose_output(tmp_path / DEFAULT_OUT)
    assert named.replace and named.problem is None
    assert choose_output(tmp_path / "nowhere" / "p.md").problem is not None
    assert choose_output(tmp_path).problem is not None  # a directory


def test_write_section_without_replace_never_touches_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "p.md"
    write_section(path, "first\n", replace=False)
    assert path.read_text() == "first\n"
    with pytest.raises(FileExistsError):
        write_section(path, "second\n", replace=False)
    assert path.read_text() == "first\n"
    write_section(path, "third\n", replace=True)
    assert path.read_text() == "third\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.md"]  # no temp file left


# --------------------------------------------------------------------------- the command


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> FakeGPU:
    gpu = FakeGPU(lacks={"fp8": "fp8 matmul needs sm_89 or newer; this is sm_80"})

    def open_fake(args: argparse.Namespace, settings: SweepSettings):
        gpu.timing = settings.timing  # type: ignore[attr-defined]
        return gpu, gpu.clock

    monkeypatch.setattr(cli_calibrate, "open_backend", open_fake)
    return gpu


def test_the_command_writes_a_section_analyze_can_load(fake_gpu: FakeGPU, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["calibrate", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "wrote peaks.measured.md" in out and "--peaks peaks.measured.md" in out
    assert "skipped: fp8 matmul needs sm_89" in out and "TFLOP/s" in out
    sections, problems = load_peak_table(tmp_path / "peaks.measured.md")
    assert problems == [] and len(sections) == 1 and sections[0].source == "measured"
    assert fake_gpu.timing == settings_for(quick=True).timing  # type: ignore[attr-defined]
    assert fake_gpu.now <= 10.0
    text = (tmp_path / "peaks.measured.md").read_text()
    assert '"roofline calibrate --quick"' in text


def test_the_command_respects_seconds_and_dtypes(fake_gpu: FakeGPU, tmp_path: Path) -> None:
    fake_gpu.shape_cost = 0.4
    out = tmp_path / "p.md"
    assert main(["calibrate", "--out", str(out), "--seconds", "3", "--dtypes", "bfloat16"]) == 0
    assert fake_gpu.now <= 3.0
    assert {m[3] for m in fake_gpu.matmuls} == {"bf16"}
    (sec,), _ = load_peak_table(out)
    assert set(sec.measured_flops) == {"bf16"}


def test_the_default_output_is_never_replaced(fake_gpu: FakeGPU, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "peaks.measured.md").write_text("my notes\n")
    assert main(["calibrate", "--quick"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "already exists" in err[0] and "--out" in err[0]
    assert (tmp_path / "peaks.measured.md").read_text() == "my notes\n"
    assert fake_gpu.matmuls == [] and fake_gpu.copies == []  # refused before measuring


def test_a_named_output_is_replaced(fake_gpu: FakeGPU, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "peaks.measured.md").write_text("old\n")
    assert main(["calibrate", "--quick", "--out", "peaks.measured.md"]) == 0
    assert load_peak_table(tmp_path / "peaks.measured.md")[0]


def test_outputs_that_cannot_be_written_are_refused_before_measuring(
        fake_gpu: FakeGPU, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", "--out", str(tmp_path)]) == 2  # a directory: the path check
    assert main(["calibrate", "--out", str(tmp_path / "no" / "p.md")]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert fake_gpu.matmuls == []


def test_nothing_is_written_when_nothing_was_measured(fake_gpu: FakeGPU, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    out = tmp_path / "p.md"
    assert main(["calibrate", "--quick", "--out", str(out), "--dtypes", "fp8"]) == 1
    err = capsys.readouterr().err
    assert "no matmul rate was measured" in err and "fp8: fp8 matmul needs sm_89" in err
    assert not out.exists()


def test_the_progress_bar_path_runs(fake_gpu: FakeGPU) -> None:
    args = argparse.Namespace(dtypes=("bf16",))
    settings = settings_for(quick=True)
    cal, stalled = cli_calibrate._run_with_bar(fake_gpu, settings, args, fake_gpu.clock)
    assert cal.result("bf16") is not None and cal.measured and stalled is None


@pytest.mark.parametrize("bad", ["fp4", ",", "bf16,int8"])
def test_bad_dtypes_are_a_usage_error(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["calibrate", "--dtypes", bad])
    assert exc.value.code == 2


@pytest.mark.parametrize("bad", ["0", "-1", "nan", "inf", "7200", "x"])
def test_bad_seconds_are_a_usage_error(bad: str) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["calibrate", "--seconds", bad])
    assert exc.value.code == 2


def test_dtype_aliases() -> None:
    assert cli_calibrate.dtype_list("BF16, half,float8_e4m3fnuz,bf16") == ("bf16", "fp16", "fp8")


# --------------------------------------------------------------------------- without torch / GPU


def _stub_torch(root: Path, body: str) -> dict[str, str]:
    pkg = root / "torch"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(textwrap.dedent(body))
    path = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path}


NO_TORCH = "raise ImportError(\"No module named 'torch'\")\n"
CPU_TORCH = """
    __version__ = "2.4.0+cpu"
    class version:
        cuda = None
        hip = None
    class cuda:
        @staticmethod
        def is_available():
            return False
"""
CUDA_TORCH_NO_GPU = CPU_TORCH.replace('"2.4.0+cpu"', '"2.4.0+cu124"').replace(
    "cuda = None", 'cuda = "12.4"')
# a torch that kills the process when imported: whatever runs to completion did not import it
TRAP_TORCH = "import os\nos._exit(99)\n"


@pytest.mark.parametrize(("body", "words"), [
    (NO_TORCH, "PyTorch is not installed"),
    (CPU_TORCH, "CPU-only build"),
    (CUDA_TORCH_NO_GPU, "no GPU visible to PyTorch 2.4.0+cu124 (CUDA 12.4)"),
])
def test_without_torch_or_a_gpu_one_line_and_exit_1(tmp_path: Path, body: str,
                                                    words: str) -> None:
    env = _stub_torch(tmp_path / "stub", body)
    work = tmp_path / "work"
    work.mkdir()
    proc = roofline("calibrate", "--quick", cwd=work, env=env)
    assert proc.returncode == 1, proc.stderr
    line = one_line(proc)
    assert line.startswith("roofline calibrate: error: ") and words in line
    assert proc.stdout == "" and list(work.iterdir()) == []  # nothing written


def test_help_and_other_commands_never_import_torch(tmp_path: Path) -> None:
    env = _stub_torch(tmp_path / "stub", TRAP_TORCH)
    for argv in (["--help"], ["calibrate", "--help"], ["schema"]):
        proc = roofline(*argv, cwd=tmp_path, env=env)
        assert proc.returncode == 0, (argv, proc.returncode, proc.stderr)
    assert "--device-index" in roofline("calibrate", "--help", cwd=tmp_path, env=env).stdout
    # a refused output is refused before torch is imported
    (tmp_path / "peaks.measured.md").write_text("x")
    proc = roofline("calibrate", cwd=tmp_path, env=env)
    assert proc.returncode == 1 and "already exists" in one_line(proc)


def test_the_engine_does_not_import_calibrate() -> None:
    from tests.paths import PACKAGE
    from tests.test_architecture import imports

    found = [f"{path.relative_to(PACKAGE)}:{line} imports {module}"
             for path in sorted((PACKAGE / "core").rglob("*.py"))
             for module, line, _top in imports(path)
             if module == "roofline_tui.calibrate" or module.startswith("roofline_tui.calibrate.")
             or module.startswith("roofline_tui.cli")]
    assert found == []


def test_a_measured_figure_above_the_data_sheet_is_written_and_reported(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    # an H200 that "measures" 1200 TFLOP/s bf16, above its 989.4 data sheet: a timing fault or
    # the wrong part; the loader drops that figure, and the command says so
    gpu = FakeGPU(name="NVIDIA H200", peaks={"bf16": 1200e12, "fp16": 800e12, "fp8": 1500e12})
    monkeypatch.setattr(cli_calibrate, "open_backend", lambda args, settings: (gpu, gpu.clock))
    out = tmp_path / "p.md"
    assert main(["calibrate", "--quick", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "note:" in printed and "above the data sheet" in printed
    (sec,), problems = load_peak_table(out)
    assert "bf16" not in sec.measured_flops and "fp16" in sec.measured_flops
    assert problems


def test_timing_plan_defaults_are_sane() -> None:
    plan = TimingPlan()
    assert plan.repeats >= 3 and plan.warmup_s > 0 and plan.repeat_s > 0


# --------------------------------------------------------------------------- the torch backend


class _StandInTorch:
    """Just enough of the torch API for TorchBackend's call structure: a device clock that
    matmuls and copies advance, events that read it. Not a model of any GPU."""

    def __init__(self, *, hip: str | None = None, arch: str = "gfx942", major: int = 9,
                 minor: int = 0, devices: int = 1, scaled_mm_fails: bool = False) -> None:
        import types

        self.device_ns = 0.0
        self.calls: list[str] = []
        outer = self
        self.__version__ = "2.5.1+test"
        self.version = types.SimpleNamespace(cuda=None if hip else "12.4", hip=hip)
        self.bfloat16, self.float16, self.float32 = "bf16", "fp16", "fp32"
        self.int32, self.uint8 = "int32", "uint8"
        self.float8_e4m3fn, self.float8_e4m3fnuz = "e4m3fn", "e4m3fnuz"
        self._scaled_mm_fails = scaled_mm_fails

        class Tensor:
            def __init__(self, shape: tuple[int, ...], dtype: str) -> None:
                self.shape, self.dtype = shape, dtype

            def t(self) -> Tensor:
                return Tensor(self.shape[::-1], self.dtype)

            def to(self, dtype: str) -> Tensor:
                return Tensor(self.shape, dtype)

            def zero_(self) -> Tensor:
                return self

            def fill_(self, _v: object) -> Tensor:
                return self

            def copy_(self, src: Tensor) -> Tensor:
                outer.calls.append("copy")
                outer.device_ns += 2 * src.shape[0] / 4e12 * 1e9
                return self

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                self.at = 0.0

            def record(self) -> None:
                self.at = outer.device_ns

            def synchronize(self) -> None:
                pass

            def elapsed_time(self, end: Event) -> float:
                return (end.at - self.at) / 1e6  # ms

        props = types.SimpleNamespace(major=major, minor=minor, multi_processor_count=304,
                                      total_memory=192 << 30, L2_cache_size=4 << 20,
                                      gcnArchName=f"{arch}:sramecc+:xnack-")
        self.Tensor = Tensor
        self.cuda = types.SimpleNamespace(
            is_available=lambda: devices > 0, device_count=lambda: devices,
            set_device=lambda d: None, get_device_properties=lambda i: props,
            get_device_name=lambda i: "AMD Instinct MI300X" if hip else "NVIDIA H200",
            synchronize=lambda: None, empty_cache=lambda: None, Event=Event)

    def device(self, kind: str, index: int) -> tuple[str, int]:
        return (kind, index)

    def empty(self, *shape: int, dtype: str = "fp32", device: object = None) -> object:
        return self.Tensor(shape, dtype)

    def empty_like(self, t: object) -> object:
        return t

    def randn(self, *shape: int, dtype: str = "fp32", device: object = None) -> object:
        return self.Tensor(shape, dtype)

    def ones(self, *shape: int, dtype: str = "fp32", device: object = None) -> object:
        return self.Tensor(shape, dtype)

    def no_grad(self) -> object:
        import contextlib

        return contextlib.nullcontext()

    def mm(self, a: object, b: object, out: object = None) -> object:
        m, k = a.shape  # type: ignore[attr-defined]
        n = b.shape[1]  # type: ignore[attr-defined]
        self.calls.append("mm")
        self.device_ns += 2 * m * n * k / 700e12 * 1e9
        return out

    def _scaled_mm(self, a: object, b: object, *, scale_a: object, scale_b: object,
                   out_dtype: str) -> object:
        if self._scaled_mm_fails:
            raise RuntimeError("hipblaslt: no solution found")
        m, k = a.shape  # type: ignore[attr-defined]
        n = b.shape[1]  # type: ignore[attr-defined]
        assert scale_a is scale_b and out_dtype == "bf16"
        self.calls.append("scaled_mm")
        self.device_ns += 2 * m * n * k / 1400e12 * 1e9
        return self.Tensor((m, n), out_dtype)


def _backend(monkeypatch: pytest.MonkeyPatch, fake: _StandInTorch, index: int = 0):
    from roofline_tui.calibrate import torch_backend

    real = importlib.import_module  # what torch_backend calls
    monkeypatch.setattr(importlib, "import_module",
                        lambda name: fake if name == "torch" else real(name))
    return torch_backend.open_torch_backend(index, TimingPlan(0.001, 3, 0.001))


def test_the_torch_backend_times_through_events(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _StandInTorch(hip="6.2.41133", arch="gfx942")
    be = _backend(monkeypatch, fake)
    info = be.device_info()
    assert (info.name, info.arch, info.vendor, info.cu) == ("AMD Instinct MI300X", "gfx942",
                                                            "amd", 304)
    assert info.arch_raw == "gfx942:sramecc+:xnack-" and info.hip == "6.2.41133"
    secs = be.matmul(8192, 8192, 8192, "bf16")
    assert secs == pytest.approx(2 * 8192**3 / 700e12)
    assert be.unsupported("fp8") is None  # gfx942: e4m3fnuz through _scaled_mm
    assert be.matmul(4096, 4096, 4096, "fp8") == pytest.approx(2 * 4096**3 / 1400e12)
    assert be.copy(1 << 30) == pytest.approx(2 * (1 << 30) / 4e12)
    cal = run_calibration(be, replace(settings_for(quick=True), seconds=0.5))
    assert cal.copy is not None and {r.dtype for r in cal.measured} == {"bf16", "fp16", "fp8"}


def test_the_torch_backend_says_why_a_dtype_cannot_run(monkeypatch: pytest.MonkeyPatch) -> None:
    be = _backend(monkeypatch, _StandInTorch(major=8, minor=0))
    assert be.device_info().arch == "sm_80" and be.device_info().vendor == "nvidia"
    assert be.unsupported("fp8") == "fp8 matmul needs sm_89 or newer; this is sm_80"
    assert be.unsupported("bf16") is None and be.unsupported("fp16") is None
    be = _backend(monkeypatch, _StandInTorch(major=7, minor=5))
    assert be.unsupported("bf16") == "bf16 matmul needs sm_80 or newer; this is sm_75"
    be = _backend(monkeypatch, _StandInTorch(hip="6.2", arch="gfx90a"))
    assert "gfx942 (CDNA 3) or newer" in (be.unsupported("fp8") or "")
    be = _backend(monkeypatch, _StandInTorch(major=9, minor=0, scaled_mm_fails=True))
    assert "no solution found" in (be.unsupported("fp8") or "")


def test_the_torch_backend_refuses_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from roofline_tui.calibrate.torch_backend import CalibrateUnavailable

    with pytest.raises(CalibrateUnavailable, match="sees 1 GPU"):
        _backend(monkeypatch, _StandInTorch(), index=3)
    with pytest.raises(CalibrateUnavailable, match="no GPU visible"):
        _backend(monkeypatch, _StandInTorch(devices=0))


# --------------------------------------------------------------------------- a hostile backend
# (issue 36 item 5: a torch without __version__ and NaN device properties ended in tracebacks;
# a device call that never returned kept the command running past its budget)


def _command_on(monkeypatch: pytest.MonkeyPatch, fake: _StandInTorch, tmp_path: Path,
                capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, list[str]]:
    """``roofline calibrate`` in process, with ``fake`` as the torch it imports."""
    real = importlib.import_module
    monkeypatch.setattr(importlib, "import_module",
                        lambda name: fake if name == "torch" else real(name))
    code = main(["calibrate", "--out", str(tmp_path / "p.md"), "--seconds", "0.5", *extra])
    return code, capsys.readouterr().err.strip().splitlines()


def test_a_torch_without_a_version_is_one_line_and_exit_1(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A module named torch without ``__version__`` (a stub, a half-removed install) is not a
    PyTorch to measure with: the version is part of the section's provenance (its stack)."""
    fake = _StandInTorch(major=9, minor=0)
    del fake.__version__
    code, err = _command_on(monkeypatch, fake, tmp_path, capsys)
    assert code == 1 and len(err) == 1, err
    assert err[0].startswith("roofline calibrate: error: ") and "no __version__" in err[0]
    assert not (tmp_path / "p.md").exists() and fake.calls == []


@pytest.mark.parametrize(("prop", "value"), [
    ("total_memory", math.nan), ("multi_processor_count", math.nan), ("major", math.nan),
    ("minor", math.inf), ("L2_cache_size", math.inf), ("total_memory", -(80 << 30)),
    ("multi_processor_count", 10**12), ("major", "nine"), ("major", None),
])
def test_impossible_device_properties_are_one_line_and_exit_1(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        prop: str, value: object) -> None:
    """What the driver reports is checked before anything is measured: a property that is not
    a finite number in the range a real GPU reports is a broken driver or build, named."""
    fake = _StandInTorch(major=9, minor=0)
    props = fake.cuda.get_device_properties(0)
    setattr(props, prop, value)
    code, err = _command_on(monkeypatch, fake, tmp_path, capsys)
    assert code == 1 and len(err) == 1, err
    assert err[0].startswith("roofline calibrate: error: ") and prop in err[0]
    assert not (tmp_path / "p.md").exists() and fake.calls == []


def test_sane_properties_still_measure(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """(The check refuses only the impossible: the stand-in's own figures pass, and an optional
    property reported as 0, meaning unknown, is left out as before.)"""
    fake = _StandInTorch(major=9, minor=0)
    fake.cuda.get_device_properties(0).L2_cache_size = 0
    code, err = _command_on(monkeypatch, fake, tmp_path, capsys, "--dtypes", "bf16")
    assert code == 0, err
    (sec,), _ = load_peak_table(tmp_path / "p.md")
    assert set(sec.measured_flops) == {"bf16"}


class _OddBackend(FakeGPU):
    """A backend that cannot answer: ``unsupported`` or ``device_info`` raise."""

    def __init__(self, *, info_fails: bool = False) -> None:
        super().__init__()
        self.info_fails = info_fails

    def device_info(self) -> DeviceInfo:
        if self.info_fails:
            raise AttributeError("'FakeProps' object has no attribute 'major'")
        return super().device_info()

    def unsupported(self, dtype: str) -> str | None:
        if dtype == "fp8":
            raise AttributeError("module 'torch' has no attribute 'float8_e4m3fn'")
        return None


def test_a_backend_that_cannot_tell_a_dtype_skips_it_with_the_reason() -> None:
    gpu = _OddBackend()
    cal = calibrate(gpu)
    fp8 = cal.result("fp8")
    assert fp8 is not None and fp8.best is None
    assert fp8.skipped is not None and "could not tell whether fp8" in fp8.skipped
    assert "float8_e4m3fn" in fp8.skipped
    assert {r.dtype for r in cal.measured} == {"bf16", "fp16"}


def test_a_backend_that_cannot_describe_the_device_is_one_line(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    gpu = _OddBackend(info_fails=True)
    monkeypatch.setattr(cli_calibrate, "open_backend", lambda args, settings: (gpu, gpu.clock))
    assert main(["calibrate", "--quick", "--out", str(tmp_path / "p.md")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the device could not be measured (AttributeError" in err[0]
    assert not (tmp_path / "p.md").exists()


# how long a hung call of the fakes below waits before it gives up by itself (on today's code,
# which has no watchdog, the test then fails instead of hanging)
HANG_GUARD_S = 30.0


class HangingGPU(FakeGPU):
    """The fake GPU, except that one call never returns: the first matmul of the ``hang_at``-th
    shape (1: the warm-up's, which is also the sweep's first), or the copy. Its clock jumps far
    past any budget when it hangs (the device's time goes on while the call does not return);
    the call itself waits until the test is over."""

    def __init__(self, *, hang_at: int | None = None, hang_copy: bool = False) -> None:
        super().__init__(lacks={"fp8": "fp8 matmul needs sm_89 or newer; this is sm_80"})
        self.hang_at, self.hang_copy = hang_at, hang_copy
        self.release = threading.Event()
        self.shapes: list[tuple[int, int, int, str]] = []  # distinct, in the order first run

    def _hang(self) -> None:
        self.now += 1e6
        if not self.release.wait(HANG_GUARD_S):
            raise RuntimeError("the test's hang guard: no watchdog ended the run")

    def matmul(self, m: int, n: int, k: int, dtype: str) -> float:
        if (m, n, k, dtype) not in self.shapes:
            self.shapes.append((m, n, k, dtype))
            if len(self.shapes) == self.hang_at:
                self.matmuls.append((m, n, k, dtype))
                self._hang()
        return super().matmul(m, n, k, dtype)

    def copy(self, nbytes: int) -> float:
        if self.hang_copy:
            self._hang()
        return super().copy(nbytes)


@pytest.fixture
def hanging(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[HangingGPU]]:
    made: list[HangingGPU] = []

    def open_hanging(args: argparse.Namespace, settings: SweepSettings):
        return made[0], made[0].clock

    monkeypatch.setattr(cli_calibrate, "open_backend", open_hanging)
    yield made
    for gpu in made:
        gpu.release.set()


def test_a_call_that_never_returns_keeps_what_was_measured_before(
        hanging: list[HangingGPU], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """bf16's 4th shape never returns: the run is given up when the budget plus the margin
    has passed, and bf16's best of its first 3 shapes is written, the section saying where it
    stopped; fp16 was never reached."""
    gpu = HangingGPU(hang_at=4)
    hanging.append(gpu)
    out = tmp_path / "p.md"
    assert main(["calibrate", "--out", str(out), "--seconds", "20", "--dtypes", "bf16,fp16"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("roofline calibrate: warning: ")
    assert "did not return within the budget (20 s) plus" in err[0] and "p.md" in err[0]
    (sec,), _ = load_peak_table(out)
    assert set(sec.measured_flops) == {"bf16"}
    text = out.read_text()
    assert "watchdog: a device call did not return" in text
    assert "fp16: not reached: a device call did not return" in text
    assert len(gpu.shapes) == 4 and gpu.matmuls[-1] == gpu.shapes[-1]  # none after the hang
    best = max((ShapeResult(Shape(*m[:3]), gpu.matmul(*m)) for m in gpu.shapes[:3]),
               key=lambda r: r.flops_s)
    assert sec.measured_flops["bf16"].flops == pytest.approx(best.flops_s, rel=1e-4)


@pytest.mark.parametrize(("where", "words"), [
    ("copy", "the device-to-device copy could not be timed (a device call did not return"),
    ("warm-up", "no matmul rate was measured (bf16: not reached: a device call did not"),
])
def test_a_call_that_never_returns_before_anything_was_measured_is_exit_1(
        hanging: list[HangingGPU], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        where: str, words: str) -> None:
    gpu = HangingGPU(hang_copy=where == "copy", hang_at=1 if where == "warm-up" else None)
    hanging.append(gpu)
    out = tmp_path / "p.md"
    assert main(["calibrate", "--out", str(out), "--seconds", "5", "--dtypes", "bf16"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err
    assert not out.exists()


def test_the_watchdog_runs_on_the_wall_clock_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the real clock (the command's), a copy that never returns ends the run once the
    budget and the margin (made small here) have passed."""
    monkeypatch.setattr(sweep_mod, "WATCHDOG_MARGIN_S", 0.1)
    gpu = HangingGPU(hang_copy=True)
    try:
        cal, stalled = sweep_mod.run_watched(gpu, replace(settings_for(quick=True), seconds=0.2),
                                             dtypes=("bf16",))
    finally:
        gpu.release.set()
    assert stalled is not None and "plus 0.1 s" in stalled
    assert cal.copy is None and cal.measured == []
