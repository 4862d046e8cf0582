import sys

if sys.argv[1:2] and sys.argv[1] in (
    "stage",
    "code",
    "dvc",
):  # what DVC and the flows start: warm if they can
    from .warm import delegate

    status = delegate(sys.argv[1:])
    if status is not None:
        raise SystemExit(status)

from .cli import main  # noqa: E402

raise SystemExit(main())
