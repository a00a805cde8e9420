"""Private pooled OLS from per-person sufficient statistics, each released as one vector.

The pooled estimator of ``y_ut = x_ut'β + e_ut`` (linearmodels' ``PooledOLS``, statsmodels'
``OLS`` with ``cov_type="cluster"``) solves ``(Σ_u X_u'X_u) β = Σ_u X_u'y_u``: it identifies
covariates that never change within a person (treatment arm, sex, cohort), which the per-user
and within estimators cannot. Everything it needs is a sum over people, released in three
Gaussian (zCDP) vectors, whatever the number of columns:

1. **Scaling from public bounds.** Every column of the design and the outcome has a public
   range (``bounds``; indicator columns of declared factors know theirs from the formula):
   values are clipped into it and mapped onto ``[-1, 1]`` (around the range's centre when the
   formula has an intercept, so that the map is undone exactly). A row ``z = (x̃, ỹ)`` then has
   ``‖z‖² <= p + 1``, whatever the data.
2. **The augmented Gram matrix** (the pilot). Each person's ``Z_u = Σ_t w_u z_t z_t'``, with
   the weight ``w_u = min(1, T_cap / T_u)`` for a public cap ``T_cap`` on the rows that count
   (``max_rows``), is PSD with trace at most ``T_cap (p + 1)``. Vectorised with the
   off-diagonal entries times √2 (so that the vector's norm is the Frobenius norm), replacing
   one person moves the sum by at most ``√2 T_cap (p + 1)`` (for PSD ``A, B``,
   ``‖A - B‖_F² <= ‖A‖_F² + ‖B‖_F²``): one discrete Gaussian release of the whole vector
   (:func:`~dplong.privacy.noise.release_vector_sum`) gives ``X'X``, ``X'y`` and ``y'y``. The
   released ``X'X`` is floored at an eigenvalue scaled to its noise (AdaSSP-style:
   ``λ_min >= σ (√(2p) + 3)``, a ridge only where the noise could make it singular) and solved
   for the pilot ``β₀``.
3. **One Newton step.** The pilot's noise is set by the worst case of a row (the bounds); a
   score is usually far smaller. At ``β₀`` (public) each person's score
   ``s_u = Σ_t w_u x̃_t (ỹ_t - x̃_t'β₀)`` is clipped to a radius set from released numbers
   (:data:`CLIP_RADIUS` times the Cauchy–Schwarz size ``T_cap² σ̂² m̂`` of a score, with the
   residual variance σ̂² and the mean ``‖x̃‖²`` m̂ from step 2; sensitivity ``2R``), their sum
   released, and ``β̂ = β₀ + Ĥ⁻¹ Σ_u s_u``: exactly pooled OLS when nothing is clipped and the
   noise is off, and several times less noise than the pilot when few scores are clipped.
4. **The person-clustered meat.** At ``β̂`` the clipped scores' ``Σ_u s_u s_u'`` is released
   the same way as step 2 (sensitivity ``√2 R²``) and projected onto the PSD cone; the sandwich
   ``Ĥ⁻¹ M̂ Ĥ⁻¹`` (times ``n / (n - 1)``) is the sampling covariance.

The privacy noise of steps 2 and 3 is pushed through the exact map (floor, solve, step,
unscale) by a fixed-seed parametric bootstrap; its mean shift and the ridge's shrinkage join
the bias bound. The clipping of the scores is not visible to the bootstrap: a clipped score
corrects less of the pilot's error (on a simulated panel with strong person effects the step
kept about a fifth of it). ``noise_sd`` is therefore the wider of two laws that bracket it —
every score exact (the step corrects the pilot) and every score clipped away (the pilot's
error stays) — so the intervals are conservative: the point estimate has the step's accuracy,
the interval the pilot's. ``bse`` combines it with the person-clustered sampling error.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import pandas as pd
import patsy
from numpy.typing import NDArray

from dplong._validation import RandomState, check_choice, check_random_state, real_number
from dplong.dask_frames import is_dask
from dplong.exceptions import DataError, ParameterError
from dplong.formula import DesignSpec, GroupsLike, LevelsLike, PanelDesign, group_design
from dplong.models.base import DEFAULT_MAX_ROWS, MAX_ROWS_HELP, FormulaModel, check_max_rows
from dplong.models.command_line import CommandLineModel, Option, register
from dplong.privacy.accounting import Accountant, LedgerEntry, PrivacyLedger
from dplong.privacy.budget import afford, charge, gaussian_shares
from dplong.privacy.noise import WeightedRelease, release_vector_sum
from dplong.privacy.options import ReleaseOptions
from dplong.results import RegressionResults

__all__ = ["PooledOLS", "column_bounds", "vech_scaled"]

#: Shares of the fit's ρ: the augmented Gram matrix (the pilot and the Hessian), the Newton
#: step's clipped scores (β̂'s noise, first order) and the clustered meat, which only needs to
#: be good to some per cent (it enters bse under a root). Chosen on RAND HIE at ε = 1
#: (``benchmarks/pooled.py``).
SHARES = (0.4, 0.45, 0.15)  # Gram, Newton step(s), meat
#: The eigenvalue floor: ``σ (√(2p) + FLOOR_SDS)`` bounds the spectral norm of the released
#: ``X'X``'s noise (a symmetric Gaussian matrix of entry sd σ on the diagonal, σ/√2 off it, has
#: norm about σ √(2p)) with a margin of FLOOR_SDS sds.
FLOOR_SDS = 3.0
#: The scores' clipping radius² in units of ``T_cap² σ̂² m̂``: the Cauchy–Schwarz bound on
#: ``‖s_u‖²`` for a person with ``T_cap`` rows of average residual² and ``‖x̃‖²`` (a person whose
#: residuals are perfectly correlated); 2 leaves room for heavier-tailed residuals (1 biased
#: the RAND HIE age slope by a noise sd, 4 doubled the step's noise).
CLIP_RADIUS = 2.0
#: Monte Carlo draws (and their fixed seed) of the privacy noise pushed through β̂'s map.
NOISE_DRAWS, NOISE_SEED = 2000, 20261128

CovType = Literal["clustered", "cluster"]
COV_TYPES: tuple[CovType, ...] = ("clustered", "cluster")
BoundsLike = Mapping[str, tuple[float, float]]


class PooledOLS(FormulaModel):
    """User-level DP pooled OLS with person-clustered standard errors (module docstring).

    Covariates constant within a person are identified. Every column of the design and the
    outcome needs a public range: indicator columns of factors know theirs from the formula;
    any other is given in ``bounds`` (the range the analyst knows: ages 0-100, a 0/1
    treatment), costs nothing, and clips values outside it.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import dplong
    >>> rng = np.random.default_rng(0)
    >>> people, years = 4000, 4
    >>> treated = np.repeat(rng.integers(0, 2, people), years)   # constant within a person
    >>> age = rng.uniform(20, 60, people * years)
    >>> y = 1.0 + 0.5 * treated + 0.02 * age + np.repeat(rng.normal(0, 0.5, people), years) \\
    ...     + rng.normal(0, 0.5, people * years)
    >>> panel = pd.DataFrame({"id": np.repeat(np.arange(people), years), "y": y,
    ...                       "treated": treated, "age": age})
    >>> model = dplong.PooledOLS.from_formula(
    ...     "y ~ treated + age", panel, groups="id",
    ...     bounds={"y": (-2.0, 6.0), "treated": (0, 1), "age": (0, 100)})
    >>> res = model.fit(epsilon=1.0, max_rows=4, random_state=1)
    >>> list(res.params.index), bool(res.privacy.epsilon <= 1.0)
    (['Intercept', 'treated', 'age'], True)
    >>> bool(abs(res.params["treated"] - 0.5) < 4 * res.bse["treated"])
    True
    """

    model_name = "PooledOLS"

    def __init__(
        self,
        design: PanelDesign,
        ranges: NDArray[np.float64],
        *,
        levels: Mapping[str, tuple[Any, ...]],
    ) -> None:
        super().__init__(design)
        self._design: PanelDesign = design
        self._ranges = ranges  # public: (p + 1) x 2, the columns' then the outcome's
        self._levels = levels

    @classmethod
    def from_formula(
        cls,
        formula: str,
        data: pd.DataFrame,
        *,
        groups: GroupsLike,
        bounds: BoundsLike | str | None = None,
        levels: LevelsLike | None = None,
    ) -> PooledOLS:
        """Build the model from a patsy formula.

        Parameters
        ----------
        formula : str
            ``"y ~ x1 + x2"``; an intercept is included unless removed with ``- 1``.
        data : pandas.DataFrame
            One row per observation.
        groups : str or array_like
            Column name (or values) of the person id: the unit of privacy.
        bounds : mapping of str to (low, high)
            Public ranges of the outcome and of every design column that is not an indicator
            of a declared factor, by name (``{"xage": (0, 100), "np.log1p(meddol)": (0, 12)}``):
            values outside are clipped. Public facts: they cost no budget.
        levels : mapping of str to sequence, optional
            Declared levels of factor columns, as in :meth:`LongitudinalOLS.from_formula`.

        Examples
        --------
        >>> import dplong
        >>> hie = dplong.datasets.load_randhie()
        >>> dplong.PooledOLS.from_formula(
        ...     "np.log1p(meddol) ~ np.log(coins + 1) + xage + female", hie, groups="zper",
        ...     bounds={"np.log1p(meddol)": (0, 12), "np.log(coins + 1)": (0, 4.62),
        ...             "xage": (0, 100), "female": (0, 1)})
        PooledOLS('np.log1p(meddol) ~ np.log(coins + 1) + xage + female', n_users=5912)
        """
        if is_dask(data):
            raise DataError(
                "PooledOLS needs a pandas DataFrame (its per-person sums are not yet reduced "
                "on Dask); call .compute() first"
            )
        spec = DesignSpec.from_formula(
            formula, data, levels=levels, eval_env=patsy.EvalEnvironment.capture(1)
        )
        ranges = column_bounds(spec, bounds)  # refused before the rows are read
        design = group_design(spec, data, groups=groups)
        return cls(design, ranges, levels=spec.levels)

    def fit(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        max_rows: int = DEFAULT_MAX_ROWS,
        cov_type: CovType = "clustered",
        privacy: Literal["central"] = "central",
        variant: Literal["default"] = "default",
        random_state: RandomState = None,
        rng: RandomState = None,
        accountant: Accountant | None = None,
    ) -> RegressionResults:
        """Release pooled OLS with user-level (ε, δ)-DP: two discrete Gaussian releases (zCDP),
        converted exactly to (ε, δ).

        Parameters
        ----------
        epsilon, delta : float
            Total budget (δ default ``1/n**2``).
        max_rows : int
            Public cap ``T_cap`` on a person's rows (default 10): a person with more rows
            enters with weight ``T_cap / T_u`` per row, so no person outweighs ``T_cap`` rows.
            Exactly pooled OLS when no one has more. The noise grows in proportion to it:
            give the panel's public length when it has one.
        cov_type : {"clustered", "cluster"}
            Standard errors clustered by person (the unit of privacy and sampling): the only
            choice, in linearmodels' and statsmodels' spelling.
        privacy, variant : {"central"}, {"default"}
            The only model and release there are (a trusted curator; the releases above), as
            the command line's common options name them.
        random_state, rng : None, int or numpy.random.Generator
            Source of the noise; ``None`` (default) is fresh OS entropy, the only choice for a
            release (a seed is for reproducible research).
        accountant : dplong.Accountant, optional
            Checked before the first draw and charged with the fit's ledger.

        Returns
        -------
        RegressionResults

        Examples
        --------
        >>> import dplong
        >>> hie = dplong.datasets.load_randhie()
        >>> model = dplong.PooledOLS.from_formula(
        ...     "np.log1p(meddol) ~ np.log(coins + 1) + xage + female", hie, groups="zper",
        ...     bounds={"np.log1p(meddol)": (0, 12), "np.log(coins + 1)": (0, 4.62),
        ...             "xage": (0, 100), "female": (0, 1)})
        >>> res = model.fit(epsilon=1e300, delta=0.5, max_rows=5, random_state=0)  # noise off
        >>> round(float(res.params["female"]), 2), round(float(res.bse["female"]), 3)
        (0.53, 0.042)

        Non-private pooled OLS gives 0.523 (clustered SE 0.042); the rest is the pull of the
        few clipped scores.
        """
        design = self._design
        n, p = design.n, len(design.columns)
        check_choice(privacy, "privacy", ("central",))
        check_choice(variant, "variant", ("default",))
        options = ReleaseOptions.check(
            n, epsilon=epsilon, delta=delta, privacy="central", bound=None, d=p
        )
        cap = check_max_rows(max_rows)
        check_choice(cov_type, "cov_type", COV_TYPES)
        if accountant is not None and not isinstance(accountant, Accountant):
            raise ParameterError(
                f"accountant must be a dplong.Accountant, got {type(accountant).__name__}"
            )
        generator = check_random_state(random_state, rng)
        rho_gram, *rho_steps, rho_meat = gaussian_shares(options.epsilon, options.delta, SHARES)
        afford(accountant, options.epsilon, options.delta)
        intercept = "Intercept" in design.columns
        scaled = _Scaling.of(self._ranges, design.columns)
        x, y = scaled.apply(design.X, design.y)
        rows = np.bincount(design.codes, minlength=n).astype(np.float64)
        weight = np.minimum(1.0, cap / np.maximum(rows, 1.0))[design.codes]

        # step 2: the augmented Gram matrix, one vector: the pilot and the Hessian
        z = np.column_stack([x, y])
        bound = cap * (p + 1.0) * (1.0 + 1e-12)  # trace of Z_u, with room for rounding
        gram = release_vector_sum(
            _per_user(vech_scaled(z, weight), design.codes, n),
            bound,
            math.sqrt(2.0) * bound,
            rho_gram,
            generator,
        )
        released = _unvech_scaled(gram.total, p + 1)
        sigma = float(gram.sd[0])
        pilot = _Solution.of(released, sigma)
        radius = _clip_radius(released, pilot, cap, n, intercept)

        # step 3: Newton steps, the clipped scores at the last β (public)
        score_bound = radius * (1.0 + 1e-12)
        beta, steps = pilot.beta, []
        for rho_step in rho_steps:
            steps.append(
                release_vector_sum(
                    _scores(x, y, weight, beta, design.codes, n, radius),
                    score_bound,
                    2.0 * score_bound,
                    rho_step,
                    generator,
                )
            )
            beta = beta + np.linalg.solve(pilot.hessian, steps[-1].total)

        # step 4: the person-clustered meat at the released β̂ (public)
        scores = _scores(x, y, weight, beta, design.codes, n, radius)
        meat_bound = radius**2 * (1.0 + 1e-12)
        meat = release_vector_sum(
            vech_scaled(scores, np.ones(n)),
            meat_bound,
            math.sqrt(2.0) * meat_bound,
            rho_meat,
            generator,
        )
        values, vectors = np.linalg.eigh(_unvech_scaled(meat.total, p))
        psd = (vectors * np.maximum(values, 0.0)) @ vectors.T
        inverse = np.linalg.inv(pilot.hessian)
        sampling = n / (n - 1.0) * inverse @ psd @ inverse

        def entry(stage: str, target: str, rho: float, release: WeightedRelease) -> LedgerEntry:
            return LedgerEntry(
                stage,
                "discrete Gaussian (zCDP), one vector",
                target,
                0.0,
                0.0,
                rho,
                float(release.sensitivity),
                float(release.sd[0]),
            )

        ledger = PrivacyLedger.from_entries(
            [
                entry("sufficient statistics", "[X y]'[X y]", rho_gram, gram),
                *(
                    entry(f"Newton step {k + 1}", f"Σ_u clip(s_u(β_{k}))", rho, step)
                    for k, (rho, step) in enumerate(zip(rho_steps, steps, strict=True))
                ),
                entry("clustered meat", "Σ_u clip(s_u) clip(s_u)'", rho_meat, meat),
            ],
            options.delta,
            "central",
        )
        charge(accountant, ledger, options.epsilon, options.delta)
        draws = _noise_draws(pilot, beta, sigma, [float(step.sd[0]) for step in steps])
        return self._results(scaled, pilot, beta, draws, sampling, ledger, options, cap)

    def _results(
        self,
        scaled: _Scaling,
        solution: _Solution,
        released: NDArray[np.float64],
        draws: tuple[NDArray[np.float64], NDArray[np.float64]],
        sampling: NDArray[np.float64],
        ledger: PrivacyLedger,
        options: ReleaseOptions,
        cap: int,
    ) -> RegressionResults:
        """Unscale β̂, its noise draws and its covariances."""
        names = self._design.columns
        index = pd.Index(names)
        beta = scaled.unscale(released)
        corrected, uncorrected = (scaled.offset + d @ scaled.linear.T for d in draws)
        noise_sd = np.maximum(corrected.std(axis=0), uncorrected.std(axis=0))
        shift = corrected.mean(axis=0) - beta
        ridge = np.abs(scaled.linear @ solution.shrinkage)
        sampling_sd = np.sqrt(np.diag(scaled.linear @ sampling @ scaled.linear.T))
        notes = (
            (
                "The released X'X was floored at an eigenvalue scaled to its privacy noise (a "
                "ridge): the design is nearly singular at this epsilon, and the coefficients "
                "are shrunk (the shrinkage is in the bias bound). Raise epsilon or drop a "
                "collinear term.",
            )
            if solution.ridge > 0.0
            else ()
        )

        def series(values: NDArray[np.float64], label: str) -> pd.Series:
            return pd.Series(values, index=index, name=label)

        bounds = ", ".join(
            f"{name} in [{lo:g}, {hi:g}]"
            for name, (lo, hi) in zip((*names, self._design.outcome), self._ranges, strict=True)
            if name != "Intercept"
        )
        return RegressionResults(
            model=self.spec,
            formula=self.formula,
            params=series(beta, "params"),
            noise_scale=series(noise_sd, "noise scale"),
            noise_sd=series(noise_sd, "noise sd"),
            noise_law="gaussian",
            sampling_sd=series(sampling_sd, "sampling sd"),
            bias=series(np.abs(shift) + ridge, "bias"),
            projection_interval=pd.DataFrame(np.nan, index=index, columns=["lower", "upper"]),
            failed=pd.Series(False, index=index, name="failed"),
            privacy=ledger,
            nobs_users=self.nobs_users,
            # every person contributes (n is public): nothing is counted
            users=pd.Series([math.nan], index=["users with a statistic"], name="users"),
            users_sd=math.nan,
            variant="sufficient statistics",
            assumptions=(
                f"public bounds (values outside are clipped): {bounds}",
                f"a person's rows count up to max_rows={cap} (more are down-weighted)",
                "standard errors clustered by person, plus the privacy noise",
            ),
            warnings=notes,
            gamma=options.gamma,
            bad_events=series(np.zeros(len(names)), "bad events"),
            basis="pooled OLS from released sufficient statistics",
            levels=dict(self._levels),
        )


def column_bounds(spec: DesignSpec, bounds: BoundsLike | str | None) -> NDArray[np.float64]:
    """The public range of every design column and of the outcome ((p + 1) x 2): the intercept
    is 1, an indicator of declared factor levels has the range of its contrast values, any
    other column (and the outcome) its entry of ``bounds``, which must name nothing else.
    Decided from the formula and the options only.

    Examples
    --------
    >>> import pandas as pd
    >>> from dplong.formula import DesignSpec
    >>> from dplong.models.pooled import column_bounds
    >>> schema = pd.DataFrame({"y": [0.0], "x": [0.0], "arm": ["a"]}).iloc[:0]
    >>> spec = DesignSpec.from_formula("y ~ x + arm", schema, levels={"arm": ["a", "b"]})
    >>> column_bounds(spec, {"y": (0, 10), "x": (-1, 1)}).tolist()
    [[1.0, 1.0], [0.0, 1.0], [-1.0, 1.0], [0.0, 10.0]]
    >>> column_bounds(spec, {"y": (0, 10)})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dplong.exceptions.ParameterError: bounds needs a public range for ['x'] ...
    """
    if isinstance(bounds, str):  # the command line's "COL=LO,HI;COL=LO,HI"
        bounds = _parse_bounds(bounds)
    if not isinstance(bounds, Mapping | None):  # untyped callers
        raise ParameterError(
            f"bounds must be a mapping {{column: (low, high)}}, got {type(bounds).__name__}"
        )
    given = dict(bounds or {})
    known = _indicator_ranges(spec)
    names = (*spec.columns, spec.outcome)
    unknown = [k for k in given if k not in names]
    if unknown:
        raise ParameterError(
            f"bounds names {unknown}, which are not the outcome or a design column; they are "
            f"{list(names)}"
        )
    missing = [c for c in names if c != "Intercept" and c not in given and c not in known]
    if missing:
        raise ParameterError(
            f"bounds needs a public range for {missing} (the outcome and every column that is "
            "not an indicator of declared levels), e.g. bounds={'age': (0, 100)}: the ranges "
            "in the data are private"
        )
    out = np.empty((len(names), 2))
    for j, name in enumerate(names):
        if name == "Intercept":
            out[j] = 1.0
        elif name in given:
            out[j] = _range(given[name], name)
        else:
            out[j] = known[name]
    return out


def _parse_bounds(text: str) -> dict[str, tuple[float, float]]:
    """``"xage=0,100;female=0,1"`` as ``{"xage": (0.0, 100.0), "female": (0.0, 1.0)}``."""
    out: dict[str, tuple[float, float]] = {}
    for item in filter(None, (part.strip() for part in text.split(";"))):
        name, _, values = item.rpartition("=")
        try:
            low, high = (float(v) for v in values.split(","))
        except ValueError:
            name = ""
        if not name.strip():
            raise ParameterError(f"bounds must read COL=LO,HI;COL=LO,HI, got {item!r}")
        out[name.strip()] = (low, high)
    return out


def _range(value: Any, name: str) -> tuple[float, float]:
    try:
        low, high = value
    except (TypeError, ValueError):
        raise ParameterError(
            f"bounds[{name!r}] must be a pair (low, high), got {value!r:.60}"
        ) from None
    low, high = (
        real_number(low, f"bounds[{name!r}] low"),
        real_number(high, f"bounds[{name!r}] high"),
    )
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ParameterError(
            f"bounds[{name!r}] must be finite with low < high, got ({low!r}, {high!r})"
        )
    return float(low), float(high)


def _indicator_ranges(spec: DesignSpec) -> dict[str, tuple[float, float]]:
    """Ranges of the columns of terms made only of categorical factors: products of their
    contrast matrices' entries (interval arithmetic over the factors)."""
    info = spec.regressor_info
    out: dict[str, tuple[float, float]] = {}
    for term, subterms in info.term_codings.items():
        factors = term.factors
        if not factors or any(info.factor_infos[f].type != "categorical" for f in factors):
            continue
        for subterm in subterms:
            low, high = 1.0, 1.0
            for factor in subterm.factors:
                contrast = subterm.contrast_matrices[factor].matrix
                products = [
                    low * contrast.min(),
                    low * contrast.max(),
                    high * contrast.min(),
                    high * contrast.max(),
                ]
                low, high = min(products), max(products)
            for name in info.column_names[info.term_slices[term]]:
                out[name] = (float(low), float(high))
    return out


