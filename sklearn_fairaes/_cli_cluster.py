"""``fairaes audit --scheduler``: where the audit's per-essay work runs (issue 35).

``tcp://HOST:PORT`` connects to a running Dask scheduler; ``local:N`` starts a
process ``LocalCluster`` of N single-threaded workers for the command and
closes it after. A malformed value or a scheduler that does not answer exits 2
before any work, naming the value.
"""

from __future__ import annotations

import argparse
import contextlib
import re
from collections.abc import Iterator
from typing import Any

from ._table_input import BadInput

__all__ = ["add_scheduler_option", "parse_scheduler", "scheduler_client"]

#: Seconds a scheduler has to answer before the command gives up (exit 2).
CONNECT_TIMEOUT = 10

_ADDRESS = re.compile(r"(tcp|tls)://[^\s/:]+:\d{1,5}")


def add_scheduler_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--scheduler`` to the audit command."""
    parser.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help=(
            "run the per-essay work (tagging, features, paraphrases) on a Dask "
            "cluster: tcp://HOST:PORT of a running scheduler, or local:N for a "
            "LocalCluster of N processes started for this command (needs the dask "
            "extra and a --cache folder the workers can reach)"
        ),
    )


def parse_scheduler(value: str | None) -> tuple[str, Any] | None:
    """``("local", N)``, ``("address", "tcp://...")`` or None; BadInput when malformed.

    Examples
    --------
    >>> from sklearn_fairaes._cli_cluster import parse_scheduler
    >>> parse_scheduler("local:2"), parse_scheduler("tcp://10.0.0.5:8786")
    (('local', 2), ('address', 'tcp://10.0.0.5:8786'))
    """
    if value is None:
        return None
    text = value.strip()
    if text.startswith("local:"):
        n = text[len("local:") :]
        if n.isdigit() and int(n) >= 1:
            return ("local", int(n))
    elif _ADDRESS.fullmatch(text):
        return ("address", text)
    raise BadInput(
        f"--scheduler {value!r}: expected tcp://HOST:PORT (a running Dask scheduler, "
        f"e.g. tcp://10.0.0.5:8786) or local:N (N >= 1 local worker processes, e.g. "
        f"local:2)"
    )


@contextlib.contextmanager
def scheduler_client(spec: tuple[str, Any] | None) -> Iterator[Any]:
    """A ``distributed.Client`` for ``spec`` (None: yields None), closed after."""
    if spec is None:
        yield None
        return
    from .resources import require

    distributed = require("distributed", purpose="fairaes audit --scheduler")
    kind, value = spec
    if kind == "local":
        with (
            distributed.LocalCluster(
                n_workers=value,
                threads_per_worker=1,
                processes=True,
                dashboard_address=":0",
            ) as cluster,
            distributed.Client(cluster) as client,
        ):
            yield client
        return
    try:
        client = distributed.Client(value, timeout=CONNECT_TIMEOUT)
    except OSError as exc:  # includes asyncio/ distributed's TimeoutError
        raise BadInput(
            f"--scheduler {value}: no Dask scheduler answered within "
            f"{CONNECT_TIMEOUT} s ({type(exc).__name__}); start one (dask scheduler) "
            f"or check the address"
        ) from None
    with client:
        yield client
