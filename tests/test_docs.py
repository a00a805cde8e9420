"""The documentation builds with warnings as errors, runs every vignette, and stays complete.

DESIGN.md §5.6: docs and vignettes execute in the test suite so they can never rot. The build
runs on a copy of ``docs/`` and ``vignettes/`` in a temporary directory, so nothing is written
into the repository (sphinx-gallery writes its generated pages next to the sources).
"""

from __future__ import annotations

import importlib
import re
import shutil
import subprocess
import sys
import textwrap
import time
import zlib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
VIGNETTES = ROOT / "vignettes"
GENERATED = ("_build", "auto_vignettes", "gen_modules", "sg_execution_times.rst", "__pycache__")

#: Public objects documented separately, by the change that adds them. Remove a name here when
#: its API page lists it.
PENDING: set[str] = set()

#: Modules whose ``__all__`` must be documented in the API reference.
PUBLIC_MODULES = (
    "dplong",
    "dplong.formula",
    "dplong.dask_frames",
    "dplong.privacy",
    "dplong.dependence",
    "dplong.kernels",
    "dplong.datasets",
    "dplong.exceptions",
    "dplong.simulate",
    "dplong.results",
)

#: The build command: warnings are errors, but all of them are reported (DESIGN.md §5.6).
SPHINX = (sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", "-q")

KEY_PAGES = (
    "index.html",
    "getting_started.html",
    "guide/index.html",
    "guide/privacy.html",
    "guide/formulas.html",
    "guide/dependence.html",
    "guide/results.html",
    "guide/curves.html",
    "guide/dask.html",
    "nonparametric.html",
    "cli.html",
    "accuracy.html",
    "speed.html",
    "api/index.html",
    "api/dplong.html",
    "api/formula.html",
    "api/results.html",
    "api/privacy.html",
    "api/dependence.html",
    "api/kernels.html",
    "api/datasets.html",
    "api/simulate.html",
    "api/exceptions.html",
    "auto_vignettes/index.html",
)


def _vignettes() -> list[str]:
    return sorted(p.stem for p in VIGNETTES.glob("plot_*.py"))


def _tree(path: Path) -> set[str]:
    return {
        str(p.relative_to(path))
        for p in path.rglob("*")
        if not any(part in GENERATED for part in p.relative_to(path).parts)
    }


def _build(work: Path) -> tuple[subprocess.CompletedProcess[str], Path, float]:
    """Build the HTML documentation from a copy of the sources in ``work``."""
    ignore = shutil.ignore_patterns(*GENERATED)
    shutil.copytree(DOCS, work / "docs", ignore=ignore)
    shutil.copytree(VIGNETTES, work / "vignettes", ignore=ignore)
    out = work / "html"
    start = time.perf_counter()
    proc = subprocess.run(
        [*SPHINX, str(work / "docs"), str(out)],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=work,
    )
    return proc, out, time.perf_counter() - start


def _missing_pages(out: Path) -> list[str]:
    problems = [f"missing page {page}" for page in KEY_PAGES if not (out / page).is_file()]
    for page, title in (
        ("accuracy.html", "Accuracy"),  # included from docs/accuracy.md
        ("speed.html", "Speed of the formula models"),  # included from docs/speed.md
    ):
        if (out / page).is_file() and title not in (out / page).read_text(encoding="utf-8"):
            problems.append(f"{page} lacks its title {title!r}")
    return problems


def _vignette_problems(out: Path, src: Path) -> list[str]:
    """Every vignette rendered with a figure, says what its seeds are for, shows no warning.

    Their execution times are printed, not asserted: speed is measured in benchmarks/, and a
    wall-clock budget fails under load (DESIGN.md §5)."""
    problems = []
    for name in _vignettes():
        page = out / "auto_vignettes" / f"{name}.html"
        if not page.is_file():
            problems.append(f"vignette {name} was not rendered")
            continue
        html = page.read_text(encoding="utf-8")
        if "random_state" not in html or "reproducib" not in html:
            problems.append(f"vignette {name} must fix seeds and say they are for reproducibility")
        if not list((out / "_images").glob(f"sphx_glr_{name}_*.png")):
            problems.append(f"vignette {name} produced no figure")
        shown = re.findall(r"\b\w*Warning: [^<\n]{0,100}", html)
        if shown:
            problems.append(f"vignette {name} shows warnings in its output: {shown}")
    table = (src / "auto_vignettes" / "sg_execution_times.rst").read_text(encoding="utf-8")
    rows = re.finditer(r"\(``(plot_\w+)\.py``\)\s*\n\s*-\s*(\d+):(\d+(?:\.\d+)?)", table)
    times = {m.group(1): 60 * int(m.group(2)) + float(m.group(3)) for m in rows}
    if set(times) != set(_vignettes()):
        problems.append(f"execution times not found for every vignette: {times}")
    print("vignette seconds:", times)
    return problems


def _documented(out: Path) -> dict[str, set[str]]:
    """Names per role (``py:class``, ``py:function``, ...) in the build's ``objects.inv``."""
    header, _, body = (out / "objects.inv").read_bytes().partition(b"zlib.\n")
    assert b"# Sphinx inventory version 2" in header
    names: dict[str, set[str]] = {}
    for line in zlib.decompress(body).decode("utf-8").splitlines():
        match = re.match(r"(.+?)\s+(\S+:\S+)\s+-?\d+\s", line)
        if match:
            names.setdefault(match.group(2), set()).add(match.group(1))
    return names


def _resolve(name: str) -> Any:
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(name)


def _undocumented(out: Path) -> list[str]:
    """Names of the public modules' ``__all__`` that the API reference does not document.

    A re-exported object counts as documented under any of its public names.
    """
    roles = _documented(out)
    modules = roles.get("py:module", set())
    documented = []
    for role, names in roles.items():
        if role.startswith("py:") and role != "py:module":
            for name in names:
                try:
                    documented.append(_resolve(name))
                except (ImportError, AttributeError):
                    continue
    missing = []
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        if module_name not in modules:
            missing.append(f"module {module_name}")
        for name in module.__all__:
            full = f"{module_name}.{name}"
            obj = getattr(module, name)
            if (
                full in PENDING
                or any(full in names for names in roles.values())
                or (isinstance(obj, type(module)) and obj.__name__ in modules)
                or any(obj is other for other in documented)
            ):
                continue
            missing.append(full)
    return missing


def test_docs_build(tmp_path: Path) -> None:
    """One build (also under pytest-xdist): no warning, key pages, vignettes, complete API."""
    before = (_tree(DOCS), _tree(VIGNETTES))
    proc, out, seconds = _build(tmp_path)
    assert proc.returncode == 0, (
        f"sphinx-build failed ({proc.returncode}):\n{proc.stdout[-5000:]}\n{proc.stderr[-10000:]}"
    )
    problems = _missing_pages(out) + _vignette_problems(out, tmp_path / "docs")
    problems += [f"not in the API reference: {name}" for name in _undocumented(out)]
    if (_tree(DOCS), _tree(VIGNETTES)) != before:
        problems.append("the build changed files under docs/ or vignettes/")
    assert not problems, "\n".join(problems)
    print(f"docs built in {seconds:.1f} s")


def _python_blocks(page: Path) -> list[str]:
    """The ``python`` fenced blocks of a page, dedented (they may sit inside list items)."""
    text = page.read_text(encoding="utf-8")
    pattern = r"^([ \t]*)```python\n(.*?)^\1```"
    return [textwrap.dedent(m.group(2)) for m in re.finditer(pattern, text, flags=re.S | re.M)]


MARKDOWN_PAGES = sorted(
    p for p in DOCS.rglob("*.md") if not any(part in GENERATED for part in p.parts)
)


@pytest.mark.parametrize("page", MARKDOWN_PAGES, ids=lambda p: str(p.relative_to(DOCS)))
def test_markdown_code_blocks_run(page: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The ``python`` code blocks of every page run, in order, in one namespace per page."""
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    for block in _python_blocks(page):
        exec(compile(block, str(page), "exec"), namespace)
    capsys.readouterr()


def _console_blocks(page: Path) -> list[tuple[str, list[str]]]:
    """The ``console`` blocks of a page: the command after ``$`` (joining lines continued with
    a backslash) and the output lines shown under it."""
    text = page.read_text(encoding="utf-8")
    blocks = []
    for match in re.finditer(r"^```console\n(.*?)^```", text, flags=re.S | re.M):
        lines = match.group(1).splitlines()
        command = lines.pop(0).removeprefix("$ ")
        while command.endswith("\\"):
            command = command[:-1] + lines.pop(0).strip()
        blocks.append((command, lines))
    return blocks


def _shown_in(shown: list[str], actual: list[str]) -> str | None:
    """None if the ``shown`` lines are the ``actual`` ones, in order, where a ``...`` line
    stands for any number of lines; else the first shown line that does not match."""
    actual = [line.rstrip() for line in actual]
    at, skipping = 0, False
    for line in (line.rstrip() for line in shown):
        if line == "...":
            skipping = True
            continue
        if skipping:
            while at < len(actual) and actual[at] != line:
                at += 1
        if at >= len(actual) or actual[at] != line:
            return line
        at, skipping = at + 1, False
    return None


CLI_EXAMPLES = [
    pytest.param(command, shown, id=f"docs/cli.md:{number}")
    for number, (command, shown) in enumerate(_console_blocks(DOCS / "cli.md"))
    if shown  # the synopsis shows no output
]


@pytest.mark.parametrize(("command", "shown"), CLI_EXAMPLES)
def test_cli_page_shows_real_output(
    command: str, shown: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every command of docs/cli.md with output runs, and prints what the page shows: stdout,
    then stderr (a changed release shows up here; rerun the command and paste its output)."""
    import contextlib
    import io
    import shlex

    from dplong.cli import main

    argv = shlex.split(command)
    assert argv[0] == "dplong"
    monkeypatch.chdir(tmp_path)  # the report of the example is written here
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        main(argv[1:])
    actual = out.getvalue().splitlines() + err.getvalue().splitlines()
    mismatch = _shown_in(shown, actual)
    assert mismatch is None, (
        f"docs/cli.md shows {mismatch!r}, which `{command}` does not print here:\n"
        + "\n".join(actual)
    )
