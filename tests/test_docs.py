"""The documentation's code runs and shows what it prints.

The full build (Sphinx with warnings as errors, every vignette executed, the API reference
complete) takes minutes, so it is a step of ``.ci/run`` (``sphinx-build`` then
``.ci/check_docs.py``), not a unit test: a test with a time limit fails on a busy machine
(docs/design §5.6). What stays here is fast: the pages' ``python`` blocks and the CLI page's
commands run and print what the pages show.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
#: Written by the docs build (docs/.gitignore): not pages of the site's sources.
GENERATED = ("_build", "auto_vignettes", "gen_modules", "__pycache__")


def _python_blocks(page: Path) -> list[tuple[str, str | None]]:
    """The ``python`` fenced blocks of a page, dedented (they may sit inside list items), each
    with the ``text`` block that follows it with only blank lines between (what it prints), or
    None."""
    text = page.read_text(encoding="utf-8")
    pattern = r"^([ \t]*)```python\n(.*?)^\1```\n(?:[ \t]*\n)*(?:\1```text\n(.*?)^\1```)?"
    return [
        (textwrap.dedent(m.group(2)), None if m.group(3) is None else textwrap.dedent(m.group(3)))
        for m in re.finditer(pattern, text, flags=re.S | re.M)
    ]


MARKDOWN_PAGES = sorted(
    p for p in DOCS.rglob("*.md") if not any(part in GENERATED for part in p.parts)
)


@pytest.mark.parametrize("page", MARKDOWN_PAGES, ids=lambda p: str(p.relative_to(DOCS)))
def test_markdown_code_blocks_run(page: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The ``python`` code blocks of every page run, in order, in one namespace per page, and
    a block followed by a ``text`` block prints what it shows (runs of whitespace compared as
    one space: the page wraps long lines; a changed release shows up here, so rerun the block
    and paste its output)."""
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    for number, (block, shown) in enumerate(_python_blocks(page)):
        capsys.readouterr()
        exec(compile(block, str(page), "exec"), namespace)
        printed = capsys.readouterr().out
        if shown is not None:
            assert printed.split() == shown.split(), (
                f"{page.name}'s python block {number} prints\n{printed}\n"
                f"but the page shows\n{shown}"
            )


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
