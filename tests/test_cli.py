"""The ``dplong`` command line end to end, and what its HTML report may and may not contain."""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import io
import random
import re
import subprocess
import sys
import warnings
from csv import Error as CsvError
from csv import field_size_limit
from csv import reader as csv_reader
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dplong
import dplong.io
from dplong.cli import main
from dplong.exceptions import DataHolderWarning, DplongWarning
from dplong.models.command_line import MODELS, CommandLineModel
from dplong.report import build_report

OLS = [
    "fit",
    "dataset:wage_panel",
    "--model",
    "ols",
    "--formula",
    "lwage ~ exper + expersq",
    "--groups",
    "nr",
    "--time",
    "year",
    "--epsilon",
    "1",
    "--scale",
    "2,0.2,0.001",
    "--seed",
    "3",
]
MEAN = ["fit", "dataset:dietox", "--model", "mean", "--formula", "Weight ~ 1", "--groups", "Pig"]
MEAN += ["--epsilon", "2", "--scale", "400", "--seed", "1"]
KERNEL = ["fit", "dataset:dietox", "--model", "kernel", "--formula", "Weight ~ Time"]
KERNEL += ["--groups", "Pig", "--domain", "1,12", "--bandwidth", "1", "--grid", "6"]
KERNEL += ["--epsilon", "16", "--scale", "250", "--seed", "0"]
IMAGE = re.compile(r"data:image/png;base64,([A-Za-z0-9+/=]+)")


def run(argv: list[str]) -> tuple[int, str, str]:
    """``main`` in-process: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def given(argv: list[str], *changes: str) -> list[str]:
    """``argv`` with each option of ``changes`` (flag, value, flag, value, ...) set to its
    value: replaced where ``argv`` gives it (``--flag V`` or ``--flag=V``; an option is given
    once), else appended."""
    argv = list(argv)
    for flag, value in zip(changes[::2], changes[1::2], strict=True):
        at = [i for i, text in enumerate(argv) if text == flag or text.startswith(f"{flag}=")]
        if not at:
            argv += [flag, value]
        elif argv[at[0]] == flag:
            argv[at[0] + 1] = value
        else:
            argv[at[0]] = f"{flag}={value}"
    return argv


@pytest.fixture(scope="module")
def ols_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    """The OLS example with a report: stdout, stderr and the report's HTML."""
    report = tmp_path_factory.mktemp("report") / "wages.html"
    code, out, err = run([*OLS, "--report", str(report)])
    assert code == 0, err
    return out, err, report.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def kernel_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    """The user-level Priestley–Chao example on the pigs, with a report."""
    report = tmp_path_factory.mktemp("report") / "pigs.html"
    code, out, err = run([*KERNEL, "--report", str(report)])
    assert code == 0, err
    return out, err, report.read_text(encoding="utf-8")


def without_images(page: str) -> str:
    return IMAGE.sub("data:image/png;base64,", page)


def raw_values(column: pd.Series, count: int = 25) -> list[str]:
    """String forms of distinctive raw values (7+ significant digits) of a column."""
    values = [v for v in column.dropna() if len(f"{abs(v):.12g}".replace(".", "")) >= 7]
    assert len(values) >= count
    return [form for v in values[:count] for form in (repr(v), f"{v:.7g}")]


