"""The HTML report rendered by real headless Chromium: no script error, images decode, a
non-blank page. Skipped only where no Chromium binary is installed (CI installs it)."""

from __future__ import annotations

import re
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest
from PIL import Image

import dplong
from dplong.exceptions import DplongWarning
from dplong.report import write_report

BROWSER = next(
    (
        found
        for name in ("chromium", "chromium-browser", "google-chrome")
        if (found := shutil.which(name))
    ),
    None,
)
pytestmark = pytest.mark.skipif(BROWSER is None, reason="no chromium binary on PATH")

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ERRORS = re.compile(r'<ul id="report-errors"[^>]*>(.*?)</ul>', re.S)


def chromium(page: Path, profile: Path, *options: str) -> subprocess.CompletedProcess[str]:
    assert BROWSER is not None
    return subprocess.run(
        [BROWSER, *FLAGS, f"--user-data-dir={profile}", *options, page.as_uri()],
        capture_output=True,
        text=True,
        check=True,
    )


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wages = dplong.datasets.load_wage_panel()
    model = dplong.LongitudinalOLS.from_formula(
        "lwage ~ exper + expersq", wages, groups="nr", time="year"
    )
    res = model.fit(epsilon=1.0, scale=[2.0, 0.2, 0.001], random_state=0)
    path = tmp_path_factory.mktemp("report") / "wages.html"
    return write_report(path, res, data_name="dataset:wage_panel", command="(test)")


def test_renders_without_errors(report: Path, tmp_path: Path) -> None:
    dom = chromium(report, tmp_path / "profile", "--dump-dom").stdout
    assert re.search(r'<body[^>]*data-rendered="ok"', dom), dom[:2000]
    errors = ERRORS.search(dom)
    assert errors is not None and "<li>" not in errors.group(1)
    assert '<img alt="coefficient plot"' in dom and 'id="privacy-ledger"' in dom


@pytest.fixture(scope="module")
def curve_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user-level Priestley–Chao curve: the report draws a curve plot instead."""
    pigs = dplong.datasets.load_dietox()
    model = dplong.PriestleyChao.from_formula(
        "Weight ~ Time", pigs, groups="Pig", domain=(1, 12), bandwidth=1.0, grid=6
    )
    with warnings.catch_warnings():  # 72 pigs at ε = 9: notes the report itself carries
        warnings.simplefilter("ignore", DplongWarning)
        res = model.fit(epsilon=9.0, scale=250.0, random_state=0)
    path = tmp_path_factory.mktemp("report") / "pigs.html"
    return write_report(path, res, data_name="dataset:dietox", command="(test)")


def test_curve_report_renders_without_errors(curve_report: Path, tmp_path: Path) -> None:
    dom = chromium(curve_report, tmp_path / "profile", "--dump-dom").stdout
    assert re.search(r'<body[^>]*data-rendered="ok"', dom), dom[:2000]
    errors = ERRORS.search(dom)
    assert errors is not None and "<li>" not in errors.group(1)
    assert '<img alt="curve plot"' in dom and "<th>boundary</th>" in dom


def test_broken_page_is_detected(report: Path, tmp_path: Path) -> None:
    """The check above is not vacuous: a script error and a bad image are recorded."""
    broken = tmp_path / "broken.html"
    extra = '<img alt="broken" src="data:image/png;base64,AAAA"><script>notDefined();</script>'
    broken.write_text(
        report.read_text(encoding="utf-8").replace("</footer>", extra + "</footer>"),
        encoding="utf-8",
    )
    dom = chromium(broken, tmp_path / "profile", "--dump-dom").stdout
    assert re.search(r'<body[^>]*data-rendered="error"', dom)
    errors = ERRORS.search(dom)
    assert errors is not None
    assert "notDefined" in errors.group(1) and "image failed: broken" in errors.group(1)


def test_screenshot_is_not_blank(report: Path, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    chromium(report, tmp_path / "profile", f"--screenshot={shot}", "--window-size=1000,1600")
    with Image.open(shot) as image:
        assert image.size == (1000, 1600)
        grey = image.convert("L")
        low, high = grey.getextrema()
        colours = grey.getcolors(maxcolors=256) or []
        dark = sum(count for value, count in colours if value < 128)
    assert low < 64 and high > 240  # dark text on a light page
    assert len(colours) > 32  # anti-aliased text and a plot, not a flat fill
    assert dark > 1000  # text, table rules and plot marks
