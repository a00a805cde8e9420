"""``python -m dplong``: the ``dplong`` command line (:func:`dplong.cli.main`)."""

from dplong.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
