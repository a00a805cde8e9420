"""The command's refusals: the error of its input, and the one line every message is cut to."""

from __future__ import annotations

import re


class _InputError(Exception):
    """A problem with the command line's input (file, column, option): exit code 2."""


def _one_line(message: object, formula: str | None = None) -> str:
    """The first line of a message (patsy adds lines pointing at the formula), its options
    spelled as the command line's flags, the analyst's ``formula`` as written
    (:func:`_for_the_command_line`)."""
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    return _for_the_command_line(lines[0], formula) if lines else type(message).__name__


#: A message's Python spellings of options, and the command line's (a note written for
#: ``from_formula``/``fit`` keywords names the flag here).
_SPELLINGS = (
    # a note that already says the flag ("levels={...}, on the command line --levels ...")
    (
        re.compile(r"levels=\{'([^']+)': \[\.\.\.\]\}, on the command line --levels \1=A,B,\.\.\."),
        r"--levels \1=A,B,...",
    ),
    (re.compile(r"levels=\{(['\"])([^'\"]+)\1: \[\.\.\.\]\}"), r"--levels \2=A,B,..."),
    (re.compile(r"(?<![\w.\[-])levels=(?=[\s,;)]|$)"), "--levels"),
    (re.compile(r"bounds=\{\.\.\.\}"), "--bounds COLUMN=LO,HI;..."),
    (re.compile(r'privacy="local" needs bound=B'), "--privacy local needs --bound B"),
    (re.compile(r"^bound is for\b"), "--bound is for"),
    (re.compile(r"\bdrop bound\b"), "drop --bound"),
    # the mean's grouping: a value of by= is the flag's (--by COLUMN, --by-constant)
    (re.compile(r"(?<![\w.\[-])by_constant=True\b"), "--by-constant"),
    (re.compile(r"(?<![\w.\[-])by=None\b"), "no --by"),
    (re.compile(r"(?<![\w.\[-])by=(['\"])([^'\"]*)\1"), r"--by \2"),
    # the time column: TimeEffects' refusal without one, the pooled family's of one without it
    (re.compile(r"(?<![\w.\[-])time=(['\"])([^'\"]*)\1"), r"--time \2"),
    # the ids' column, where a refusal quotes it (one the formula reads)
    (re.compile(r"(?<![\w.\[-])groups=(['\"])([^'\"]*)\1"), r"--groups \2"),
    (re.compile(r"(?<![\w.\[-])time=(?=[\s,;)]|$)"), "--time"),
)


#: Where :func:`_for_the_command_line` holds the analyst's formula while it respells a message.
_FORMULA = "\0"

#: The options every model's fit takes, by keyword, beside the models' own (their flags).
_COMMON = ("epsilon", "delta", "privacy", "bound", "variant", "scale", "focus")
#: Arguments of the models' ``from_formula`` that are flags of their own.
_DATA_OPTIONS = ("groups", "time", "levels")
#: What a refusal that starts with an option's name says of it ("scale must be ...",
#: "focus names [...]", "groups holds ids ..."): the name is the option's, to be said as its flag.
_SUBJECT = r"(?= (?:must|names|holds|is|has|lists|gives)\b)"


