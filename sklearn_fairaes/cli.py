"""The ``fairaes`` command: a thin shell over the Python API.

Exit codes: 0 ok, 2 bad input (with the file, row and column), 1 internal error.
"""

from __future__ import annotations

import argparse
import sys

from ._version import __version__

EXIT_OK, EXIT_INTERNAL, EXIT_BAD_INPUT = 0, 1, 2


def _cmd_setup(args):
    from .resources import setup_resources

    report = setup_resources(verbose=not args.quiet)
    missing = [k for k, v in report.items() if str(v).startswith("MISSING") and k == "wordnet"]
    return EXIT_INTERNAL if missing else EXIT_OK


def build_parser():
    """The argument parser of ``fairaes`` (exposed for tests and docs).

    Examples
    --------
    >>> from sklearn_fairaes.cli import build_parser
    >>> build_parser().prog
    'fairaes'
    """
    parser = argparse.ArgumentParser(
        prog="fairaes",
        description="Individual-fairness audit for automated essay scoring.",
        epilog="Examples:\n  fairaes setup\n  fairaes --version",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"fairaes {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p_setup = sub.add_parser(
        "setup",
        help="prepare language data (WordNet) and report which models are available",
        description=(
            "Prepare offline language data and list what was found: WordNet for NLTK "
            "(built from a system copy when it cannot be downloaded), Sentence-BERT "
            "models, LASER weights, spelling, POS and grammar backends."
        ),
        epilog="Example:\n  fairaes setup",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p_setup.add_argument("--quiet", action="store_true", help="print nothing")
    p_setup.set_defaults(func=_cmd_setup)
    return parser


def main(argv=None):
    """Run ``fairaes`` with ``argv`` (default: ``sys.argv[1:]``); return the exit code.

    Examples
    --------
    >>> from sklearn_fairaes.cli import main
    >>> main(["setup", "--quiet"])
    0
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_BAD_INPUT
    try:
        return args.func(args)
    except KeyboardInterrupt:  # pragma: no cover
        print("fairaes: interrupted", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
