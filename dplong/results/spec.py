"""The model a fit came from, as the public facts that define it (``results.model``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelSpec:
    """The model a fit came from, as the public facts that define it: ``results.model``.

    statsmodels' and linearmodels' results keep the model object, and with it the data. A
    dplong result never holds a row (the privacy contract: results and pickles hold DP
    outputs and public facts only), so it keeps this data-free view of the model instead:
    its class, name, formula, number of users and design column names. It cannot refit; refit
    with the model object you built. ``str()`` gives the model's name.

    Attributes
    ----------
    name : str
        The model's name (``"LongitudinalOLS"``, ``"Mean"``, ...).
    formula : str
        Its formula (for :func:`dplong.winsorized_mean`, ``"mean of ..."``).
    nobs_users : int
        Number of users n (public).
    exog_names : tuple of str
        The design's column names (a function of the formula and declared levels: public).
    model_class : type or None
        The model's class (None for :func:`dplong.winsorized_mean`, a function).

    Examples
    --------
    >>> import pickle, dplong
    >>> wages = dplong.datasets.load_wage_panel()
    >>> model = dplong.LongitudinalOLS.from_formula("lwage ~ exper", wages, groups="nr")
    >>> res = model.fit(epsilon=1.0, random_state=0)
    >>> res.model
    LongitudinalOLS('lwage ~ exper', n_users=545)
    >>> res.model.model_class is dplong.LongitudinalOLS, res.model.exog_names
    (True, ('Intercept', 'exper'))
    >>> str(res.model), pickle.loads(pickle.dumps(res)).model == res.model
    ('LongitudinalOLS', True)
    """

    name: str
    formula: str
    nobs_users: int
    exog_names: tuple[str, ...]
    model_class: type | None = None

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"{self.name}({self.formula!r}, n_users={self.nobs_users})"