def _option_spellings() -> tuple[tuple[re.Pattern[str], str], ...]:
    """Each option's Python spellings as its flag: ``max_rows=8`` and ``method="ptr"`` as
    ``--max-rows 8`` and ``--method ptr``, ``bounds['x']`` as ``--bounds x=...``, and a bare
    keyword with an underscore (``variance_share``, no word of prose) as the flag."""
    from dplong.cli.model_options import _unique_options  # the registered models' options

    flags = {o.keyword: o.flag for o in _unique_options()}
    flags.update({keyword: "--" + keyword for keyword in _COMMON})
    # a refusal's subject is the option's name: the data's options too (their other spellings
    # are _SPELLINGS', which keep a formula's own ``C(x, levels=[...])``, ``I(time==2)``)
    out: list[tuple[re.Pattern[str], str]] = [
        (re.compile(rf"^{re.escape(keyword)}{_SUBJECT}"), flag)
        for keyword, flag in {**flags, **{k: "--" + k for k in _DATA_OPTIONS}}.items()
    ]
    for keyword, flag in flags.items():
        named = rf"(?<![\w.\[-]){re.escape(keyword)}"
        out += [
            (re.compile(rf"{named}=(['\"])([^'\"]*)\1"), rf"{flag} \2"),
            (re.compile(rf"{named}\[(['\"])([^'\"]*)\1\]"), rf"{flag} \2=..."),
            (re.compile(rf"{named}=(?=[\w.+-])"), f"{flag} "),
            (re.compile(rf"{named}=(?![\w.+'\"-])"), flag),
        ]
        if "_" in keyword:
            out.append((re.compile(rf"{named}\b"), flag))
    return tuple(out)


def _model_names() -> dict[str, str]:
    """The Python class of each registered model, by name, and its ``--model`` name (the
    first registered for a class): what a model's refusal says of itself."""
    from dplong.models.command_line import MODELS  # registered when the models are imported

    names: dict[str, str] = {}
    for name, spec in MODELS.items():
        owner = getattr(spec.build, "__self__", None)  # ``Model.from_formula``: the class
        if isinstance(owner, type):
            names.setdefault(owner.__name__, name)
    return names


def _for_the_command_line(message: str, formula: str | None = None) -> str:
    """``message`` with the Python spellings of options that have a flag said as the flag, and
    a registered model's class (``ColumnMean``, ``dplong.LongitudinalOLS``, a method of it
    such as ``ColumnMean.fit``) as its ``--model`` name; the analyst's ``formula``, where the
    message quotes it, as written (its ``x.clip(lower=0)`` is no ``--lower``).

    Examples
    --------
    >>> from dplong.cli.errors import _for_the_command_line
    >>> _for_the_command_line("pass levels={'site': [...]}, or declare bounds={...}")
    'pass --levels site=A,B,..., or declare --bounds COLUMN=LO,HI;...'
    >>> _for_the_command_line("ColumnMean takes a formula 'column ~ 1'; got 'y ~ x'")
    "--model mean takes a formula 'column ~ 1'; got 'y ~ x'"
    >>> _for_the_command_line("by='year' needs levels; PooledOLS or dplong.BetweenOLS.fit")
    '--by year needs levels; --model pooled or --model between'
    >>> _for_the_command_line("max_rows (0) must be >= 1; method='ptr' needs bounds['x']")
    '--max-rows (0) must be >= 1; --method ptr needs --bounds x=...'
    >>> _for_the_command_line("scale must be a number, got shape (3,)")
    '--scale must be a number, got shape (3,)'
    >>> _for_the_command_line("groups='y' is a column the formula reads")
    '--groups y is a column the formula reads'
    >>> _for_the_command_line("focus names ['x'], which are not parameters")
    "--focus names ['x'], which are not parameters"
    >>> _for_the_command_line("ColumnMean takes 'y ~ 1'; got 'y ~ I(x.clip(lower=0))'",
    ...                       formula="y ~ I(x.clip(lower=0))")
    "--model mean takes 'y ~ 1'; got 'y ~ I(x.clip(lower=0))'"
    """
    # the formula stands aside as a mark no spelling matches (a NUL, which no message holds)
    kept = formula if formula and formula in message else None
    if kept is not None:
        message = message.replace(kept, _FORMULA)
    for pattern, flag in (*_SPELLINGS, *_option_spellings()):
        message = pattern.sub(flag, message)
    models = _model_names()
    if models:
        classes = "|".join(sorted(map(re.escape, models), key=len, reverse=True))
        said = re.compile(rf"(?<![\w.])(?:dplong\.)?({classes})(?:\.(?:fit|from_formula))?\b")
        message = said.sub(lambda found: f"--model {models[found.group(1)]}", message)
    return message if kept is None else message.replace(_FORMULA, kept)
