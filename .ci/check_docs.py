"""Check a built documentation site: key pages, rendered vignettes, a complete API reference.

Run by ``.ci/run`` after ``sphinx-build -W --keep-going -b html docs docs/_build/html``::

    python .ci/check_docs.py docs/_build/html

The build itself (every vignette executed, warnings as errors) is a step of ``.ci/run`` rather
than a unit test: it takes minutes, and a test with a wall-clock limit fails on a busy machine
(docs/design §5.6). Exits with status 1 and one line per problem if any check fails.
"""

from __future__ import annotations

import importlib
import re
import sys
import zlib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
VIGNETTES = ROOT / "vignettes"

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
    "design/index.html",
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


def missing_pages(out: Path) -> list[str]:
    problems = [f"missing page {page}" for page in KEY_PAGES if not (out / page).is_file()]
    for page, title in (
        ("accuracy.html", "Accuracy"),  # included from docs/accuracy.md
        ("speed.html", "Speed of the formula models"),  # included from docs/speed.md
    ):
        if (out / page).is_file() and title not in (out / page).read_text(encoding="utf-8"):
            problems.append(f"{page} lacks its title {title!r}")
    return problems


def vignette_problems(out: Path) -> list[str]:
    """Every vignette rendered with a figure, says what its seeds are for, shows no warning."""
    problems = []
    for name in sorted(p.stem for p in VIGNETTES.glob("plot_*.py")):
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
    return problems


def documented(out: Path) -> dict[str, set[str]]:
    """Names per role (``py:class``, ``py:function``, ...) in the build's ``objects.inv``."""
    header, _, body = (out / "objects.inv").read_bytes().partition(b"zlib.\n")
    if b"# Sphinx inventory version 2" not in header:
        raise ValueError(f"{out / 'objects.inv'} is not a Sphinx inventory (version 2)")
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


def undocumented(out: Path) -> list[str]:
    """Names of the public modules' ``__all__`` that the API reference does not document.

    A re-exported object counts as documented under any of its public names.
    """
    roles = documented(out)
    modules = roles.get("py:module", set())
    objects = []
    for role, names in roles.items():
        if role.startswith("py:") and role != "py:module":
            for name in names:
                try:
                    objects.append(_resolve(name))
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
                any(full in names for names in roles.values())
                or (isinstance(obj, type(module)) and obj.__name__ in modules)
                or any(obj is other for other in objects)
            ):
                continue
            missing.append(full)
    return missing


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python .ci/check_docs.py <html output directory>", file=sys.stderr)
        return 2
    out = Path(argv[0])
    problems = missing_pages(out) + vignette_problems(out)
    problems += [f"not in the API reference: {name}" for name in undocumented(out)]
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
