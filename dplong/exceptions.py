"""Exception and warning hierarchy of dplong.

Every error raised on bad input derives from :class:`DplongError` and, where it fits, from the
matching built-in (``ValueError``, ``TypeError``) so that generic handlers keep working.

Exceptions go to the analyst who holds the data; they are not a release and may describe it.
"""

from __future__ import annotations

__all__ = [
    "BudgetExceededError",
    "DataError",
    "DplongError",
    "DplongWarning",
    "FormulaError",
    "InsufficientUsersError",
    "ParameterError",
    "PrivacyParameterError",
]


class DplongError(Exception):
    """Base class of every error raised by dplong."""


class ParameterError(DplongError, ValueError):
    """An option passed to a dplong function is out of range or of the wrong kind."""


class PrivacyParameterError(ParameterError):
    """``epsilon``, ``delta`` or a budget share is invalid."""


class DataError(DplongError, ValueError):
    """The data cannot be used as given (NaN, inf, wrong shape, non-numeric, ...)."""


class FormulaError(DataError):
    """A model formula names missing columns or terms that cannot be estimated."""


class InsufficientUsersError(DataError):
    """Too few users for the requested privacy level: the mechanism cannot succeed."""


class BudgetExceededError(DplongError, ValueError):
    """A spend would exceed the total budget of an :class:`~dplong.Accountant`."""


class DplongWarning(UserWarning):
    """Base class of dplong's warnings."""