class _Scaling:
    """The affine map of every column and the outcome onto [-1, 1] (module docstring, step 1),
    and back: ``β = offset + linear γ`` for the coefficients γ of the scaled design."""

    def __init__(
        self,
        centre: NDArray[np.float64],
        half: NDArray[np.float64],
        ranges: NDArray[np.float64],
        intercept: int | None,
    ) -> None:
        self.centre, self.half, self.ranges, self.intercept = centre, half, ranges, intercept
        p = centre.size - 1
        self.linear = np.diag(half[-1] / half[:-1])
        self.offset = np.zeros(p)
        if intercept is not None:
            self.linear[intercept] -= centre[:-1] * half[-1] / half[:-1]
            self.linear[intercept, intercept] = half[-1]
            self.offset[intercept] = centre[-1]

    @classmethod
    def of(cls, ranges: NDArray[np.float64], columns: tuple[str, ...]) -> _Scaling:
        intercept = columns.index("Intercept") if "Intercept" in columns else None
        if intercept is None:  # no intercept to absorb a shift: scale around 0
            centre = np.zeros(len(ranges))
            half = np.abs(ranges).max(axis=1)
        else:
            centre = ranges.mean(axis=1)
            half = (ranges[:, 1] - ranges[:, 0]) / 2.0
            centre[intercept], half[intercept] = 0.0, 1.0
        return cls(centre, np.where(half > 0, half, 1.0), ranges, intercept)

    def apply(
        self, X: NDArray[np.float64], y: NDArray[np.float64]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The clipped, scaled design and outcome (values in [-1, 1])."""
        low, high = self.ranges[:, 0], self.ranges[:, 1]
        x = (np.clip(X, low[:-1], high[:-1]) - self.centre[:-1]) / self.half[:-1]
        out = (np.clip(y, low[-1], high[-1]) - self.centre[-1]) / self.half[-1]
        return np.clip(x, -1.0, 1.0), np.clip(out, -1.0, 1.0)

    def unscale(self, gamma: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(self.offset + self.linear @ gamma)


class _Solution:
    """β̂ of the scaled design from the released ``[X y]'[X y]``: the floor, the solve."""

    def __init__(
        self,
        hessian: NDArray[np.float64],
        beta: NDArray[np.float64],
        ridge: float,
        shrinkage: NDArray[np.float64],
    ) -> None:
        self.hessian, self.beta, self.ridge, self.shrinkage = hessian, beta, ridge, shrinkage

    @classmethod
    def of(cls, released: NDArray[np.float64], sigma: float) -> _Solution:
        p = released.shape[0] - 1
        gram, cross = released[:p, :p], released[:p, p]
        ridge = max(0.0, _floor(sigma, p) - float(np.linalg.eigvalsh(gram)[0]))
        hessian = gram + ridge * np.eye(p)
        beta = np.asarray(np.linalg.solve(hessian, cross), dtype=np.float64)
        # the ridge's pull toward 0, to first order: (G + λI)⁻¹ λ β̂
        shrinkage = np.abs(np.linalg.solve(hessian, ridge * beta))
        return cls(hessian, beta, ridge, shrinkage)


def _floor(sigma: float, p: int) -> float:
    """The eigenvalue floor of a released p x p Gram matrix of noise sd σ (:data:`FLOOR_SDS`)."""
    return sigma * (math.sqrt(2.0 * p) + FLOOR_SDS) if sigma > 0 else 0.0


def _noise_draws(
    pilot: _Solution, beta: NDArray[np.float64], sigma: float, score_sds: list[float]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """:data:`NOISE_DRAWS` draws of the released β̂ (scaled) under fresh noise of the released
    laws, taking the released numbers for the truth (post-processing with a fixed seed): the
    ``[X y]'[X y]`` around the released Hessian and β̂, each floored and solved as the fit was
    (the pilot), then stepped by its Hessian's solve of a score plus a draw of the score's
    noise. Two laws bracket the clipping, which the draws cannot see: the exact score
    ``H (β̂ - β₀)`` (nothing clipped: the step corrects the pilot's error) and none at all
    (every score clipped away: the pilot's error stays); the fit reports the wider."""
    p = beta.size
    rng = np.random.default_rng(NOISE_SEED)
    hessian = pilot.hessian - pilot.ridge * np.eye(p)
    centre = np.zeros((p + 1, p + 1))
    centre[:p, :p] = hessian
    centre[:p, p] = centre[p, :p] = hessian @ beta
    noise = rng.normal(0.0, sigma, (NOISE_DRAWS, p + 1, p + 1))
    noise = (np.triu(noise) + np.swapaxes(np.triu(noise, 1), 1, 2)) / np.where(
        np.eye(p + 1, dtype=bool), 1.0, math.sqrt(2.0)
    )
    draws = centre + noise
    gram, cross = draws[:, :p, :p], draws[:, :p, p]
    smallest = np.linalg.eigvalsh(gram)[:, 0]
    floored = gram + np.maximum(0.0, _floor(sigma, p) - smallest)[:, None, None] * np.eye(p)
    corrected = np.linalg.solve(floored, cross[..., None])[..., 0]
    uncorrected = corrected.copy()
    for sd in score_sds:
        step = rng.normal(0.0, sd, (NOISE_DRAWS, p))
        uncorrected = uncorrected + np.linalg.solve(floored, step[..., None])[..., 0]
        step = step + (beta - corrected) @ hessian
        corrected = corrected + np.linalg.solve(floored, step[..., None])[..., 0]
    return np.asarray(corrected), np.asarray(uncorrected)


def _clip_radius(
    released: NDArray[np.float64], solution: _Solution, cap: int, n: int, intercept: bool
) -> float:
    """The scores' clipping radius from released numbers (:data:`CLIP_RADIUS`), at most the
    worst case ``T_cap √p (1 + Σ|β̂₀|)`` of a score."""
    p = solution.beta.size
    gram, cross, square = released[:p, :p], released[:p, p], released[p, p]
    beta = solution.beta
    # the released weighted row count (the intercept's entry), at least n; n without one
    rows = max(float(gram[0, 0]) if intercept else n, float(n))
    rss = square - 2.0 * beta @ cross + beta @ gram @ beta
    variance = max(rss, 1.0) / rows
    mean_square = min(max(float(np.trace(gram)), 1.0) / rows, float(p))
    worst = cap * math.sqrt(p) * (1.0 + float(np.abs(beta).sum()))
    return min(math.sqrt(CLIP_RADIUS * variance * mean_square) * cap, worst)


def _scores(
    x: NDArray[np.float64],
    y: NDArray[np.float64],
    weight: NDArray[np.float64],
    beta: NDArray[np.float64],
    codes: NDArray[np.intp],
    n: int,
    radius: float,
) -> NDArray[np.float64]:
    """Every person's score ``s_u = Σ_t w_u x̃_t (ỹ_t - x̃_t'β)`` at a public β, clipped to
    ``radius`` in L2 norm (n x p)."""
    scores = _per_user(x * (weight * (y - x @ beta))[:, None], codes, n)
    norms = np.sqrt((scores**2).sum(axis=1))
    return np.asarray(
        scores * np.minimum(1.0, radius / np.maximum(norms, radius * 1e-300))[:, None]
    )


def vech_scaled(rows: NDArray[np.float64], weight: NDArray[np.float64]) -> NDArray[np.float64]:
    """Every row's weighted outer product ``w z z'`` as a vector of its upper triangle with the
    off-diagonal entries times √2, so that the vector's norm is the matrix's Frobenius norm.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.models.pooled import vech_scaled
    >>> v = vech_scaled(np.array([[1.0, 2.0]]), np.array([1.0]))
    >>> v.round(4).tolist(), float(np.linalg.norm(v)) == float(np.linalg.norm([[1, 2], [2, 4]]))
    ([[1.0, 2.8284, 4.0]], True)
    """
    k = rows.shape[1]
    upper = np.triu_indices(k)
    factor = np.where(upper[0] == upper[1], 1.0, math.sqrt(2.0))
    return np.asarray(rows[:, upper[0]] * rows[:, upper[1]] * (weight[:, None] * factor))


def _unvech_scaled(vector: NDArray[np.float64], k: int) -> NDArray[np.float64]:
    upper = np.triu_indices(k)
    values = vector / np.where(upper[0] == upper[1], 1.0, math.sqrt(2.0))
    out = np.zeros((k, k))
    out[upper] = values
    out[upper[1], upper[0]] = values
    return out


def _per_user(values: NDArray[np.float64], codes: NDArray[np.intp], n: int) -> NDArray[np.float64]:
    """Sums of the rows of ``values`` by user (rows sorted by user code; users without rows:
    0)."""
    out = np.zeros((n, values.shape[1]))
    if codes.size:
        starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
        out[codes[starts]] = np.add.reduceat(values, starts, axis=0)
    return out


register(
    CommandLineModel(
        "pooled",
        PooledOLS.from_formula,
        "PooledOLS: pooled OLS with person-clustered errors from released sufficient "
        "statistics; between-person covariates identified (give --bounds)",
        options=(
            Option(
                "bounds",
                "text",
                "COL=LO,HI;...",
                "public ranges of the outcome and the non-indicator columns",
                stage="model",
                required=True,
            ),
            Option("max_rows", "int", "T", MAX_ROWS_HELP),
        ),
    )
)
