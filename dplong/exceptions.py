"""Exception and warning hierarchy of dplong.

Every error raised on bad input derives from :class:`DplongError` and, where it fits, from the
matching built-in (``ValueError``, ``TypeError``) so that generic handlers keep working.

Exceptions go to the analyst who holds the data; they are not a release and may describe it.
"""

from __future__ import annotations

__all__ = [
    "ArgumentError",
    "BudgetExceededError",
    "DataError",
    "DataHolderWarning",
    "DplongError",
    "DplongWarning",
    "FormulaError",
    "InsufficientUsersError",
    "MissingDependencyError",
    "ParameterError",
    "PrivacyParameterError",
]


class DplongError(Exception):
    """Base class of every error raised by dplong.

    Examples
    --------
    >>> import dplong
    >>> from dplong.exceptions import DplongError
    >>> try:
    ...     dplong.winsorized_mean([1.0, 2.0, 3.0], epsilon=-1.0, scale=1.0)
    ... except DplongError as err:
    ...     print(type(err).__name__)
    PrivacyParameterError
    """

    #: A refusal of the budget (too small for n and the plan's stages), which a larger ε
    #: cures; a model's fit then names that ε (:func:`dplong.planning.advised`).
    budget_refusal: bool = False
    #: The remedy a model's fit added to a budget refusal (the ε that cures it), once.
    advice: str | None = None


class ParameterError(DplongError, ValueError):
    """An option passed to a dplong function is out of range or of the wrong kind.

    Examples
    --------
    >>> import dplong
    >>> dplong.winsorized_mean([1.0, 2.0, 3.0], epsilon=1.0, scale=1.0, variant="best")
    Traceback (most recent call last):
    ...
    dplong.exceptions.ParameterError: variant must be one of 'default', 'theory'; got 'best'
    >>> from dplong.exceptions import ParameterError
    >>> issubclass(ParameterError, ValueError)
    True
    """


class ArgumentError(ParameterError, TypeError):
    """A call's arguments do not fit the function: an unknown keyword (named with the nearest
    one it takes), a required one missing, or an option given by position. A ``TypeError``
    too, as Python's own refusal of such a call is.

    Examples
    --------
    >>> import dplong
    >>> dplong.winsorized_mean([1.0, 2.0, 3.0], epsilom=1.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dplong.exceptions.ArgumentError: winsorized_mean(): got an unexpected keyword argument \
'epsilom' (did you mean 'epsilon' for 'epsilom'?)...
    """


class PrivacyParameterError(ParameterError):
    """``epsilon``, ``delta`` or a budget share is invalid.

    Examples
    --------
    >>> import dplong
    >>> dplong.winsorized_mean([1.0, 2.0, 3.0], epsilon=0.0, scale=1.0)
    Traceback (most recent call last):
    ...
    dplong.exceptions.PrivacyParameterError: epsilon must be a positive finite number, got 0.0
    """


class DataError(DplongError, ValueError):
    """The data cannot be used as given (NaN, inf, wrong shape, non-numeric, ...).

    Examples
    --------
    >>> import dplong
    >>> dplong.winsorized_mean([], epsilon=1.0)
    Traceback (most recent call last):
    ...
    dplong.exceptions.DataError: values is empty (shape (0, 1))
    """


class FormulaError(DataError):
    """A model formula names missing columns or terms that cannot be estimated.

    Examples
    --------
    >>> import dplong
    >>> wages = dplong.datasets.load_wage_panel()
    >>> dplong.LongitudinalOLS.from_formula("lwage ~ tenure", wages,
    ...                                     groups="nr")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dplong.exceptions.FormulaError: 'tenure' is neither a column of the data nor a name of ...
    """


class InsufficientUsersError(DataError):
    """Too few users for the requested privacy level: the mechanism cannot succeed.

    Examples
    --------
    >>> import dplong
    >>> dplong.winsorized_mean([1.0], epsilon=1.0, scale=1.0)
    Traceback (most recent call last):
    ...
    dplong.exceptions.InsufficientUsersError: a private mean needs at least 2 users, got n=1
    """


class MissingDependencyError(DplongError, ImportError):
    """An optional dependency that the input needs is not installed (e.g. dask for a Dask
    data frame); the message names the extra to install.

    Examples
    --------
    >>> from dplong.exceptions import MissingDependencyError
    >>> issubclass(MissingDependencyError, ImportError)
    True
    """


class BudgetExceededError(DplongError, ValueError):
    """A spend would exceed the total budget of an :class:`~dplong.Accountant`.

    Examples
    --------
    >>> import dplong
    >>> acct = dplong.Accountant(epsilon=1.0)
    >>> acct.check(epsilon=1.5, delta=0.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dplong.exceptions.BudgetExceededError: this release needs epsilon=1.5, delta=0 but only ...
    """


class DplongWarning(UserWarning):
    """Base class of dplong's warnings.

    Examples
    --------
    With only 150 users at ε = 1 the private scale is fragile and no count of the tail is
    affordable, and dplong says so (once each, with a remedy; the results carry the same words
    in ``warnings`` and their summary):

    >>> import warnings
    >>> import dplong
    >>> from dplong.exceptions import DplongWarning
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     res = dplong.winsorized_mean(list(range(150)), epsilon=1.0, random_state=1)
    >>> [w.category is DplongWarning for w in caught]
    [True, True]
    >>> [str(w.message) for w in caught] == list(res.warnings)
    True
    """


class DataHolderWarning(DplongWarning):
    """A warning about the rows, for the eyes of whoever holds the data: never part of a result.

    It is issued while a design is built (e.g. by ``from_formula``), before any release, and
    is not recorded in ``results.warnings``, the summary or the report: what it says depends
    on the rows, which only a DP release may reflect. So whether it is issued depends on the
    rows too: a program that turns warnings into errors (``warnings.simplefilter("error")``,
    ``python -W error``) should keep this one a warning
    (``warnings.simplefilter("always", DataHolderWarning)`` after it), or a fit's running
    would depend on the rows.

    Examples
    --------
    A ``Categorical`` made by ``astype("category")`` has the values present as its categories,
    and categories are taken as declared levels:

    >>> import warnings
    >>> import pandas as pd
    >>> import dplong
    >>> from dplong.exceptions import DataHolderWarning
    >>> data = pd.DataFrame({"id": [1, 1, 2, 2], "site": ["a", "b", "a", "b"],
    ...                      "y": [1.0, 2.0, 3.0, 4.0]}).astype({"site": "category"})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = dplong.LongitudinalOLS.from_formula("y ~ site", data, groups="id")
    >>> [w.category is DataHolderWarning for w in caught]
    [True]
    """