class TestFit:
    def test_stdout_has_summary_and_error_bounds(self, ols_run: tuple[str, str, str]) -> None:
        out, _, _ = ols_run
        assert "LongitudinalOLS results (user-level differential privacy)" in out
        for name in ("Intercept", "exper", "expersq", "Privacy spent"):
            assert name in out
        assert "Error bounds on |estimate - truth| (alpha=0.05)" in out
        assert "probability" in out and "Assumptions:" in out
        assert "Variance proxy of one user's coefficients (scale): [2.0, 0.2, 0.001]" in out

    def test_progress_on_stderr(self, ols_run: tuple[str, str, str]) -> None:
        _, err, _ = ols_run
        stages = ["reading dataset:wage_panel", "building design", "fitting ols on 545 users"]
        stages.append("writing report")
        positions = [err.index(stage) for stage in stages]
        assert positions == sorted(positions)
        assert "--seed was used" in err  # a seeded run is flagged as not a release

    @pytest.mark.parametrize("suffix", ["csv", "parquet"])
    def test_quiet_prints_the_result_only(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str
    ) -> None:
        # a run with everything that otherwise goes to stderr: progress, the seed's note, an
        # unread cell, a library warning and a reader's deprecation warning (pandas' on
        # Parquet files), from a CSV and a Parquet file
        frame = dplong.datasets.load_dietox()[["Pig", "Weight"]].astype({"Weight": str})
        frame.loc[0, "Weight"] = "n.a."
        path = tmp_path / f"pigs.{suffix}"
        if suffix == "csv":
            frame.to_csv(path, index=False)
        else:
            pytest.importorskip("pyarrow")
            frame.to_parquet(path, index=False)
        read = dplong.cli.fit.read_file  # patched where fit looks it up

        def deprecated_read(*args: Any, **kwargs: Any) -> Any:
            warnings.warn("a reader's deprecation", FutureWarning, stacklevel=2)
            warnings.warn("one user is odd", DplongWarning, stacklevel=2)
            return read(*args, **kwargs)

        monkeypatch.setattr(dplong.cli.fit, "read_file", deprecated_read)
        argv = ["fit", str(path), *MEAN[2:]]
        loud = run(argv)
        assert loud[0] == 0 and "--seed was used" in loud[2] and "'Weight'" in loud[2]
        with warnings.catch_warnings(record=True) as shown:
            warnings.simplefilter("always")
            code, out, err = run([*argv, "--quiet"])
        assert code == 0 and err == "" and shown == []
        assert out == loud[1] and "Mean results" in out  # the same result, nothing else
        code, out, err = run([*given(argv, "--epsilon", "1e-9"), "--quiet"])
        assert code == 2 and out == "" and err.startswith("dplong: error:")  # errors still

    def test_a_closed_pipe_ends_quietly(self) -> None:
        """``dplong fit ... | head -1``: the reader closes the pipe, the next write fails
        (EPIPE). The command ends without a traceback, its stdout pointed at the null
        device, with exit code 141 (128 + SIGPIPE, as a shell reports a program SIGPIPE
        ended). Here the pipe is closed before the command writes, so that every run meets
        it."""
        argv = ["fit", "dataset:wage_panel", "--model", "pooled", "--formula", "lwage ~ exper"]
        argv += ["--groups", "nr", "--epsilon", "1"]
        done = subprocess.Popen(
            [sys.executable, "-m", "dplong", *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=Path(__file__).parents[1],  # this checkout's dplong
        )
        assert done.stdout is not None and done.stderr is not None
        done.stdout.close()  # as head does after its line
        err = done.stderr.read().decode()
        assert done.wait(timeout=300) == 141, err
        assert "fitting pooled on 545 users" in err  # it ran, then met the closed pipe
        assert "Traceback" not in err and "BrokenPipeError" not in err and "Exception" not in err

    def test_same_result_as_the_library(self, ols_run: tuple[str, str, str]) -> None:
        wages = dplong.datasets.load_wage_panel()
        model = dplong.LongitudinalOLS.from_formula(
            "lwage ~ exper + expersq", wages, groups="nr", time="year"
        )
        res = model.fit(epsilon=1.0, scale=[2.0, 0.2, 0.001], random_state=3)
        assert str(res.summary()) in ols_run[0]

    def test_subprocess_python_m(self, tmp_path: Path) -> None:
        report = tmp_path / "pigs.html"
        done = subprocess.run(
            [sys.executable, "-m", "dplong", *MEAN, "--report", str(report)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert "Mean results" in done.stdout and "Weight" in done.stdout
        assert "Traceback" not in done.stderr
        page = report.read_text(encoding="utf-8")
        assert "Mean results" in page and IMAGE.search(page)
        kept = without_images(page)
        for form in raw_values(dplong.datasets.load_dietox()["Weight"]):
            assert form not in kept
        assert not re.search(r"(?<![\d.])861(?!\d)", kept)  # the number of rows

    def test_warnings_are_one_line_on_stderr_only(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        release = dplong.winsorized_mean

        def warning_release(*args: Any, **kwargs: Any) -> Any:
            warnings.warn("few users\nsecond line", DplongWarning, stacklevel=2)
            return release(*args, **kwargs)

        monkeypatch.setattr(dplong.models.mean, "winsorized_mean", warning_release)
        report = tmp_path / "pigs.html"
        code, _, err = run([*MEAN, "--report", str(report)])
        assert code == 0
        assert "dplong: warning: few users\n" in err and "second line" not in err
        assert "DplongWarning" not in err
        assert "few users" not in report.read_text(encoding="utf-8")  # not part of a release

    def test_help_explains_the_privacy_terms(self) -> None:
        code, out, _ = run(["fit", "--help"])
        assert code == 0
        for words in ("epsilon", "delta", "user-id column", "number of users n", "--scale"):
            assert words in out
        assert "dataset:wage_panel" in out and "examples:" in out and "models:" in out

    def test_a_file_whose_name_holds_glob_characters_is_that_file(self, tmp_path: Path) -> None:
        """``survey[1].csv`` exists: it is read as the file, not taken as a Parquet glob that
        matches nothing."""
        path = tmp_path / "wages[1].csv"
        dplong.datasets.load_wage_panel().to_csv(path, index=False)
        from_file = run([OLS[0], str(path), *OLS[2:], "--quiet"])
        assert from_file[0] == 0, from_file[2]
        assert from_file[1] == run([*OLS, "--quiet"])[1]

    def test_local_privacy_without_a_bound_is_refused_before_reading(self) -> None:
        code, _, err = run(
            ["fit", "no-such-file.csv", "--model", "mean", "--formula", "y ~ 1", "--groups",
             "id", "--epsilon", "1", "--privacy", "local"]
        )  # fmt: skip
        assert code == 2 and "--privacy local needs --bound B" in err

    @pytest.mark.parametrize("suffix", [".csv", ".parquet"])
    def test_file_input_round_trip(self, tmp_path: Path, suffix: str) -> None:
        wages = dplong.datasets.load_wage_panel()
        path = tmp_path / f"wages{suffix}"
        if suffix == ".csv":
            wages.to_csv(path, index=False)
        else:
            wages.to_parquet(path, index=False)
        from_file = run([OLS[0], str(path), *OLS[2:], "--quiet"])
        shipped = run([*OLS, "--quiet"])
        assert from_file[0] == 0, from_file[2]
        assert from_file[1] == shipped[1]


class TestReport:
    def test_content(self, ols_run: tuple[str, str, str]) -> None:
        _, _, page = ols_run
        assert page.startswith("<!DOCTYPE html>")
        assert "LongitudinalOLS" in page and "lwage ~ exper + expersq" in page
        for name in ("Intercept", "exper", "expersq"):
            assert f"<th>{name}</th>" in page
        assert 'id="error-bounds"' in page and "Assumptions" in page
        assert "bad events" in page and "gamma=0.05 per centre" in page
        assert 'id="privacy-ledger"' in page and "Total spent: ε = " in page
        assert "private median (exponential mechanism, log grid)" in page  # the digest's stages
        assert "Every mechanism call" in page  # and the full ledger
        assert "dplong fit dataset:wage_panel --model ols" in page  # the command line
        assert "--seed was used" in page
        assert "data-rendered" not in page and "dataset.rendered" in page  # set by the script

    def test_embedded_image_is_a_png(self, ols_run: tuple[str, str, str]) -> None:
        found = IMAGE.search(ols_run[2])
        assert found is not None
        png = base64.b64decode(found.group(1), validate=True)
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 5_000

    def test_self_contained(self, ols_run: tuple[str, str, str]) -> None:
        page = ols_run[2]
        assert "http://" not in page and "https://" not in page
        assert not re.search(r"""(?:src|href)\s*=\s*["'](?!data:)""", page)
        assert "<link" not in page and "@import" not in page

    def test_no_raw_data_and_no_row_count(self, ols_run: tuple[str, str, str]) -> None:
        page = without_images(ols_run[2])
        wages = dplong.datasets.load_wage_panel()
        for form in raw_values(wages["lwage"]):
            assert form not in page
        assert not re.search(rf"(?<![\d.]){len(wages)}(?!\d)", page)
        assert "545" in page  # n is public

    def test_without_matplotlib_says_plots_unavailable(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        for module in ("matplotlib", "matplotlib.figure", "matplotlib.lines"):
            monkeypatch.setitem(sys.modules, module, None)
        pigs = dplong.datasets.load_dietox()
        model = dplong.RandomEffectsLocation.from_formula("Weight ~ 1", pigs, groups="Pig")
        res = model.fit(epsilon=4.0, scale=400.0, variance_share=0, random_state=0)
        page = build_report(res)
        assert "Plots are unavailable" in page and 'pip install "dplong[plot]"' in page
        assert "<img" not in page and 'id="estimates"' in page


class TestKernel:
    """``--model kernel``: user-level Priestley–Chao curves, options split between
    ``from_formula`` (domain, bandwidth, grid, kernel) and ``fit`` (scale)."""

    def test_stdout(self, kernel_run: tuple[str, str, str]) -> None:
        out, err, _ = kernel_run
        assert "PriestleyChao results (user-level differential privacy)" in out
        for fact in ("Level:", "user", "Kernel:", "gaussian", "Grid points:", "Users (n):"):
            assert fact in out
        for point in ("1.0", "3.2", "5.4", "7.6", "9.8", "12.0"):  # the grid of 6 points
            assert f"\n{point} " in out
        assert "midpoint" in out and "mean" in out  # the ledger's digest, per stage
        assert "boundary" in out and "smoothing bias" in out  # the error-bound table of a curve
        assert "fitting kernel on 72 users (ε=16)" in err

    def test_same_result_as_the_library(self, kernel_run: tuple[str, str, str]) -> None:
        pigs = dplong.datasets.load_dietox()
        model = dplong.PriestleyChao.from_formula(
            "Weight ~ Time", pigs, groups="Pig", domain=(1, 12), bandwidth=1.0, grid=6
        )
        res = model.fit(epsilon=16.0, scale=250.0, random_state=0)
        assert str(res.summary()) in kernel_run[0]
        assert str(res.error_bound()) in kernel_run[0]

    def test_kernel_and_default_grid(self) -> None:
        argv = [a for a in KERNEL if a not in ("--grid", "6")]
        argv[argv.index("--bandwidth") + 1] = "2.75"  # default grid: one bandwidth apart
        code, out, err = run([*argv, "--kernel", "epanechnikov", "--quiet"])
        assert code == 0, err
        assert "epanechnikov" in out and "Grid points:" in out
        assert "\n6.5 " in out and "\n9.25 " in out  # 1, 3.75, 6.5, 9.25, 12
        pigs = dplong.datasets.load_dietox()
        res = dplong.PriestleyChao.from_formula(
            "Weight ~ Time",
            pigs,
            groups="Pig",
            domain=(1, 12),
            bandwidth=2.75,
            kernel="epanechnikov",
        ).fit(epsilon=16.0, scale=250.0, random_state=0)
        assert res.params.size == 5 and str(res.summary()) in out

    def test_report_content(self, kernel_run: tuple[str, str, str]) -> None:
        page = kernel_run[2]
        assert page.startswith("<!DOCTYPE html>")
        assert "PriestleyChao" in page and "Weight ~ Time" in page
        assert '<img alt="curve plot"' in page and "coefficient plot" not in page
        assert "<th>Time</th>" in page  # the grid is named by the regressor
        for point in ("1.0", "5.4", "12.0"):
            assert f"<th>{point}</th>" in page
        bounds = page[page.index('id="error-bounds"') : page.index('id="plots"')]
        assert "<th>boundary</th>" in bounds and "<td>yes</td>" in bounds
        assert "<th>smoothing bias</th>" not in bounds and "No smoothing bias is claimed" in bounds
        assert "x=5.4" in page and "Total spent: ε = 16," in page  # the full ledger names points
        assert "--domain 1,12 --bandwidth 1 --grid 6" in page  # the command line
        assert "grid points lie in the boundary region" in page  # the summary's notes
        found = IMAGE.search(page)
        assert found is not None
        png = base64.b64decode(found.group(1), validate=True)
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 5_000

    def test_report_leaks_nothing(self, kernel_run: tuple[str, str, str]) -> None:
        page = without_images(kernel_run[2])
        pigs = dplong.datasets.load_dietox()
        for form in raw_values(pigs["Weight"]):
            assert form not in page
        assert not re.search(rf"(?<![\d.]){len(pigs)}(?!\d)", page)  # 861 rows: private
        assert "72" in page  # n is public
        # nor the non-private mean of the per-pig curves (the released curve's target)
        from dplong.kernels import get_kernel
        from dplong.models.curves import user_curves

        pigs = pigs.sort_values(["Pig", "Time"])
        codes = pd.factorize(pigs["Pig"])[0]
        grid = np.linspace(1, 12, 6)
        curves = user_curves(
            pigs["Time"].to_numpy(float),
            pigs["Weight"].to_numpy(float),
            codes,
            72,
            grid,
            get_kernel("gaussian"),
            1.0,
        )
        for value in curves.mean(axis=0):
            assert f"{value:.4g}" not in page

    @pytest.mark.parametrize(
        ("change", "expected"),
        [
            ({"--domain": None}, "--model kernel needs --domain (see dplong fit --help)"),
            ({"--bandwidth": None}, "--model kernel needs --bandwidth (see dplong fit --help)"),
            ({"--domain": None, "--bandwidth": None}, "--model kernel needs --domain, --bandwidth"),
            ({"--domain": "12,1"}, "argument --domain: must be LO,HI with finite LO < HI"),
            ({"--domain": "12,1"}, "where LO is negative, join it to the flag with '='"),
            ({"--domain": "1"}, "argument --domain: must be LO,HI"),
            ({"--domain": "a,b"}, "argument --domain: must be LO,HI"),
            ({"--bandwidth": "0"}, "argument --bandwidth: must be a positive number"),
            ({"--grid": "1"}, "argument --grid: must be a whole number of points >= 2"),
            ({"--grid": "2.5"}, "argument --grid"),
            ({"--kernel": "box"}, "argument --kernel: invalid choice: 'box'"),
            ({"--scale": "1,2,3"}, "scale must be a number or an array of 6 numbers"),
            ({"--time": "Time"}, "--time is not an option of --model kernel"),
            ({"--within-scale": "2"}, "--within-scale is not an option of --model kernel"),
            ({"--formula": "Weight ~ Time + Feed"}, "takes one regressor"),
            ({"--epsilon": "0.5"}, "too little to locate the data"),
            ({"--privacy": "local"}, "--privacy local needs --bound B"),
            # item-level curves are not this model's: the message names where they are
            ({"--groups": None}, "needs --groups (the user-id column) (item-level curves: "),
        ],
    )
    def test_bad_arguments(self, change: dict[str, str | None], expected: str) -> None:
        argv = list(KERNEL)
        for option, value in change.items():
            if option in argv:
                at = argv.index(option)
                del argv[at : at + 2]
            if value is not None:
                argv += [option, value]
        code, out, err = run([*argv, "--quiet"])
        assert code == 2
        assert expected in err, err
        assert "Traceback" not in err and out == ""

    def test_kernel_options_belong_to_kernel(self) -> None:
        code, _, err = run([*GOOD, "--domain", "1,12"])
        assert code == 2 and "--domain is not an option of --model ols" in err
        code, _, err = run([*GOOD, "--bandwidth", "1"])
        assert code == 2 and "--bandwidth is not an option of --model ols" in err

    def test_help_lists_the_kernel_model(self) -> None:
        code, out, _ = run(["fit", "--help"])
        assert code == 0
        assert "PriestleyChao" in out and "--domain LO,HI" in out and "--bandwidth B" in out
        assert "--model kernel" in out and "required by kernel" in out


GOOD = ["fit", "dataset:wage_panel", "--model", "ols", "--formula", "lwage ~ exper"]
GOOD += ["--groups", "nr", "--epsilon", "1", "--scale", "1,0.01", "--quiet"]


def replace(option: str, value: str) -> list[str]:
    """GOOD with the value of ``option`` (or DATA, for ``option="DATA"``) replaced."""
    return [GOOD[0], value, *GOOD[2:]] if option == "DATA" else given(GOOD, option, value)


class TestBadArguments:
    @pytest.mark.parametrize(
        ("argv", "expected"),
        [
            (replace("--model", "kernelz"), "--model"),
            (replace("--epsilon", "0"), "argument --epsilon: must be a positive number"),
            (replace("--epsilon", "-1"), "argument --epsilon"),
            # near the doubles' end the budget's arithmetic overflowed: numpy's warnings flooded
            (replace("--epsilon", "1e308"), "argument --epsilon: must be at most 1e+300"),
            (replace("--scale", "abc"), "argument --scale"),
            ([*GOOD, "--delta", "1.5"], "argument --delta"),
            ([*GOOD, "--alpha", "0"], "argument --alpha"),
            ([a for a in GOOD if a not in ("--epsilon", "1")], "--epsilon"),
            (replace("DATA", "missing.csv"), "DATA file 'missing.csv' does not"),
            (replace("DATA", "-"), "DATA '-' (standard input) is not read"),
            # a missing file named with a glob's characters is a missing file, not a glob
            (replace("DATA", "missing[1].csv"), "DATA file 'missing[1].csv' does not exist"),
            (replace("DATA", "missing?.csv.gz"), "DATA file 'missing?.csv.gz' does not exist"),
            (replace("DATA", "missing*.csv"), "DATA file 'missing*.csv' does not exist"),
            (replace("DATA", "missing[1].parquet"), "DATA file 'missing[1].parquet' does not"),
            (replace("DATA", "no-dir/*.parquet"), "DATA 'no-dir/*.parquet' matches no file"),
            (replace("DATA", "dataset:nope"), "dataset:wage_panel, dataset:dietox"),
            (replace("DATA", "pyproject.toml"), "cannot tell the format of DATA"),
            (replace("--groups", "person"), "--groups 'person' is not a column of DATA"),
            ([*GOOD, "--time", "when"], "--time 'when' is not a column"),
            ([*GOOD, "--time", "nr"], "--time nr is the column of user ids (groups)"),
            (replace("--formula", "lwage ~ nonsense"), "'nonsense' is neither a column"),
            (replace("--scale", "1,2,3"), "scale must be a number or an array of 2 numbers"),
            ([*GOOD, "--within-scale", "2"], "--within-scale is not an option of --model ols"),
            ([*GOOD, "--privacy", "local"], "--privacy local needs --bound B"),
            ([*GOOD, "--report", "/no/such/dir/r.html"], "cannot write --report"),
        ],
    )
    def test_exit_code_2_and_a_message(self, argv: list[str], expected: str) -> None:
        code, out, err = run(argv)
        assert code == 2
        assert expected in err
        assert "Traceback" not in err and out == ""

    def test_epsilon_is_refused_before_the_data_are_read(self) -> None:
        """Said "reading DATA" and "fitting ... (ε=1e+308)" before the fit refused ε."""
        code, out, err = run([a for a in replace("--epsilon", "1e308") if a != "--quiet"])
        assert code == 2 and out == ""
        assert err.startswith("dplong: error: argument --epsilon: must be at most 1e+300")
        assert "reading" not in err and "fitting" not in err

    def test_library_errors_are_one_line(self) -> None:
        code, _, err = run(replace("--formula", "lwage ~ (exper"))  # patsy's message has 3 lines
        assert code == 2
        assert err.count("\n") == 1 and err.startswith("dplong: error: cannot parse 'lwage ~ (")

    def test_required_fit_arguments_are_named(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A keyword that a model's ``fit`` cannot do without is named as a flag."""

        class NeedsScale:
            nobs_users = 545

            def fit(self, *, epsilon: float, scale: float, min_rows: int) -> Any:
                raise AssertionError("not reached")

        def build(*args: Any, **options: Any) -> NeedsScale:
            return NeedsScale()

        monkeypatch.setitem(MODELS, "strict", CommandLineModel("strict", build, "a test model"))
        argv = [*GOOD[:-3], "--quiet"]  # no --scale
        argv[argv.index("--model") + 1] = "strict"
        code, _, err = run(argv)
        assert code == 2 and "--model strict needs --scale, --min-rows" in err

    @pytest.mark.parametrize(
        ("model", "change", "expected"),
        [
            ("mean", ["--formula", "Weight ~ Time"], "--model mean takes a formula 'column ~ 1'"),
            ("poisson", ["--formula", "Weight ~ Time"], "--model poisson takes a formula"),
            ("mean", ["--levels", "Cu=1,2"], "got levels of ['Cu'] with no --by"),
            ("mean", ["--by", "Cu"], "--by Cu needs its declared levels"),
            ("mean", ["--by-constant"], "--by-constant declares"),
            ("location", ["--formula", "Weight ~ Time"], "For covariates use --model ols."),
        ],
    )
    def test_model_refusals_say_the_command_line(
        self, model: str, change: list[str], expected: str
    ) -> None:
        """A model's refusal names it as ``--model NAME`` and its options as flags, never by
        its Python class (``ColumnMean``) or keyword (``by=None``)."""
        argv = [*MEAN, "--quiet"]
        argv[argv.index("mean")] = model
        for flag in change[::2]:
            if flag in argv and flag != "--by-constant":
                del argv[argv.index(flag) : argv.index(flag) + 2]
        code, out, err = run([*argv, *change])
        assert code == 2 and out == "" and expected in err, err
        for python in ("ColumnMean", "PoissonMean", "RandomEffectsLocation", "dplong."):
            assert python not in err
        assert "by=None" not in err and "on the command line" not in err
        assert err.count("--levels Cu=") <= 1  # a flag the message already said, said once

    def test_every_model_class_is_said_as_its_model(self) -> None:
        from dplong.cli.errors import _for_the_command_line

        first: dict[str, str] = {}  # a class registered twice is said by its first name
        for name, spec in MODELS.items():
            first.setdefault(spec.build.__self__.__name__, name)  # type: ignore[attr-defined]
        assert "ColumnMean" in first and "NadarayaWatson" in first
        for owner, name in first.items():
            said = _for_the_command_line(f"{owner}.fit: no; use dplong.{owner} or {owner}s")
            assert said == f"--model {name}: no; use --model {name} or {owner}s"

    @pytest.mark.parametrize(
        ("message", "said"),
        [
            # a bare keyword in prose is the flag
            ("needs time= naming the column", "needs --time naming the column"),
            ("its periods in levels=; or", "its periods in --levels; or"),
            ("give it, time=", "give it, --time"),
            # Python the analyst writes in a formula keeps its spelling
            ("write C(union, levels=[...]) in the formula", None),
            ("term I(time==2) fails", None),
            ("C(union, levels=(0, 1))", None),
        ],
    )
    def test_a_bare_time_or_levels_is_the_flag_only_in_prose(
        self, message: str, said: str | None
    ) -> None:
        """``time=`` and ``levels=`` followed by a space, a comma, a semicolon or a bracket's end
        are the flags; inside a formula's code (``C(x, levels=[...])``, ``I(time==2)``) they
        are Python the analyst writes, and stay (a review found them mangled into
        ``C(union, --levels[...])`` and ``I(--time=2)``)."""
        from dplong.cli.errors import _for_the_command_line

        assert _for_the_command_line(message) == (message if said is None else said)

    @pytest.mark.parametrize(
        ("flags", "said"),
        [
            (["--model", "ols", "--scale", "1,2,3"], "--scale must be"),
            (["--model", "ols", "--focus", "nosuch"], "--focus names ['nosuch']"),
            (["--model", "ols", "--estimator", "within", "--between", "nosuch"], "--between names"),
            (["--model", "ols", "--levels", "union=0,1"], "--levels names ['union']"),
            (["--model", "pooled", "--bounds", "garbage"], "--bounds must read"),
            (["--model", "pooled", "--bounds", "nosuch=0,1"], "--bounds names ['nosuch']"),
        ],
    )
    def test_a_refusal_of_an_option_names_its_flag(self, flags: list[str], said: str) -> None:
        """A refusal whose subject is an option says it as the flag typed (an audit read
        ``scale must be ...``, ``focus names [...]`` and ``bounds names [...]``)."""
        argv = ["fit", "dataset:wage_panel", "--formula", "lwage ~ exper", "--groups", "nr"]
        code, out, err = run([*argv, *flags, "--epsilon", "4", "--quiet"])
        assert code == 2 and out == "" and f"dplong: error: {said}" in err, err

    @pytest.mark.parametrize(
        "formula",
        [
            "Weight ~ I(Time.clip(lower=0))",
            "Weight ~ C(Feed, levels= ['a','b'])",
            "np.maximum(Weight, bound=0) ~ 1 + Time",
        ],
    )
    def test_a_refusal_quotes_the_formula_as_written(self, formula: str) -> None:
        """A refusal's Python spellings of options are said as flags, but not inside the
        analyst's own formula, which it quoted as ``I(Time.clip(--lower 0))`` (an audit)."""
        argv = [*MEAN[:4], "--formula", formula, "--groups", "Pig", "--epsilon", "4", "--quiet"]
        code, out, err = run(argv)
        assert code == 2 and out == "", err
        assert err == f"dplong: error: --model mean takes a formula 'column ~ 1'; got {formula!r}\n"

    def test_mean_of_an_expression(self) -> None:
        """An expression left of ``~`` is the mean of its per-user means, evaluated row by row
        under the formula layer's checks: the same release as the transformed column's, and a
        term that reads other rows is refused by name."""
        argv = [*MEAN[:4], "--formula", "np.log(Weight) ~ 1", "--groups", "Pig"]
        argv += ["--epsilon", "4", "--seed", "3", "--quiet"]
        code, out, err = run(argv)
        assert code == 0, err
        pigs = dplong.datasets.load_dietox()
        lib = dplong.winsorized_mean(
            np.log(pigs["Weight"]), groups=pigs["Pig"], epsilon=4.0, random_state=3
        )
        assert f"{lib.params.iloc[0]:.4g}" in out and "np.log(Weight) ~ 1" in out
        argv[argv.index("np.log(Weight) ~ 1")] = "I(Weight - Weight.mean()) ~ 1"
        code, _, err = run(argv)
        assert code == 2 and "Weight.mean()" in err

    def test_a_compressed_csv_without_its_module(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A documented compression whose module is missing (``zstandard`` for ``.csv.zst``,
        in no extra) is the package's refusal naming it, not a traceback."""
        monkeypatch.setitem(sys.modules, "zstandard", None)
        path = tmp_path / "wages.csv.zst"
        path.write_bytes(b"id,y\n")
        code, _, err = run(replace("DATA", str(path)))
        assert code == 2 and "zstandard" in err and "Traceback" not in err

    def test_the_report_is_never_written_over_the_data(self, tmp_path: Path) -> None:
        """``--report`` naming the DATA file (by any path to it) is refused before the fit:
        the report would replace the rows it reports on."""
        path = tmp_path / "wages.csv"
        dplong.datasets.load_wage_panel().to_csv(path, index=False)
        before = path.read_bytes()
        for report in (str(path), str(tmp_path / "." / "wages.csv")):
            code, out, err = run([*replace("DATA", str(path)), "--report", report])
            assert code == 2 and "it is the DATA file" in err and out == ""
        assert path.read_bytes() == before

    def test_parquet_without_pyarrow(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setitem(sys.modules, "pyarrow", None)
        path = tmp_path / "wages.parquet"
        path.write_bytes(b"")
        code, _, err = run(replace("DATA", str(path)))
        assert code == 2 and 'pip install "dplong[parquet]"' in err


class TestEstimatedScale:
    """Without ``--scale`` the models estimate it; ``--focus`` and ``--variant`` reach the fit."""

    def test_defaults_reach_the_fit(self, tmp_path: Path) -> None:
        rng = np.random.default_rng(4)
        users = np.repeat(np.arange(3000), 4)
        frame = pd.DataFrame({"id": users, "y": 5.0 + rng.normal(0, 1, users.size)})
        path = tmp_path / "panel.csv"
        frame.to_csv(path, index=False)
        argv = ["fit", str(path), "--model", "mean", "--formula", "y ~ 1", "--groups", "id"]
        argv += ["--epsilon", "2", "--seed", "0", "--quiet"]
        code, out, err = run(argv)
        assert code == 0, err
        assert "Scale estimated privately" in out
        # the same release through the library
        lib = dplong.winsorized_mean(
            frame["y"].to_numpy(),
            groups=frame["id"].to_numpy(),
            epsilon=2.0,
            names=["y"],
            random_state=0,
        )
        assert f"{lib.params['y']:.4g}" in out
        code, out, err = run([*argv, "--variant", "theory"])
        assert code == 0, err and "theory" in out


@pytest.fixture(scope="module")
def csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A panel whose factor ``site`` is text and varies within users."""
    rng = np.random.default_rng(8)
    users, rows = 600, 12  # enough rows that (almost) every user identifies the fit
    site = np.array(["north", "south", "east"])[rng.integers(0, 3, users * rows)]
    x = rng.normal(size=users * rows)
    frame = pd.DataFrame(
        {
            "id": np.repeat(np.arange(users), rows),
            "visit": np.tile(np.arange(1, rows + 1), users),
            "site": site,
            "x": x,
            "y": 1.0 + 0.5 * x + (site == "south") + rng.normal(size=users * rows),
        }
    )
    path = tmp_path_factory.mktemp("levels") / "panel.csv"
    frame.to_csv(path, index=False)
    return path


class TestLevels:
    """``--levels COLUMN=A,B,...`` declares a factor's levels, as ``levels=`` does."""

    def argv(self, csv: Path, formula: str, *levels: str) -> list[str]:
        argv = ["fit", str(csv), "--model", "ols", "--formula", formula, "--groups", "id"]
        argv += ["--epsilon", "8", "--scale", "1", "--seed", "0", "--quiet"]
        return argv + [a for spec in levels for a in ("--levels", spec)]

    def test_levels_reach_the_model(self, csv: Path) -> None:
        code, out, err = run(self.argv(csv, "y ~ x + site", "site=south,north,east"))
        assert code == 0, err
        # "south" is the reference: the first declared level
        assert "site[T.north]" in out and "site[T.east]" in out and "site[T.south]" not in out
        res = dplong.LongitudinalOLS.from_formula(
            "y ~ x + site",
            pd.read_csv(csv),
            groups="id",
            levels={"site": ["south", "north", "east"]},
        ).fit(epsilon=8.0, scale=1.0, random_state=0)
        assert f"{res.params['site[T.east]']:.4g}" in out

    def test_text_levels_declared_in_the_formula_are_read_as_levels(self, csv: Path) -> None:
        """``C(site, levels=[...])`` declares text levels in the formula, as the API's
        refusal of an undeclared text factor suggests: the reader takes that column as those
        levels, not as numbers (it read every cell as missing, and the fit spent its budget on
        no row; an audit found it), and the fit is the API's."""
        formula = "y ~ x + C(site, levels=['south', 'north', 'east'])"
        code, out, err = run(self.argv(csv, formula))
        assert code == 0, err
        res = dplong.LongitudinalOLS.from_formula(formula, pd.read_csv(csv), groups="id").fit(
            epsilon=8.0, scale=1.0, random_state=0
        )
        name = "C(site, levels=['south', 'north', 'east'])[T.east]"
        assert f"{res.params[name]:.4g}" in out

    def test_text_levels_of_a_quoted_column_declared_in_the_formula(
        self, csv: Path, tmp_path: Path
    ) -> None:
        """``C(Q('study site'), levels=[...])``: a column whose name needs ``Q`` is read as
        the declared levels too (it was read as numbers: every cell missing, the fit on no
        row)."""
        spaced = tmp_path / "spaced.csv"
        pd.read_csv(csv).rename(columns={"site": "study site"}).to_csv(spaced, index=False)
        formula = "y ~ x + C(Q('study site'), levels=['south', 'north', 'east'])"
        code, out, err = run(self.argv(spaced, formula))
        assert code == 0, err
        assert "left out" not in err
        res = dplong.LongitudinalOLS.from_formula(formula, pd.read_csv(spaced), groups="id").fit(
            epsilon=8.0, scale=1.0, random_state=0
        )
        name = "C(Q('study site'), levels=['south', 'north', 'east'])[T.east]"
        assert np.isfinite(res.params[name]) and f"{res.params[name]:.4g}" in out

    def test_levels_of_a_numeric_column_are_numbers(self, csv: Path) -> None:
        argv = self.argv(
            csv, "y ~ x + C(visit) + site", "visit=1,2,3,4,5,6", "site=north,south,east"
        )
        code, out, err = run(argv)
        assert code == 0, err
        assert "C(visit)[T.2]" in out and "C(visit)[T.6]" in out

    @pytest.mark.parametrize(
        ("formula", "levels", "expected"),
        [
            ("y ~ x + site", ("site=",), "argument --levels: must be COLUMN=LEVEL,LEVEL,..."),
            ("y ~ x + site", ("site",), "argument --levels"),
            ("y ~ x + site", ("site=a,a",), "--levels site: the levels must be distinct"),
            ("y ~ x + site", ("place=a,b",), "--levels 'place' is not a column of DATA"),
            ("y ~ x + site", ("site=a", "site=b"), "--levels site=... is given twice"),
            ("y ~ x + C(visit)", ("visit=1,1.0",), "--levels visit: the levels must be distinct"),
            ("y ~ x + site", ("site=true,True",), "--levels site: the levels must be distinct"),
            # two NaNs passed as distinct, then pandas refused their index (an audit)
            ("y ~ x + site", ("site=nan,NaN",), "--levels site: a level must not read as NaN"),
            ("y ~ x + site", ("site=north,nan",), "--levels site: a level must not read as NaN"),
        ],
    )
    def test_bad_levels(
        self, csv: Path, formula: str, levels: tuple[str, ...], expected: str
    ) -> None:
        code, out, err = run(self.argv(csv, formula, *levels))
        assert code == 2 and expected in err, err
        assert "Traceback" not in err and out == ""
        if "argument --levels" not in expected:
            assert err.count("\n") == 1

    def test_mean_takes_levels_of_its_by_column_only(self) -> None:
        code, _, err = run([*MEAN, "--levels", "Cu=1,2,3", "--quiet"])
        assert code == 2 and "reads declared levels of its --by grouping only" in err
        grouped = [*given(MEAN, "--epsilon", "8"), "--levels", "Cu=1,2,3", "--by", "Cu", "--quiet"]
        code, out, err = run(grouped)  # 72 pigs in three groups: ε 8 to locate each
        assert code == 0 and "Weight[Cu=1]" in out and "Weight[Cu=3]" in out, err


def test_numpy_functions_in_a_command_line_formula() -> None:
    """`np.` is available to every formula, as in a Python session that imported numpy."""
    argv = ["fit", "dataset:wage_panel", "--model", "ols", "--groups", "nr", "--epsilon", "4"]
    common = ["--scale", "0.1", "--seed", "1", "--quiet"]
    code, out, err = run([*argv, "--formula", "np.exp(lwage) ~ np.log1p(exper)", *common])
    assert code == 0, err
    assert "np.log1p(exper)" in out and "np.exp(lwage)" in out


def test_between_declares_columns_absorbed_by_the_within_fit() -> None:
    """``--between black`` (constant within every man) reaches ``fit(between=...)``: black is
    reported absorbed and the other coefficients are estimated."""
    argv = ["fit", "dataset:wage_panel", "--model", "ols", "--groups", "nr", "--epsilon", "4"]
    argv += ["--formula", "lwage ~ exper + black", "--estimator", "within"]
    code, out, err = run([*argv, "--between", "black", "--seed", "1"])
    assert code == 0, err
    assert re.search(r"^black\s+withheld: absorbed", out, flags=re.M)
    assert re.search(r"^exper\s+\d", out, flags=re.M)


@pytest.mark.parametrize(
    ("model", "cls", "epsilon"),
    [("ols", dplong.LongitudinalOLS, 1e6), ("panel", dplong.PanelOLS, 64.0)],
)
def test_time_effects_read_the_declared_periods_of_the_time_column(
    model: str, cls: type, epsilon: float
) -> None:
    """``--time year --levels year=1980,...`` (the periods ``TimeEffects`` needs declared): the
    levels are read as the time column's numbers, as the library takes them; they were read
    as text against a numeric column and every such fit was refused. ``--model panel`` reads
    them too (and ``EntityEffects``, what it fits). The release is the library's own, draw
    for draw, its dummies labelled by the years."""
    years = list(range(1980, 1988))
    formula = "lwage ~ union + married + EntityEffects + TimeEffects"  # identified within
    argv = ["fit", "dataset:wage_panel", "--model", model, "--groups", "nr", "--time", "year"]
    argv += ["--levels", "year=" + ",".join(map(str, years)), "--formula", formula]
    code, out, err = run([*argv, "--epsilon", f"{epsilon:g}", "--seed", "2", "--quiet"])
    assert code == 0, err
    wages = dplong.datasets.load_wage_panel()
    built = cls.from_formula(formula, wages, groups="nr", time="year", levels={"year": years})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)
        lib = built.fit(epsilon=epsilon, random_state=2)
    assert lib.params.notna().all()
    for name, value in lib.params.items():
        assert re.search(rf"^{re.escape(str(name))}\s+{value:.4g}\s", out, flags=re.M), name


@pytest.mark.parametrize("command", ["fit", "plan"])
def test_a_time_column_without_time_effects_is_refused_in_the_flags(command: str) -> None:
    """``--time`` given to the pooled family without ``TimeEffects`` (nothing else reads it):
    refused before any noise, the message in the command line's spelling."""
    data = ["dataset:wage_panel", "--groups", "nr"] if command == "fit" else ["--n", "545"]
    argv = [command, *data, "--model", "pooled", "--formula", "lwage ~ union"]
    code, out, err = run([*argv, "--time", "year", "--epsilon", "4"])
    assert code == 2 and out == ""
    assert "--time year is read only for TimeEffects" in err and "drop --time" in err


@pytest.mark.parametrize("command", ["fit", "plan"])
def test_time_effects_without_a_time_column_are_refused_in_the_flags(command: str) -> None:
    """``TimeEffects`` without ``--time``: the model's refusal, in the command line's spelling
    (it said "needs time= ... in levels=" there, and the plan had a refusal of its own)."""
    data = ["dataset:wage_panel", "--groups", "nr"] if command == "fit" else ["--n", "545"]
    argv = [command, *data, "--model", "pooled", "--formula", "lwage ~ union + TimeEffects"]
    code, out, err = run([*argv, "--epsilon", "4"])
    assert code == 2 and out == ""
    assert "TimeEffects needs --time naming the time column (e.g. --time year)" in err
    assert "periods in --levels;" in err and "--levels year=A,B,..." in err
    assert "time=" not in err and "levels=" not in err


def test_time_effects_of_dates_read_alike_from_csv_and_parquet(tmp_path: Path) -> None:
    """A time column of dates with its periods declared as ISO dates: written as text (CSV)
    or stored as dates (Parquet), it is a factor of the declared dates, labelled by them, and
    both files give the same fit (the Parquet column read none of its rows: the declared
    dates had been read as days against a date column, and every row was dropped)."""
    pytest.importorskip("pyarrow")
    pytest.importorskip("dask.dataframe")
    wages = dplong.datasets.load_wage_panel()
    dated = wages.assign(when=pd.to_datetime(wages["year"].astype(str) + "-01-01"))
    columns = ["nr", "when", "lwage", "union", "married"]
    dated[columns].to_parquet(tmp_path / "dates.parquet", index=False)
    dated.assign(when=dated["when"].dt.strftime("%Y-%m-%d"))[columns].to_csv(
        tmp_path / "dates.csv", index=False
    )
    periods = "when=" + ",".join(f"{year}-01-01" for year in range(1980, 1988))
    argv = ["--model", "ols", "--groups", "nr", "--time", "when", "--levels", periods]
    argv += ["--formula", "lwage ~ union + married + EntityEffects + TimeEffects"]
    argv += ["--epsilon", "1e6", "--seed", "0", "--quiet"]
    fits = [run(["fit", str(tmp_path / name), *argv]) for name in ("dates.csv", "dates.parquet")]
    (code, out, err), (code2, out2, err2) = fits
    assert code == code2 == 0, (err, err2)
    assert re.search(r"^C\(when\)\[T\.1987-01-01\]\s+-?\d", out, flags=re.M), out
    assert out == out2


def test_a_time_cell_is_read_on_its_own_whatever_the_other_dates(tmp_path: Path) -> None:
    """A time column of ISO dates is read cell by cell as days since 1970: pandas stores a
    parsed column in one unit, the finest its stamps ask for, so one person's nanosecond
    digits made the column nanoseconds, where another's date after 2262 was out of range,
    and counting from 1970 in nanoseconds crashed the whole file (an audit: a traceback from
    `dplong fit`). Each cell now reads the same with or without the others, to the
    microsecond, and the fit runs."""
    far, fine = "2300-01-01", "2020-01-01T00:00:00.000000001"
    column = pd.Series([fine, "1999-05-05T12:00:00", far, "x"], dtype=object)
    frame = dplong.io.typed(pd.DataFrame({"t": column}), time="t")
    alone = [
        dplong.io.typed(pd.DataFrame({"t": column[[j]]}), time="t")["t"].iloc[0] for j in range(3)
    ]
    assert frame["t"].iloc[:3].tolist() == alone == [18262.0, 10716.5, 120530.0]
    assert np.isnan(frame["t"].iloc[3])  # no date: missing, as a cell on its own
    rows = 300
    panel = pd.DataFrame(
        {
            "id": np.repeat(np.arange(rows), 3),
            "y": np.random.default_rng(0).normal(size=3 * rows),
            "t": np.tile(["2020-01-01", "2021-01-01", "2022-01-01"], rows),
        }
    )
    argv = ["--model", "ols", "--formula", "y ~ 1", "--groups", "id", "--time", "t"]
    argv += ["--epsilon", "1", "--seed", "0", "--quiet"]
    panel.to_csv(tmp_path / "near.csv", index=False)
    panel.assign(t=panel["t"].where(panel.index != 0, far)).to_csv(
        tmp_path / "far.csv", index=False
    )
    (code, out, err), (code2, out2, err2) = (
        run(["fit", str(tmp_path / name), *argv]) for name in ("near.csv", "far.csv")
    )
    assert code == code2 == 0, (err, err2)
    assert out == out2  # the first user's first row stays first in its order


WAGES = ["fit", "dataset:wage_panel", "--groups", "nr", "--seed", "1", "--quiet"]
TAIL = ["--tail-moment", "4", "--tail-bound"]


class TestStatedTail:
    """``--tail-moment K --tail-bound B,...`` is ``tail=dplong.Moment(K, B)`` of the mean and
    of the per-user OLS fit: the same release as the library's, its assumption said."""

    def test_mean(self) -> None:
        argv = [*WAGES, "--model", "mean", "--formula", "lwage ~ 1", "--epsilon", "1"]
        code, out, err = run([*argv, *TAIL, "0.5"])
        assert code == 0, err
        wages = dplong.datasets.load_wage_panel()
        lib = dplong.winsorized_mean(
            wages["lwage"],
            groups=wages["nr"],
            names=["lwage"],
            epsilon=1.0,
            tail=dplong.Moment(4, 0.5),
            random_state=1,
        )
        assert f"{lib.params['lwage']:.4g}" in out and f"{lib.bse['lwage']:.4g}" in out
        assert "Stated moment bound E|x_u - mean|^4 <= [0.5]" in out

    def test_per_user_ols(self) -> None:
        argv = [*WAGES, "--model", "ols", "--formula", "lwage ~ exper", "--epsilon", "2"]
        code, out, err = run([*argv, *TAIL, "0.5,0.01"])
        assert code == 0, err
        lib = dplong.LongitudinalOLS.from_formula(
            "lwage ~ exper", dplong.datasets.load_wage_panel(), groups="nr"
        ).fit(epsilon=2.0, tail=dplong.Moment(4, [0.5, 0.01]), random_state=1)
        for name in ("Intercept", "exper"):
            assert f"{lib.params[name]:.4g}" in out
        assert "E|b_u - mean|^4 <= [0.5, 0.01]" in out

    @pytest.mark.parametrize(
        ("change", "expected"),
        [
            (
                ["--tail-moment", "1.5", "--tail-bound", "1"],
                "--tail-moment 1.5: Moment needs k >= 2",
            ),
            (["--tail-moment", "nan", "--tail-bound", "1"], "--tail-moment nan: Moment needs k"),
            (["--tail-moment", "four", "--tail-bound", "1"], "argument --tail-moment: invalid"),
            (
                [*TAIL, "1,2,3"],
                "--tail-bound: Moment bound must be one number or one per column (2)",
            ),
            ([*TAIL, "1,-2"], "argument --tail-bound: must be a positive number or comma"),
            ([*TAIL, "0"], "argument --tail-bound: must be a positive number"),
            (["--tail-moment", "4"], "--tail-moment and --tail-bound go together"),
            (["--tail-bound", "1"], "--tail-moment and --tail-bound go together"),
            ([*TAIL, "1", "--estimator", "within"], "tail applies to --estimator per-user"),
            ([*TAIL, "1", "--variant", "theory"], "tail shapes the default engine's release"),
        ],
    )
    def test_bad_values(self, change: list[str], expected: str) -> None:
        argv = [*WAGES, "--model", "ols", "--formula", "lwage ~ exper", "--epsilon", "2"]
        code, out, err = run([*argv, *change])
        assert code == 2 and expected in err, err
        assert "Traceback" not in err and out == ""

    def test_not_an_option_of_the_other_models(self) -> None:
        argv = [*WAGES, "--model", "pooled", "--formula", "lwage ~ exper", "--epsilon", "2"]
        code, _, err = run([*argv, *TAIL, "1"])
        assert code == 2 and "--tail-moment is not an option of --model pooled" in err


def test_lower_declares_the_means_support() -> None:
    """``--lower 0`` is ``winsorized_mean(lower=0)``: RAND HIE spending, whose heavy tail's clip
    then stops at 0 (the same release as the library's, its clip said in the warning); a
    model whose support is its own (the Poisson mean's, from 0) does not take it."""
    argv = ["fit", "dataset:randhie", "--model", "mean", "--formula", "meddol ~ 1"]
    argv += ["--groups", "zper", "--epsilon", "1", "--seed", "1", "--lower", "0"]
    code, out, err = run(argv)
    assert code == 0, err
    hie = dplong.datasets.load_randhie()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)
        lib = dplong.winsorized_mean(
            hie["meddol"], groups=hie["zper"], names=["meddol"], epsilon=1.0, lower=0.0,
            random_state=1,
        )  # fmt: skip
    assert f"{lib.params['meddol']:.4g}" in out and f"{lib.bse['meddol']:.4g}" in out
    assert lib.projection_interval.loc["meddol", "lower"] == 0.0
    assert "clipped outside [0, " in out
    argv[argv.index("0")] = "nan"
    code, out, err = run(argv)
    assert code == 2 and "lower must be finite, got [nan]" in err and out == ""
    argv[argv.index("mean")] = "poisson"
    argv[argv.index("meddol ~ 1")] = "mdvis ~ 1"
    code, _, err = run(argv)
    assert code == 2 and "--lower is not an option of --model poisson" in err


PTR_BOUNDS = {"lwage": (-4.0, 5.0), "exper": (0.0, 20.0), "black": (0.0, 1.0)}
PTR = [*WAGES, "--model", "pooled", "--formula", "lwage ~ exper + black", "--epsilon", "4"]
PTR += ["--bounds", "lwage=-4,5;exper=0,20;black=0,1", "--max-rows", "8"]


class TestPooledPTR:
    """``--method ptr --ptr-floor C0 [--coef-bound R]`` is ``PooledOLS.fit(method="ptr",
    ...)``: the ePTR release of the coefficients."""

    def test_release(self) -> None:
        code, out, err = run([*PTR, "--method", "ptr", "--ptr-floor", "0.1", "--coef-bound", "2"])
        assert code == 0, err
        lib = dplong.PooledOLS.from_formula(
            "lwage ~ exper + black",
            dplong.datasets.load_wage_panel(),
            groups="nr",
            bounds=PTR_BOUNDS,
        ).fit(epsilon=4.0, max_rows=8, method="ptr", ptr_floor=0.1, coef_bound=2.0, random_state=1)
        assert lib.variant == "ePTR" and "ePTR, gaussian noise" in out
        for name in ("Intercept", "exper", "black"):
            assert f"{lib.params[name]:.4g}" in out and f"{lib.noise_sd[name]:.4g}" in out

    @pytest.mark.parametrize(
        ("change", "expected"),
        [
            (["--method", "ptr"], "--method ptr needs --ptr-floor"),
            (["--ptr-floor", "0.1"], "--ptr-floor and --coef-bound apply to --method ptr only"),
            (["--coef-bound", "2"], "--ptr-floor and --coef-bound apply to --method ptr only"),
            (["--method", "ptr", "--ptr-floor", "9"], "--ptr-floor must be below --max-rows 8"),
            (["--method", "ptr", "--ptr-floor", "-1"], "argument --ptr-floor: must be a positive"),
            (["--method", "ptr", "--ptr-floor", "0.1", "--coef-bound", "0"], "--coef-bound"),
            (["--method", "gls"], "argument --method: invalid choice: 'gls'"),
            (["--scale", "1"], "--scale: not an option of --model pooled"),
            (["--bound", "1", "--focus", "exper"], "--bound, --focus: not an option of --model"),
        ],
    )
    def test_bad_values(self, change: list[str], expected: str) -> None:
        code, out, err = run([*PTR, *change])
        assert code == 2 and expected in err, err
        assert "Traceback" not in err and out == ""

    def test_ptr_needs_every_range(self) -> None:
        argv = [*PTR, "--method", "ptr", "--ptr-floor", "0.1"]
        argv[argv.index("--bounds") + 1] = "lwage=-4,5;black=0,1"
        code, _, err = run(argv)
        assert code == 2 and "needs public ranges (--bounds) for every column" in err, err


NW = ["fit", "dataset:dietox", "--model", "nw", "--formula", "Weight ~ Time", "--domain", "1,12"]
NW += ["--bounds", "0,150", "--bandwidth", "2", "--grid", "6", "--epsilon", "4", "--seed", "1"]
NW += ["--quiet"]


class TestNadarayaWatson:
    """``--model nw``: item-level Nadaraya–Watson by ePTR, every row a unit (no ``--groups``);
    its ``--bounds`` is the range of y, ``LO,HI``, where pooled's names columns."""

    def test_release(self) -> None:
        code, out, err = run([*NW, "--error-sd", "10", "--ptr-floor", "0.1"])
        assert code == 0, err
        lib = dplong.NadarayaWatson.from_formula(
            "Weight ~ Time",
            dplong.datasets.load_dietox(),
            domain=(1, 12),
            bounds=(0, 150),
            bandwidth=2.0,
            grid=6,
        ).fit(epsilon=4.0, error_sd=10.0, ptr_floor=0.1, random_state=1)
        assert "NadarayaWatson results (item-level differential privacy)" in out
        assert not lib.params.isna().any()  # 861 rows clear the floor: released
        for value in (*lib.params, *lib.bse):
            assert f"{value:.4g}" in out

    @pytest.mark.parametrize(
        ("change", "expected"),
        [
            (("--groups", "Pig"), "--groups is not an option of --model nw: it is item-level"),
            (("--bounds", None), "--model nw needs --bounds"),
            (("--bandwidth", None), "--model nw needs --bandwidth"),
            (("--bounds", "150,0"), "argument --bounds: must be LO,HI with finite LO < HI"),
            (("--bounds", "a=0,150"), "argument --bounds: must be LO,HI"),
            (("--ptr-floor", "1.5"), "the degree floor must lie in (0, 1)"),
            (("--error-sd", "0"), "argument --error-sd: must be a positive number"),
            (("--noise-sd", "10"), "unrecognized arguments: --noise-sd"),  # --error-sd's old name
            (("--kernel", "box"), "argument --kernel: invalid choice"),
            (("--scale", "1"), "--scale: not an option of --model nw"),
            (("--variant", "theory"), "--variant: not an option of --model nw"),
            (("--time", "Time"), "--time is not an option of --model nw"),
        ],
    )
    def test_bad_values(self, change: tuple[str, str | None], expected: str) -> None:
        flag, value = change
        argv = list(NW)
        if flag in argv:
            at = argv.index(flag)
            del argv[at : at + 2]
        if value is not None:
            argv += [flag, value]
        code, out, err = run(argv)
        assert code == 2 and expected in err, err
        assert "Traceback" not in err and out == ""

    def test_pooled_bounds_still_name_columns(self) -> None:
        code, _, err = run([*PTR[:-4], "--bounds", "0,150"])
        assert code == 2 and "bounds must read COL=LO,HI" in err, err

    def test_help_says_each_models_bounds(self) -> None:
        code, out, _ = run(["fit", "--help"])
        assert code == 0
        said = " ".join(out.split())
        assert (
            "nw: public range of y" in said and "pooled, between, panel, re: public ranges" in said
        )


class TestPlanPTR:
    """``dplong plan`` answers for the ePTR releases from public facts: refused by the budget
    only below the ε its Gaussian release's zCDP conversion certifies, the noise sd the fit
    will have (given its test passes)."""

    @pytest.mark.parametrize(
        ("change", "least"),
        [
            ([], "7e-05"),
            (["--bandwidth", "0.05"], "7e-05"),
            (["--n", "300"], "any (every ε down to 0.0001)"),
        ],
    )
    def test_nadaraya_watson_plans_at_the_audited_values(
        self, change: list[str], least: str
    ) -> None:
        """The audit's command ended in scipy's ``f(a) and f(b) must have different signs``:
        the search for the smallest ε reached an ε below what the zCDP conversion certifies
        at δ = 1/n², where ``gaussian_shares`` assumed a root in [1e-300, ε]."""
        argv = ["plan", "--model", "nw", "--formula", "y ~ x", "--n", "3000", "--epsilon", "4"]
        argv = given([*argv, "--domain", "0,1", "--bounds=-2,2", "--bandwidth", "0.2"], *change)
        code, out, err = run(argv)
        assert code == 0 and err == "", err
        assert "Decision: released" in out and f"Smallest epsilon released: {least};" in out
        if least.startswith("any"):  # the bottom of the search: at δ = 1/300², no floor above it
            return
        code, out, err = run(given(argv, "--epsilon", "1e-5"))  # below it: refused, in words
        assert code == 0 and "Decision: REFUSED before any noise" in out, err
        assert "Refusal: --epsilon 1e-05 is too small for a Gaussian release" in out

    def test_nadaraya_watson_counts_rows(self) -> None:
        argv = ["plan", "dataset:dietox", *NW[2:-3]]
        code, out, err = run(argv)
        assert code == 0, err
        assert "Model: nw " in out and "Rows (n, each a unit): 861" in out
        said = " ".join(out.split())  # the notes are wrapped
        assert "NadarayaWatson" not in said and "every row has a statistic" in said
        assert "every user" not in said and "one user's" not in said
        assert "Decision: released" in out
        plan = dplong.plan(
            "Weight ~ Time",
            model="nw",
            n=861,
            epsilon=4.0,
            domain=(1, 12),
            bounds=(0, 150),
            bandwidth=2.0,
            grid=6,
        )
        assert f"{plan.table['noise_sd'].iloc[0]:.4g}" in out

    def test_pooled_ptr(self) -> None:
        argv = ["plan", "--n", "545", "--model", "pooled", "--formula", "lwage ~ exper + black"]
        argv += ["--epsilon", "4", "--bounds", "lwage=-4,5;exper=0,20;black=0,1"]
        code, out, err = run([*argv, "--max-rows", "8", "--method", "ptr", "--ptr-floor", "0.1"])
        assert code == 0, err
        assert "Model: pooled " in out and "Decision: released" in out
        assert "PooledOLS" not in out
        assert re.search(r"0: exper\s+0\.75", out)


class TestDataFiles:
    """A directory or glob is read as Parquet files through Dask: one of CSV files, or a file
    Dask cannot read, is one ``dplong`` error naming DATA, never Dask's wrapper text."""

    @pytest.mark.parametrize("kind", ["glob", "directory"])
    def test_csv_files_are_refused_by_name(self, tmp_path: Path, kind: str) -> None:
        wages = dplong.datasets.load_wage_panel()
        folder = tmp_path / "parts"
        folder.mkdir()
        wages.iloc[:2000].to_csv(folder / "a.csv", index=False)
        wages.iloc[2000:].to_csv(folder / "b.csv", index=False)
        source = str(folder / "*.csv") if kind == "glob" else str(folder)
        code, out, err = run(replace("DATA", source))
        what = "a glob is read as Parquet files" if kind == "glob" else "a directory is read"
        assert code == 2 and out == "" and err.count("\n") == 1, err
        assert f"dplong: error: cannot read DATA {source!r}: {what}" in err
        assert "CSV files (a.csv, b.csv); give one .csv file, or .parquet files" in err
        assert "read_parquet" not in err and "pandas backend" not in err

    def test_csv_files_beside_parquet_files_are_refused_not_skipped(self, tmp_path: Path) -> None:
        """A directory of Parquet files with a CSV file among them: Dask reads the Parquet
        files only, so the CSV file's rows were left out of the fit without a word (an
        audit). Refused before reading, naming the file; a file that is not data is read
        past."""
        pytest.importorskip("pyarrow")
        pytest.importorskip("dask.dataframe")
        wages = dplong.datasets.load_wage_panel()
        folder = tmp_path / "parts"
        folder.mkdir()
        wages.iloc[:2000].to_parquet(folder / "a.parquet", index=False)
        wages.iloc[2000:].to_csv(folder / "late.csv", index=False)
        (folder / "README.md").write_text("the wage panel in two parts\n")
        code, out, err = run(replace("DATA", str(folder)))
        assert code == 2 and out == "" and err.count("\n") == 1, err
        assert "holds CSV files (late.csv) beside its Parquet files" in err
        assert "move the CSV files out, or write them as Parquet" in err
        (folder / "late.csv").unlink()
        code, _, err = run(replace("DATA", str(folder)))
        assert code == 0, err
        # other files are read past, and said so (a .tsv was passed over without a word, an
        # audit); the writers' own markers are no data, and are not
        wages.iloc[2000:].to_csv(folder / "late.tsv", index=False, sep="\t")
        for marker in ("_SUCCESS", ".a.parquet.crc"):
            (folder / marker).write_bytes(b"")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            dplong.io.read_data(str(folder), groups="nr")
        told = [str(w.message) for w in caught if issubclass(w.category, DataHolderWarning)]
        assert any("its 2 other file(s) (README.md, late.tsv) are not read" in t for t in told)

    def test_a_directorys_parquet_parts_are_all_read_or_refused(self, tmp_path: Path) -> None:
        """Dask reads a directory's files named .parquet, .parq or .pq (case sensitive): a part
        written without the suffix (as Spark names them) or as .PARQUET was left unread without
        a word, and a stale _metadata footer hid a part added since (an audit). A hive layout
        (``id=01/``) typed each person's id from every folder's name: ids 01 and 1 were one
        person where another folder read as text. Refused, or read whole."""
        pytest.importorskip("pyarrow")
        dd = pytest.importorskip("dask.dataframe")
        wages = dplong.datasets.load_wage_panel()
        first, later = wages.iloc[:2000], wages.iloc[2000:]
        for name, match in (("part-00001", "part-00001"), ("b.PARQUET", "b.PARQUET")):
            folder = tmp_path / name.replace(".", "_")
            folder.mkdir()
            first.to_parquet(folder / "a.parquet", index=False)
            later.to_parquet(folder / name, index=False)
            code, out, err = run(replace("DATA", str(folder)))
            assert code == 2 and out == "" and err.count("\n") == 1, err
            assert f"Parquet files named otherwise ({match})" in err
        footer = tmp_path / "footer"
        dd.from_pandas(first, npartitions=1).to_parquet(
            footer, write_metadata_file=True, write_index=False
        )
        later.to_parquet(footer / "part.1.parquet", index=False)
        read = dplong.io.read_data(str(footer), groups="nr")
        assert len(read) == len(wages)  # the footer listed part.0 alone
        hive = tmp_path / "hive"
        for person, rows in (("01", first), ("1", later)):
            (hive / f"nr={person}").mkdir(parents=True)
            rows.drop(columns="nr").to_parquet(hive / f"nr={person}" / "a.parquet", index=False)
        code, _, err = run(replace("DATA", str(hive)))
        assert code == 2 and "its folders name values of ['nr'] (a hive layout" in err, err
        # through a glob alike, and a glob's folders are refused, not read past (an audit)
        for pattern in (f"{hive}/*/*.parquet", f"{hive}/**/*.parquet"):
            code, _, err = run(replace("DATA", pattern))
            assert code == 2 and "(a hive layout" in err, err
        spark = tmp_path / "spark"
        (spark / "2024.parquet").mkdir(parents=True)
        first.to_parquet(spark / "2023.parquet", index=False)
        later.to_parquet(spark / "2024.parquet" / "part-0.parquet", index=False)
        code, _, err = run(replace("DATA", f"{spark}/*.parquet"))
        assert code == 2 and "the glob matches folders (2024.parquet)" in err, err
        # dplong plan reads half-precision ids as the fit does (it crashed on them)
        halves = tmp_path / "halves.parquet"
        first.assign(nr=first["nr"].astype(np.float16)).to_parquet(halves, index=False)
        plan = ["plan", str(halves), "--model", "mean", "--formula", "lwage ~ 1"]
        code, out, err = run([*plan, "--groups", "nr", "--epsilon", "8"])
        assert code == 0 and "Users (n):" in out, err

    def test_a_file_dask_cannot_read_is_said_in_the_readers_words(self, tmp_path: Path) -> None:
        pytest.importorskip("pyarrow")
        pytest.importorskip("dask.dataframe")
        (tmp_path / "part.dat").write_bytes(b"not parquet")
        source = str(tmp_path / "*.dat")
        code, _, err = run(replace("DATA", source))
        assert code == 2 and err.count("\n") == 1, err
        assert f"cannot read DATA {source!r} as Parquet: " in err and "part.dat" in err
        assert "An error occurred while calling" not in err and "pandas backend" not in err

    @pytest.mark.parametrize(
        ("suffix", "spoil"),
        [
            (".csv.gz", lambda packed: packed[: len(packed) // 2]),  # EOFError
            (".csv.gz", lambda packed: packed[:-8] + bytes([packed[-8] ^ 1]) + packed[-7:]),
            (".csv.xz", lambda packed: packed[: len(packed) // 2]),
            (".csv.bz2", lambda packed: packed[:100] + b"\0" * 64 + packed[164:]),
            (".csv.zip", lambda packed: packed[: len(packed) // 2]),
        ],
        ids=["gzip cut short", "gzip checksum", "xz cut short", "bz2 corrupt", "zip cut short"],
    )
    def test_a_compressed_file_cut_short_or_corrupt_is_said_so(
        self, tmp_path: Path, suffix: str, spoil: Any
    ) -> None:
        """A truncated compressed CSV file escaped as a traceback (EOFError, lzma.LZMAError,
        zipfile.BadZipFile are not OSErrors), and a corrupt one was said in gzip's words, its
        checksum of the rows among them ("CRC check failed 0x58df09fc != ..."; an audit)."""
        whole = tmp_path / f"whole{suffix}"
        dplong.datasets.load_wage_panel().to_csv(whole, index=False)
        path = tmp_path / f"spoilt{suffix}"
        path.write_bytes(spoil(whole.read_bytes()))
        for command in (replace("DATA", str(path)), ["plan", str(path), *PLAN_MEAN]):
            code, out, err = run(command)
            assert code == 2 and out == "" and "Traceback" not in err, err
            assert err.endswith(
                f"dplong: error: cannot read DATA {str(path)!r}: it could not be read to its end "
                "(a compressed file cut short or corrupt?); write it again\n"
            ), err

    @pytest.mark.parametrize("part_name", ["a.parquet", "b.parquet"])
    @pytest.mark.parametrize("lacking", ["lwage", "nr"])
    def test_a_parquet_file_lacking_a_column_is_named_before_any_read(
        self, tmp_path: Path, lacking: str, part_name: str
    ) -> None:
        """One Parquet file of a directory without a column the others hold failed as Dask
        read the rows, a KeyError's traceback (an audit); it is refused by its name now,
        before the rows are read, by the plan too (its read of the ids and its check of the
        formula's columns: it once planned where the fit refused). Where the first file lacks
        it (Dask reads the first file's columns), the fit tells the others' as not read before
        the formula finds no such column (it was said to be no column of DATA alone: a later
        audit); a column added to later files is no refusal."""
        pytest.importorskip("pyarrow")
        pytest.importorskip("dask.dataframe")
        _, folder = _parquet_files(tmp_path)
        part = folder / part_name
        pd.read_parquet(part).drop(columns=[lacking]).to_parquet(part, index=False)
        argv = ["--groups", "nr", "--model", "mean", "--formula", "lwage ~ 1", "--epsilon", "1"]
        for command in (["fit", *argv, "--scale", "1"], ["plan", *argv]):
            code, out, err = run([command[0], str(folder), *command[1:]])
            assert code == 2 and out == "" and "Traceback" not in err, err
            if command[0] == "fit" and part_name == "a.parquet":  # the columns Dask takes
                # are the first file's: the others' extra column is not read, and said so
                told = f"some of its files hold columns the others lack ({lacking!r})"
                assert told in err and "is not a column of" in err, err
                continue
            assert err.endswith(
                f"its file {str(part)!r} has no column {lacking!r}, which another of its files "
                "holds; every file of a directory or glob must hold every column read\n"
            ), err

    def test_a_parquet_file_with_a_corrupt_page_is_said_so(self, tmp_path: Path) -> None:
        """A Parquet file whose footer reads but whose page does not failed as the model read
        its rows, a traceback in pyarrow's words (an audit)."""
        parquet = pytest.importorskip("pyarrow.parquet")
        pytest.importorskip("dask.dataframe")
        one, _ = _parquet_files(tmp_path)
        spoilt = bytearray(one.read_bytes())
        stored = parquet.ParquetFile(one).metadata
        column = stored.row_group(0).column(stored.schema.names.index("lwage"))
        spoilt[column.data_page_offset + 2 : column.data_page_offset + 18] = b"\xff" * 16
        one.write_bytes(bytes(spoilt))
        argv = ["--groups", "nr", "--model", "mean", "--formula", "lwage ~ 1", "--epsilon", "1"]
        code, out, err = run(["fit", str(one), *argv, "--scale", "1"])
        assert code == 2 and out == "" and "Traceback" not in err, err
        assert err.endswith(
            f"dplong: error: cannot read DATA {str(one)!r}: one of its Parquet files could not be "
            "read when its rows were (OSError in the reader: a corrupt file?); write it again\n"
        ), err


def _parquet_files(tmp_path: Path) -> tuple[Path, Path]:
    """The wage panel as one Parquet file and as a directory of two."""
    wages = dplong.datasets.load_wage_panel()
    one = tmp_path / "wages.parquet"
    wages.to_parquet(one, index=False)
    folder = tmp_path / "parts"
    folder.mkdir()
    wages.iloc[:2000].to_parquet(folder / "a.parquet", index=False)
    wages.iloc[2000:].to_parquet(folder / "b.parquet", index=False)
    return one, folder


PLAN_MEAN = ["--groups", "nr", "--model", "mean", "--formula", "lwage ~ 1", "--epsilon", "1"]


class TestParquetWarnings:
    """pandas (3.1) warns Dask's Parquet reader of a deprecation, once per file read: that
    warning, and only it, is not the data holder's to read."""

    @pytest.mark.parametrize("kind", ["file", "directory", "glob"])
    def test_fit_prints_no_deprecation(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
    ) -> None:
        pytest.importorskip("pyarrow")
        pytest.importorskip("dask.dataframe")
        one, folder = _parquet_files(tmp_path)
        source = {"file": str(one), "directory": str(folder), "glob": str(folder / "*.parquet")}
        fitted = dplong.cli.fit._fitted  # patched where fit looks it up

        def fit_and_warn(*args: Any, **kwargs: Any) -> Any:
            warnings.warn("another library's note", FutureWarning, stacklevel=2)
            return fitted(*args, **kwargs)

        monkeypatch.setattr(dplong.cli.fit, "_fitted", fit_and_warn)
        argv = replace("DATA", source[kind])
        for model in ("ols", "pooled"):  # reduced where the files lie; read into memory
            argv[argv.index("--model") + 1] = model
            if model == "pooled":
                argv = [a for a in argv if a not in ("--scale", "1,0.01")]
            code, _, err = run([a for a in argv if a != "--quiet"])
            assert code == 0, err
            assert "is deprecated" not in err and "PDEP" not in err and "Warning" not in err
            assert "dplong: warning: another library's note" in err  # other warnings still show

    def test_plan_prints_no_deprecation(self, tmp_path: Path) -> None:
        """In a process of its own: ``dplong plan`` records no warning, Python prints them."""
        pytest.importorskip("pyarrow")
        pytest.importorskip("dask.dataframe")
        _, folder = _parquet_files(tmp_path)
        done = subprocess.run(
            [sys.executable, "-W", "always", "-m", "dplong", "plan", str(folder), *PLAN_MEAN],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert "Users (n): 545" in done.stdout
        for text in ("DeprecationWarning", "FutureWarning", "Pandas4Warning", "deprecated"):
            assert text not in done.stderr, done.stderr


class TestPrivacyUnit:
    """The command's words say the unit a model protects: the user, or for an item-level
    model (``nw``) the row."""

    def test_help_says_item_level_for_nw(self) -> None:
        item_level = [name for name, spec in MODELS.items() if not spec.uses_groups]
        assert item_level == ["nw"]
        code, out, _ = run(["--help"])
        assert code == 0
        assert "fit a model with user-level (item-level for nw) differential privacy" in " ".join(
            out.split()
        )
        code, out, _ = run(["fit", "--help"])
        said = " ".join(out.split())
        assert "Fit a model with user-level (item-level for nw) differential privacy" in said
        code, out, _ = run(["plan", "--help"])
        said = " ".join(out.split())
        assert "for nw, the number of rows" in said and "count the rows of nw" in said

    def test_plan_refuses_the_fits_own_options_by_name(self, tmp_path: Path) -> None:
        """A fit's command line with ``plan`` for ``fit`` (an audit's first try) was refused as
        "unrecognized arguments", and ``--seed 3``'s 3 taken for DATA: the fit's noise and
        output options are refused by name, and no report is written."""
        argv = ["plan", "--model", "mean", "--formula", "lwage ~ 1", "--groups", "nr"]
        argv += ["--epsilon", "1", "dataset:wage_panel"]
        report = tmp_path / "plan.html"
        code, out, err = run([*argv, "--seed", "3", "--report", str(report), "--quiet"])
        assert code == 2 and out == "" and not report.exists(), err
        assert "--seed, --report and --quiet are options of dplong fit alone" in err, err
        code, _, err = run([*argv, "--alpha", "0.1"])
        assert code == 2 and "--alpha is an option of dplong fit alone" in err, err
        code, out, err = run(argv)
        assert code == 0 and "Decision:" in out, err

    @pytest.mark.parametrize(
        ("term", "said"),
        [
            ("I(exper + 0 * np.testing._private.utils.os.system('touch run'))", "'_private'"),
            ("I(exper * 0 + np.ma.core.builtins.open('run', 'w'))", "module builtins"),
            ("I(exper * 0 + (print('LEAK', lwage.to_numpy()[:5]) is None))", "'print'"),
            ("I(lwage * 0 + np.concatenate([lwage.to_numpy()[100:101], [0.]])[0])", "slicing"),
        ],
    )
    @pytest.mark.parametrize("command", ["fit", "plan"])
    def test_a_formula_runs_no_code_and_reads_no_other_row(
        self, command: str, term: str, said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """An audit's formulas, refused by both commands before anything is evaluated (exit 2,
        no file written, nothing of the data printed): a shell command and a file opened through
        numpy's own modules, the outcome's values printed, and every user given the outcome of
        row 100 (a ledger at ε = 1 would have released it almost exactly)."""
        monkeypatch.chdir(tmp_path)
        argv = [command, "--model", "ols", "--formula", f"lwage ~ exper + {term}"]
        argv += ["--groups", "nr", "--epsilon", "1"]
        argv += ["dataset:wage_panel", "--quiet"] if command == "fit" else ["--n", "545"]
        code, out, err = run(argv)
        assert code == 2 and said in err, err
        assert not any(line.startswith("LEAK") for line in (out + err).splitlines())
        assert not list(tmp_path.iterdir())

    def test_plan_asks_nw_for_rows(self) -> None:
        argv = ["plan", "--model", "nw", "--formula", "Weight ~ Time", "--epsilon", "4"]
        argv += ["--domain", "1,12", "--bounds", "0,150", "--bandwidth", "2"]
        code, _, err = run(argv)
        assert code == 2 and "give either --n (the number of rows, each a unit) or DATA\n" in err
        argv[1:3] = ["--model", "mean"]
        code, _, err = run(argv[:7])
        assert code == 2 and "(the number of users) or DATA with --groups" in err

    def test_the_report_protects_what_the_results_say(
        self, ols_run: tuple[str, str, str], tmp_path: Path
    ) -> None:
        """The report's header says the unit the results protect (the summary's title):
        every row on its own for the item-level ``nw``, a user's rows together for ``ols``;
        and its footer counts rows or users accordingly."""
        user_level = ols_run[2]
        assert "All rows of a user are protected together" in user_level
        assert "the number of users, the formula" in user_level
        report = tmp_path / "nw.html"
        code, _, err = run([*NW, "--report", str(report)])
        assert code == 0, err
        page = report.read_text(encoding="utf-8")
        assert "NadarayaWatson results (item-level differential privacy)" in page
        assert "Every row is a unit, protected on its own (item-level privacy)" in page
        assert "the number of rows, the formula" in page
        assert "All rows of a user" not in page and "number of users" not in page

    def test_plan_says_the_model_flag_and_the_unit(self) -> None:
        """``dplong plan`` names the model as ``--model`` does (not its Python class), says
        the unit n counts in its notes, and a refusal in the command line's words."""
        argv = ["plan", "--n", "545", "--model", "mean", "--formula", "lwage ~ 1"]
        code, out, err = run([*argv, "--epsilon", "1"])
        assert code == 0, err
        said = " ".join(out.split())  # the notes are wrapped
        assert "Model: mean " in out and "ColumnMean" not in out
        assert "every user has a statistic" in said and "one user's statistic" in said
        code, out, err = run([*argv, "--epsilon", "0.01", "--by", "year", "--levels", "year=1,2"])
        assert code == 0 and "Decision: REFUSED" in out, err
        assert "ColumnMean" not in out and "__user__" not in out

    def test_plan_says_a_refusal_and_warnings_with_flags(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The plan's refusal and warnings are the fit's words, written for Python: the
        command line says a model class as ``--model NAME`` and a keyword as its flag, as
        every other message of the command does."""
        planned = dplong.plan

        def said_in_python(*args: Any, **kwargs: Any) -> Any:
            results = planned(*args, **kwargs)
            return dataclasses.replace(
                results,
                refusal="ColumnMean needs levels={'year': [...]} for by='year'",
                warnings=("PooledOLS.fit: by_constant=True is ignored",),
            )

        monkeypatch.setattr(dplong, "plan", said_in_python)
        argv = ["plan", "--n", "545", "--model", "mean", "--formula", "lwage ~ 1"]
        code, out, err = run([*argv, "--epsilon", "1"])
        assert code == 0, err
        assert "Refusal: --model mean needs --levels year=A,B,... for --by year" in out
        assert "Warning: --model pooled: --by-constant is ignored" in out
        assert "ColumnMean" not in out and "PooledOLS" not in out

    @pytest.mark.parametrize(
        ("flags", "code", "expected"),
        [
            (["--by", "year"], 2, "dplong: error: --by year needs its declared levels"),
            (["--by", "year", "--levels", "year=1980,1981,1982"], 0, "0: lwage[year=1982]"),
            (["--by", "year", "--levels", "year=1980,1981", "--by-constant"], 0, "released"),
            (["--scale", "0.25", "--lower", "0"], 0, "absolute"),
        ],
    )
    def test_plan_of_a_mean_by_a_column(self, flags: list[str], code: int, expected: str) -> None:
        """A plan of ``--model mean --by year`` said "--by year is not a column of data;
        columns are ['__user__', '__time__', 'lwage']" (the stand-in rows lacked the column,
        and their id columns leaked), and refused ``--levels year=...`` as a column "the
        formula does not read"; any fit option of the mean (``--scale``, ``--by-constant``)
        was "not an option"."""
        argv = ["plan", "--n", "545", "--model", "mean", "--formula", "lwage ~ 1"]
        done, out, err = run([*argv, "--epsilon", "8", *flags])
        assert done == code and expected in out + err, out + err
        assert "__user__" not in out + err

    def test_nw_results_are_item_level_and_the_mean_user_level(self) -> None:
        code, out, err = run(NW)
        assert code == 0 and "NadarayaWatson results (item-level differential privacy)" in out
        assert "user-level" not in out, err
        code, out, _ = run([*MEAN, "--quiet"])
        assert code == 0 and "Mean results (user-level differential privacy)" in out


class TestPlanReadsOnlyItsColumns:
    """``dplong plan DATA`` counts n from the ``--groups`` column (the rows for ``nw``): a
    CSV file's other columns are not parsed, however many there are."""

    @pytest.fixture(scope="class")
    def wide(self, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
        # written once for the class (900 rows of 2,000 columns): the tests only read them
        tmp_path = tmp_path_factory.mktemp("wide")
        rng = np.random.default_rng(2)
        ids = np.repeat([f"u{i:03d}" for i in range(300)], 3)
        others = pd.DataFrame(
            rng.normal(size=(ids.size, 1999)), columns=[f"c{j}" for j in range(1999)]
        )
        frame = pd.concat(
            [others.iloc[:, :5], pd.DataFrame({"id": ids}), others.iloc[:, 5:]], axis=1
        )
        frame["c3"] = frame["c3"].astype(object)
        frame.loc[7, "c3"] = "?"  # a cell that is not a number: not read, so never a problem
        wide, narrow = tmp_path / "wide.csv", tmp_path / "narrow.csv"
        frame.to_csv(wide, index=False)
        frame[["c0", "id"]].to_csv(narrow, index=False)  # the formula's column and the ids
        return wide, narrow

    @staticmethod
    def _spy(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
        """The keywords of every ``pandas.read_csv`` call from now on."""
        calls: list[dict[str, Any]] = []
        read_csv = pd.read_csv

        def spy(*args: Any, **kwargs: Any) -> Any:
            calls.append(kwargs)
            return read_csv(*args, **kwargs)

        monkeypatch.setattr(pd, "read_csv", spy)
        return calls

    def test_only_the_id_column_is_read(
        self, wide: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        argv = ["--groups", "id", "--model", "mean", "--formula", "c0 ~ 1", "--epsilon", "1"]
        expected = run(["plan", str(wide[1]), *argv])
        assert expected[0] == 0 and "Users (n): 300" in expected[1], expected[2]
        calls = self._spy(monkeypatch)
        assert run(["plan", str(wide[0]), *argv]) == expected  # the same plan, from 2000 columns
        # the header is read too: as written (a name given twice is refused), as pandas names it
        reads = [call for call in calls if call.get("nrows") not in (0, 1)]
        assert len(reads) == 1 and list(reads[0]["usecols"]) == ["id"], calls

    def test_nw_counts_rows_from_one_column(
        self, wide: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        argv = ["--model", "nw", "--formula", "c1 ~ c2", "--epsilon", "4", "--domain=-3,3"]
        argv += ["--bounds=-3,3", "--bandwidth", "1", "--grid", "4"]
        calls = self._spy(monkeypatch)
        code, out, err = run(["plan", str(wide[0]), *argv])
        assert code == 0 and "Rows (n, each a unit): 900" in out, err
        reads = [call for call in calls if call.get("nrows") not in (0, 1)]
        assert len(reads) == 1 and len(reads[0]["usecols"]) == 1, calls

    @pytest.mark.parametrize(
        ("flags", "expected"),
        [
            (["--groups", "user"], "dplong: error: --groups 'user' is not a column of DATA\n"),
            (["--groups", "id", "--time", "when"], "--time 'when' is not a column of DATA"),
        ],
    )
    def test_a_missing_column_is_named_by_its_flag(
        self, wide: tuple[Path, Path], flags: list[str], expected: str
    ) -> None:
        argv = ["plan", str(wide[0]), "--model", "ols", "--formula", "c0 ~ c1", "--epsilon", "1"]
        code, out, err = run([*argv, *flags])
        assert code == 2 and out == "" and expected in err, err

    @pytest.mark.parametrize(
        ("flags", "expected"),
        [
            (["--formula", "c0 ~ c1 + nope"], "--formula 'nope' is not a column of DATA"),
            (["--formula", "np.log1p(c0) ~ Q('no pe')"], "--formula 'no pe' is not a column"),
            (["--model", "mean", "--formula", "c0 ~ 1", "--by", "arm"], "--by 'arm' is not a"),
        ],
    )
    def test_a_column_the_fit_needs_is_checked_against_the_header(
        self, wide: tuple[Path, Path], flags: list[str], expected: str
    ) -> None:
        """A plan of a formula naming a column DATA lacks planned it (the stand-in rows held
        it): the fit refuses it, so the plan does too, from the header alone."""
        argv = ["plan", str(wide[0]), "--groups", "id", "--epsilon", "1"]
        model = [] if "--model" in flags else ["--model", "ols"]
        code, out, err = run([*argv, *model, *flags, "--levels", "arm=0,1"] if "--by" in flags
                             else [*argv, *model, *flags])  # fmt: skip
        assert code == 2 and out == "" and expected in err, err


def test_a_file_not_comma_separated_is_named_so(tmp_path: Path) -> None:
    """A file delimited by ';' reads as one column whose name holds them all: the flag's
    column is missing, and the message says why (an audit found the bare "not a column")."""
    path = tmp_path / "semicolons.csv"
    path.write_text("id;x;y\n1;0.5;1.0\n2;0.7;2.0\n")
    argv = ["fit", str(path), "--model", "pooled", "--formula", "y ~ x", "--groups", "id"]
    code, out, err = run([*argv, "--epsilon", "1"])
    assert code == 2 and out == ""
    said = "--groups 'id' is not a column of DATA (one column: DATA must be comma-separated"
    assert said in err and "x;y" not in err, err


def test_a_file_that_is_not_utf8_is_read_cell_by_cell(tmp_path: Path) -> None:
    """A DATA file in another encoding is read with its bytes that are not UTF-8 as U+FFFD:
    one person's byte decides that person's cell alone (it stopped the read, a refusal one
    person decided: an audit found it), and the data holder is told how many cells, never the
    bytes (the decoder's message quoted the byte it met, a cell's: an earlier audit)."""
    path = tmp_path / "latin1.csv"
    rows = "".join(f"{u},{x},{2 * x},Köln\n" for u in range(600) for x in (0.5, 0.7, 0.9))
    path.write_bytes(("id,x,y,site\n" + rows).encode("latin-1"))
    argv = ["fit", str(path), "--model", "mean", "--formula", "y ~ 1", "--groups", "id"]
    code, out, err = run([*argv, "--epsilon", "2"])
    assert code == 0 and "Users (n):" in out, err
    assert "1,800 cells of DATA ('site') hold bytes that are not UTF-8 text" in err, err
    assert "0xf6" not in err and "\xf6" not in err


def test_a_header_repeated_below_is_told(tmp_path: Path) -> None:
    """Files joined with their headers: each repeated header line is a row whose id is the
    column's name (a user more in n) and whose cells are text, told only as values that are not
    numbers (an audit). The data holder is told of the repeated headers by count."""
    lines = ["id,y", *(f"{u},{u % 3}" for u in range(8))]
    path = tmp_path / "joined.csv"
    path.write_text("\n".join([*lines, *lines, *lines]) + "\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dplong.io.read_data(str(path), groups="id")
    told = [str(w.message) for w in caught if issubclass(w.category, DataHolderWarning)]
    assert any(t.startswith("2 lines of DATA below its first repeat its header") for t in told)


def test_the_mean_tells_the_rows_it_leaves_out_once(tmp_path: Path) -> None:
    """``--model mean`` told the rows without an id as the model was built and again as its
    fit read them, in two wordings (an audit): once now."""
    lines = ["id,y", *(f"{u},{u % 3}" for u in range(400)), ",1", ",2"]
    path = tmp_path / "ids.csv"
    path.write_text("\n".join(lines) + "\n")
    argv = ["fit", str(path), "--model", "mean", "--formula", "y ~ 1", "--groups", "id"]
    code, _, err = run([*argv, "--epsilon", "8", "--scale", "1"])
    assert code == 0 and err.count("left out") == 1 and "2 no user id" in err, err


def _wage_lines(tmp_path: Path) -> list[str]:
    path = tmp_path / "wages.csv"
    dplong.datasets.load_wage_panel().to_csv(path, index=False)
    return path.read_text().splitlines()


@pytest.mark.parametrize(
    ("line", "change"),
    [
        (1, lambda text: text + ",x"),  # the first row: pandas made the first column the index
        (2001, lambda text: text + ",42.5"),  # another row: pandas stopped, naming its line
        (2001, lambda text: text.replace(",", ',"', 1)),  # an unclosed quote: the same
    ],
    ids=["extra field, first row", "extra field", "unclosed quote"],
)
def test_one_persons_malformed_line_decides_that_line_alone(
    tmp_path: Path, line: int, change: Any
) -> None:
    """A CSV file whose one line (one person's row) does not parse as a row of its columns
    is read as its neighbour without that line: the fit runs on the same users with the same
    labels, and the data holder is told one line was left out, not which (an audit: the first
    case ran the wage panel's mean over its 8 years as users; the others were refused with the
    line's number). Both files read alike but for that row."""
    lines = _wage_lines(tmp_path)
    base, bad = tmp_path / "base.csv", tmp_path / "bad.csv"
    base.write_text("\n".join(lines) + "\n")
    lines[line] = change(lines[line])
    bad.write_text("\n".join(lines) + "\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        read = dplong.io.read_file(str(bad))
    expected = dplong.io.read_file(str(base))
    pd.testing.assert_frame_equal(read, expected.drop(index=line - 1).reset_index(drop=True))
    told = [str(w.message) for w in caught if issubclass(w.category, DataHolderWarning)]
    assert len(told) == 1 and told[0].startswith("1 line of DATA does not parse on its own")
    assert not re.search(rf"\b{line + 1}\b", told[0])  # the line's number is not said
    argv = ["mean", "--formula", "lwage ~ 1", "--groups", "nr", "--epsilon", "1"]
    code, out, err = run(["fit", str(bad), "--model", *argv])
    assert code == 0 and "Users (n):                                    545" in out, err


def test_a_quoted_cells_line_break_makes_no_user_of_its_second_line(tmp_path: Path) -> None:
    """A line break inside a quoted cell ends the row, as every line break does: the first
    line's quote is unclosed and the line left out, but the second (``line2, with comma"``)
    parsed as a row of its own, whose id was its text: a user no file holds, so n rose from
    400 to 401 (an audit). Its quotes do not pair up, and it is left out too: the file reads
    as it does without the two lines, and the data holder is told of both."""
    rows = [f"{i},{i % 3},ok" for i in range(400)]
    broken = tmp_path / "broken.csv"
    broken.write_text("\n".join(["id,y,note", '0,1,"line1', 'line2, with comma"', *rows]) + "\n")
    plain = tmp_path / "plain.csv"
    plain.write_text("\n".join(["id,y,note", *rows]) + "\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        read = dplong.io.read_file(str(broken))
    pd.testing.assert_frame_equal(read, dplong.io.read_file(str(plain)))
    told = [str(w.message) for w in caught if issubclass(w.category, DataHolderWarning)]
    assert len(told) == 1 and told[0].startswith("2 lines of DATA do not parse"), told


def test_a_parquet_column_stored_as_text_is_told_as_stored_not_as_unread(
    tmp_path: Path,
) -> None:
    """A Parquet file read through Dask is not read twice, so only its stored types are known
    when the data holder is told of columns not read as numbers: a column of numbers stored
    as text was said to hold "values that are not numbers" read as missing, of which it had
    none (an audit). It is now told as stored: its cells that are not numbers are missing."""
    pytest.importorskip("pyarrow")
    pytest.importorskip("dask.dataframe")
    wages = dplong.datasets.load_wage_panel()
    path = tmp_path / "text.parquet"
    wages.assign(exper=wages["exper"].astype(str)).to_parquet(path, index=False)
    argv = ["--model", "mean", "--formula", "exper ~ 1", "--groups", "nr", "--epsilon", "4"]
    code, out, err = run(["fit", str(path), *argv])
    assert code == 0 and "DATA stores 'exper' as text: its cells that are not numbers" in err
    assert "holds values of" not in err and "Users (n):" in out, err


def test_a_parquet_column_stored_as_dates_is_told_where_it_is_no_time(tmp_path: Path) -> None:
    """A regressor stored as dates in a Parquet file read through Dask is read as missing (a
    regressor is a number), as a CSV's dates are: the data holder was told only that every
    row was left out, no column named (an audit). It is now named as stored; the column that
    orders the rows (``--time``) is read as dates, without a word."""
    pytest.importorskip("pyarrow")
    pytest.importorskip("dask.dataframe")
    wages = dplong.datasets.load_wage_panel()
    path = tmp_path / "dates.parquet"
    day = pd.to_datetime(wages["year"].astype(str) + "-07-01")
    wages.assign(day=day).to_parquet(path, index=False)
    argv = ["--model", "ols", "--groups", "nr", "--epsilon", "4", "--seed", "0"]
    code, _, err = run(["fit", str(path), "--formula", "lwage ~ day", *argv])
    assert code == 0 and "DATA stores 'day' as dates: its cells that are not numbers" in err
    code, _, err = run(["fit", str(path), "--formula", "lwage ~ exper", "--time", "day", *argv])
    assert code == 0 and "stores 'day'" not in err, err


def test_ids_that_read_alike_are_two_users_and_the_data_holder_is_told(tmp_path: Path) -> None:
    """A person's rows under ``7`` and ``7.0`` (or `` 7``) are two users, as the ids are read
    as text: each would get the whole budget. An audit found a file of 400 persons written so
    fitted as 800 with nothing said; the data holder is now told how many ids read alike (a
    count of the rows: on the screen only, never in a result), and ids written one way, or
    distinct as numbers and text ("a", "b"), are read without a word."""
    lines = ["id,y", *(f"{i},{i % 3}" for i in range(6))]
    alike = tmp_path / "alike.csv"
    alike.write_text("\n".join([*lines, "4.0,1", " 5,2", "x,1", "x ,2"]) + "\n")
    # one Unicode form, no invisible characters (a later session's audit): told too
    forms = tmp_path / "forms.csv"
    others = ["Jos\u00e9,1", "Jose\u0301,2", "\ufeffu7,1", "u7,2", "u8\u200b,1", "u8,2", "\uff18,1"]
    forms.write_text("\n".join([*lines, *others, "8,2"]) + "\n", encoding="utf-8")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dplong.io.read_data(str(forms), groups="id")
    told = [str(w.message) for w in caught if issubclass(w.category, DataHolderWarning)]
    assert len(told) == 1 and told[0].startswith("8 user ids of 'id' read alike"), told
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = dplong.io.read_data(str(alike), groups="id")
    told = [str(w.message) for w in caught if issubclass(w.category, DataHolderWarning)]
    assert frame["id"].nunique() == 10  # read as text, as before
    assert len(told) == 1 and told[0].startswith("6 user ids of 'id' read alike"), told
    argv = ["fit", str(alike), "--model", "mean", "--formula", "y ~ 1", "--groups", "id"]
    code, out, err = run([*argv, "--epsilon", "20"])  # 10 users: refused below about 12
    assert code == 0 and "6 user ids of 'id' read alike" in err and "alike" not in out, err
    # dplong plan counts n from the same ids: it said nothing of them (an audit)
    code, out, err = run(["plan", *argv[1:], "--epsilon", "20"])
    assert code == 0 and "Users (n): 10" in out, out
    assert err.startswith("dplong: warning: 6 user ids of 'id' read alike") and "alike" not in out
    plain = tmp_path / "plain.csv"
    plain.write_text("\n".join([*lines, "a,1", "b,2"]) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataHolderWarning)
        dplong.io.read_data(str(plain), groups="id")


def test_parquet_ids_beyond_doubles_are_read_exactly(tmp_path: Path) -> None:
    """A Parquet column of int64 ids above 2**53 with one null id: pyarrow reads it as
    doubles, which merged ids differing in their last digits (40 users counted 21, so n and
    whether a fit ran hung on one row: an audit); and ids stored without a null, read exactly,
    were told to the data holder as reading alike. Read as nullable integers now, in one file
    and in a directory (Dask), and told of nothing."""
    pq = pytest.importorskip("pyarrow.parquet")
    pa = pytest.importorskip("pyarrow")
    ids: list[int | None] = [2**53 + i for i in np.arange(200) % 40]
    y = np.random.default_rng(0).normal(size=200)
    full = tmp_path / "full.parquet"
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "y": y}), full)
    ids[3] = None
    (tmp_path / "parts").mkdir()
    for where in (tmp_path / "one.parquet", tmp_path / "parts" / "a.parquet"):
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "y": y}), where)
    pq.write_table(pq.read_table(full).slice(0, 50), tmp_path / "parts" / "b.parquet")
    argv = ["--model", "mean", "--formula", "y ~ 1", "--groups", "id", "--epsilon", "4"]
    for data in (full, tmp_path / "one.parquet", tmp_path / "parts"):
        code, out, err = run(["plan", str(data), *argv])
        assert code == 0 and "Users (n): 40" in out and "alike" not in err, (data, out, err)
    # stored categories of numbers, flags and dates are read as their values, in a directory
    # as in one file (Dask's nullable types had none for them: a traceback, an audit)
    stored = pd.DataFrame({"id": np.arange(9) % 3, "y": np.arange(9.0)})
    kinds = {"k": [1, 2, 3], "f": [1.5, 2.5, 3.5], "b": [True, False, True]}
    stored = stored.assign(**{c: pd.Categorical(v * 3) for c, v in kinds.items()})
    (tmp_path / "kinds").mkdir()
    stored.to_parquet(tmp_path / "kinds" / "a.parquet", index=False)
    for data in (tmp_path / "kinds", tmp_path / "kinds" / "a.parquet"):
        read = dplong.io.read_data(str(data), groups="id")
        read = read.compute() if hasattr(read, "compute") else read
        assert read[list(kinds)].to_numpy().tolist() == [[1, 1.5, 1], [2, 2.5, 0], [3, 3.5, 1]] * 3


@pytest.mark.parametrize(
    "change",
    [
        lambda text: '7,4,"',  # an unclosed quote: the whole-file parse swallowed what followed
        lambda text: "7,4,1.5,x\u20288,9,1000000,",  # a Unicode line separator inside a line
        lambda text: text + ",extra",  # line mode split other persons' lines on U+2028 too
    ],
    ids=["unclosed quote among quoted cells", "line separator", "extra field"],
)
def test_one_persons_line_changes_no_other_persons_rows(tmp_path: Path, change: Any) -> None:
    """A file with quoted cells (a text column holding commas, some persons' with a Unicode
    line separator): one person's last line changed reads as its neighbour without that line.
    Before, an unclosed quote there made pandas swallow the lines of the next 12 persons with
    no parse error, and the line a time reading split lines on U+2028, putting one person's
    text into the next person's rows (y = 1e6 for person 8; an audit). A line break always
    ends a row now, and nothing else does."""
    rng = np.random.default_rng(0)
    rows = pd.DataFrame(
        {"id": np.repeat(np.arange(40), 5), "t": np.tile(np.arange(5), 40),
         "y": rng.normal(size=200).round(3), "note": ""}
    )  # fmt: skip
    rows.loc[(rows["id"] % 8 == 3) & (rows["t"] == 0), "note"] = "moved, new address"
    rows.loc[(rows["id"] % 8 == 5) & (rows["t"] == 1), "note"] = "a\u2028b"
    base, bad = tmp_path / "base.csv", tmp_path / "bad.csv"
    rows.to_csv(base, index=False)
    lines = base.read_text(encoding="utf-8").split("\n")
    last = max(k for k, line in enumerate(lines) if line.startswith("7,"))
    lines[last] = change(lines[last])
    bad.write_text("\n".join(lines), encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataHolderWarning)
        read = dplong.io.read_file(str(bad))
        expected = dplong.io.read_file(str(base))
    pd.testing.assert_frame_equal(read, expected.drop(index=last - 1).reset_index(drop=True))


def _cells(frame: pd.DataFrame) -> list[list[str | None]]:
    """A frame's cells by row, a missing one as None."""
    return frame.astype(object).where(frame.notna(), None).to_numpy().tolist()


def _line_by_line(text: str) -> list[list[str | None]]:
    """The rows of a CSV file's ``text`` by its documented rule, a line at a time: a line break
    (``\\n``, ``\\r\\n``, ``\\r``) ends a row, a blank line is skipped, the first other line is
    the header, and each line below it is parsed on its own; one with an unclosed quote, quotes
    that do not pair up or more fields than the header is left out, one with fewer has missing
    cells."""
    lines = [line for line in re.split(r"\r\n|\r|\n", text) if line.strip()]
    width, rows = len(next(csv_reader(lines[:1]))), []
    for line in lines[1:]:
        if line.count('"') % 2:
            continue
        try:
            fields = next(csv_reader([line], strict=True))
        except CsvError:
            continue
        if len(fields) <= width:
            rows.append([f if f != "" else None for f in fields] + [None] * (width - len(fields)))
    return rows


#: Lines whose reading changed with another line's quote (an audit: the whole file was parsed
#: by pandas when no line held a quote, a line at a time otherwise, and the two disagreed)
_VARIANTS = {
    "trailing comma": ("id,y,z\n1,2,3,\n", ["9"]),  # one field more than the header: left out
    "no-break space": ("id,y,z\n1,2,3\n\u00a0\n", ["1", "9"]),  # blank: skipped
    "form feed": ("id,y,z\n1,2,3\n\x0c\n", ["1", "9"]),
    "blank first line": ("\nid,y,z\n1,2,3\n", ["1", "9"]),  # the header is the next line
    "carriage returns": ("id,y,z\r1,2,3\r\n", ["1", "9"]),
}


@pytest.mark.parametrize(("text", "ids"), list(_VARIANTS.values()), ids=list(_VARIANTS))
def test_a_line_is_read_alike_whatever_another_line_holds(
    tmp_path: Path, text: str, ids: list[str]
) -> None:
    """Each line is read by one rule, whether or not another person's line holds a quote:
    the file was parsed whole by pandas when none did and a line at a time otherwise, so user
    9's quoted cell dropped user 1's line ending in a comma, made a line of U+00A0 or U+000C a
    user and the header line a user (an audit). The plan's read of the ids is the same."""
    frames = []
    for other in ["9,1,1", '9,"1",1']:  # user 9's line, without and with a quoted cell
        path = tmp_path / "variant.csv"
        path.write_text(text + other + "\n", encoding="utf-8")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataHolderWarning)
            frames.append(dplong.io.read_file(str(path)))
            assert dplong.io.read_file(str(path), columns=["id"])["id"].tolist() == ids
        assert _cells(frames[-1]) == _line_by_line(path.read_text(encoding="utf-8"))
    pd.testing.assert_frame_equal(frames[0], frames[1])
    assert frames[0]["id"].tolist() == ids


@pytest.mark.parametrize("quoted", [False, True])
def test_a_cell_longer_than_the_csv_modules_limit_is_read(tmp_path: Path, quoted: bool) -> None:
    """A quoted cell or a header name of 200,000 characters, beyond the csv module's default
    field limit (131,072): the row was left out as if its quote were unclosed, and the header
    refused so (an audit). Read as written now, and the limit left as it was."""
    long = "a" * 200_000
    cell = f'"{long}"' if quoted else long
    path = tmp_path / "long.csv"
    path.write_text(f"id,y,{cell}\n1,2,{cell}\n", encoding="utf-8")
    limit = field_size_limit()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataHolderWarning)  # nothing left out
        frame = dplong.io.read_file(str(path))
    assert frame.columns.tolist() == ["id", "y", long]
    assert frame[long].tolist() == [long]
    assert field_size_limit() == limit


def test_every_line_is_read_by_the_documented_rule(tmp_path: Path) -> None:
    """Random lines of awkward cells (fixed seed) are read as the documented rule reads them a
    line at a time, with or without another person's quoted line below them (before, 35 of
    400 such files read differently with it: an audit)."""
    atoms = ["1", "2.5", "", " ", "x", "NA", "None", "nan", "1e400", "-", "\t", "a b", "#"]
    atoms += ["1,", "\\", "'"]
    atoms += ["\x00", "é", "\u2028", "\x0b", "\x0c", "\x1c", "\x85", "\u00a0", "\ufeff"]
    atoms += ['"q"', '"a,b"', '"', 'a"b', '""', '"x""y"', "\r"]
    rng = random.Random(1)
    path = tmp_path / "random.csv"
    for _ in range(150):
        lines = [
            ",".join(rng.choice(atoms) for _ in range(rng.randint(0, 4)))
            for _ in range(rng.randint(1, 5))
        ]
        read = []
        for other in ["zz,1,2", 'zz,"1",2']:
            text = "id,y,z\n" + "\n".join([*lines, other]) + "\n"
            path.write_text(text, encoding="utf-8")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DataHolderWarning)
                read.append(_cells(dplong.io.read_file(str(path)))[:-1])
            assert read[-1] == _line_by_line(text)[:-1], lines
        assert read[0] == read[1], lines


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("id,y\n", "has no rows: no line below its header parses on its own as a row"),
        ("id,y\n1,2,3\n", "has no rows: no line below its header parses on its own as a row"),
        ("\n \n", "is empty: it has no header line"),
    ],
    ids=["header only", "every line left out", "blank lines only"],
)
def test_a_csv_file_without_rows_is_refused_as_such(tmp_path: Path, text: str, said: str) -> None:
    """A CSV file with a header and no row was refused as "invalid literal for int() with base
    10: ''" (the count of U+FFFD cells met an empty frame: an audit)."""
    path = tmp_path / "empty.csv"
    path.write_text(text)
    argv = [str(path), "--model", "mean", "--formula", "y ~ 1", "--groups", "id"]
    for command in (["fit", "--scale", "1"], ["plan"]):
        code, out, err = run([command[0], *argv, "--epsilon", "1", *command[1:]])
        assert code == 2 and out == "" and f"DATA {str(path)!r} {said}" in err, err


def test_pandas_na_words_in_a_csv_file_are_text_as_in_parquet(tmp_path: Path) -> None:
    """Cells that pandas' default NA list matches ("NA", "None", "null", "nan", "N/A") were
    missing in a CSV file: the user "NA" was dropped and the declared level NA (North
    America) withheld, "no users", where the Parquet copy of the rows read them (an audit).
    Only an empty cell is missing now (an empty id is no user), in both."""
    pytest.importorskip("pyarrow")
    rng = np.random.default_rng(0)
    rows = pd.DataFrame({"id": np.repeat([f"u{i}" for i in range(300)], 4)})
    rows["region"] = np.repeat(rng.choice(["EU", "NA", "AS"], 300), 4)
    rows["y"] = rng.normal(size=len(rows)) + rows["region"].map({"EU": 0, "NA": 5, "AS": -5})
    for k, word in enumerate(["NA", "None", "null", "nan", "N/A"]):
        rows.loc[rows["id"] == f"u{k}", "id"] = word
    rows.loc[7, "id"] = None  # an empty cell in the CSV file: no user id
    csv_file, parquet = tmp_path / "na.csv", tmp_path / "na.parquet"
    rows.to_csv(csv_file, index=False)
    rows.to_parquet(parquet, index=False)
    levels = {"region": ["EU", "NA", "AS"]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        read = dplong.io.read_data(str(csv_file), groups="id", levels=levels)
        stored = dplong.io.read_data(str(parquet), groups="id", levels=levels)
        stored = stored.compute() if hasattr(stored, "compute") else stored
    assert read["id"].nunique() == stored["id"].nunique() == 300
    assert read["id"].isna().sum() == 1 and read["region"].tolist() == rows["region"].tolist()
    argv = ["--model", "mean", "--formula", "y ~ 1", "--groups", "id", "--by", "region"]
    argv += ["--levels", "region=EU,NA,AS", "--epsilon", "4", "--scale", "4", "--seed", "0"]
    outputs = []
    for path in (csv_file, parquet):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            code, out, err = run(["fit", str(path), *argv, "--quiet"])
        assert code == 0, err
        outputs.append(out)
    assert outputs[0] == outputs[1] and "Users (n):                                    300" in out
    assert "y[region=NA]" in out and "withheld" not in out


def test_a_header_that_does_not_parse_on_its_own_is_refused_quoting_nothing(
    tmp_path: Path,
) -> None:
    """A header with an unclosed quote ran on across the next lines, so that its "column
    names" held persons' rows, which every refusal listing DATA's columns printed, the plan's
    too (an audit). The header is its own line now, refused if it does not parse alone."""
    path = tmp_path / "header.csv"
    rows = ['id,"note,y', "101,ok,72.5", "102,ok,130.2", '103,"fine, thanks",80.1', "103,ok,79.4"]
    path.write_text("\n".join(rows) + "\n")
    argv = [str(path), "--model", "mean", "--formula", "y ~ 1", "--groups", "person"]
    for command in (["fit", "--scale", "1"], ["plan"]):
        code, out, err = run([command[0], *argv, "--epsilon", "1", *command[1:]])
        assert code == 2 and out == "", err
        assert "its header (first line) does not parse on its own" in err, err
        assert not any(value in err for value in ("101", "72.5", "130.2", "fine", "ok")), err


def test_a_header_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    """A header's name with a byte that is not UTF-8 is refused (a cell's is read as U+FFFD):
    the column would be named otherwise than written, and the byte is not quoted."""
    path = tmp_path / "latin1.csv"
    path.write_bytes("id,Größe\n1,2\n".encode("latin-1"))
    argv = [str(path), "--groups", "id", "--model", "mean", "--formula", "y ~ 1"]
    code, out, err = run(["plan", *argv, "--epsilon", "1"])
    assert code == 2 and out == "", err
    assert err.endswith("its header is not UTF-8 text; save it as UTF-8\n"), err


def test_a_file_without_a_header_line_is_refused_without_its_first_row(tmp_path: Path) -> None:
    """A CSV file written without a header line has its first person's cells for column
    names, which the refusal of a missing column listed (an audit); no column is listed now."""
    path = tmp_path / "headerless.csv"
    path.write_text("48213,1961-04-02,HIV+,131.5\n48213,1961-04-02,HIV+,129.0\n")
    argv = [str(path), "--model", "mean", "--formula", "sbp ~ 1", "--groups", "patient"]
    for command in (["fit", "--scale", "1"], ["plan"]):
        code, out, err = run([command[0], *argv, "--epsilon", "1", *command[1:]])
        said = err.splitlines()[-1]
        assert (
            code == 2
            and out == ""
            and said == "dplong: error: --groups 'patient' is not a column of DATA"
        )
        assert not any(cell in err for cell in ("48213", "1961", "HIV", "131.5")), err


def test_the_plan_counts_the_users_of_the_lines_the_fit_reads(tmp_path: Path) -> None:
    """A user whose only line has one field more than the header: the fit leaves the line out,
    and the plan, which parsed its ids alone, counted it, n = 111 against the fit's 110 (an
    audit: the plan said released where the fit was refused)."""
    lines = ["id,y"] + [f"{i},{(i * 7) % 10}.5" for i in range(110) for _ in range(3)]
    path = tmp_path / "counted.csv"
    path.write_text("\n".join([*lines, "9999,1.0,extra"]) + "\n")
    argv = [str(path), "--groups", "id", "--model", "mean", "--formula", "y ~ 1"]
    counts = []
    for extra in (["plan"], ["fit", "--scale", "100", "--seed", "0"]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataHolderWarning)
            code, out, err = run([extra[0], *argv, "--epsilon", "8", *extra[1:]])
        assert code == 0, err
        found = re.search(r"Users \(n\):\s+(\d+)", out)
        assert found is not None, out
        counts.append(int(found.group(1)))
    assert counts == [110, 110]


def test_each_stored_date_is_written_on_its_own() -> None:
    """A Parquet date column is matched to declared levels as ISO 8601 text: the date alone
    where every stamp was at midnight, else every stamp with its time, so one person's stamps
    at noon wrote every person's dates with a time that no declared date matched (all 2,000
    rows left out; an audit). Each stamp is written on its own now."""
    stamps = pd.Series([pd.Timestamp("2020-01-01"), pd.Timestamp("2020-01-02 12:00"), pd.NaT])
    written = dplong.io._iso_dates(stamps)
    assert written.tolist() == ["2020-01-01", "2020-01-02T12:00:00", None]
    assert dplong.io._iso_dates(stamps[:1]).tolist() == ["2020-01-01"]


def test_the_plan_counts_the_users_the_fit_counts_where_an_id_is_infinite(
    tmp_path: Path,
) -> None:
    """Float ids with one user's id inf: the fit takes it as missing (as NaN), and the plan
    counted it, n one more than the fit's (an audit's finding). Both now say 399."""
    pytest.importorskip("pyarrow")
    rng = np.random.default_rng(1)
    rows = pd.DataFrame({"id": np.repeat(np.arange(400), 5).astype(float)})
    rows["x"] = rng.normal(size=len(rows))
    rows["y"] = 1 + 0.5 * rows["x"] + rng.normal(size=len(rows))
    rows.loc[rows["id"] == 7, "id"] = np.inf
    path = tmp_path / "ids.parquet"
    rows.to_parquet(path)
    argv = [str(path), "--model", "ols", "--formula", "y ~ x", "--groups", "id"]
    counts = []
    for extra in (["plan"], ["fit", "--seed", "0"]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            code, out, _ = run([extra[0], *argv, "--epsilon", "4", *extra[1:]])
        assert code == 0
        found = re.search(r"Users \(n\):\s+(\d+)", out)
        assert found is not None
        counts.append(int(found.group(1)))
    assert counts == [399, 399]
