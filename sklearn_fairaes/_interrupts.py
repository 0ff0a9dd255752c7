"""Ctrl-C that stops a long computation even when it lands in a finaliser.

``fairaes`` (every command) runs under :func:`interrupts_kept`, and so does
:func:`sklearn_fairaes.audit` when asked (``tune_interpreter=True``; the
handler and the hook belong to the whole process, so a library call leaves
them alone by default), so that an interrupt is never lost to the garbage
collector: the audit either stops with ``KeyboardInterrupt`` or was not
interrupted.
"""

from __future__ import annotations

import _thread
import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["interrupts_kept"]


@contextlib.contextmanager
def interrupts_kept() -> Iterator[None]:
    """Make a Ctrl-C that lands in a finaliser stop the computation all the same.

    Python runs the SIGINT handler at the next bytecode, which may be inside a
    ``__del__`` that the garbage collector called (regex's ``Group.__del__``
    does while nltk is imported); an exception raised there is "ignored" and
    goes to :data:`sys.unraisablehook`, and the audit would run on as if no
    Ctrl-C had come. The hook marks such an interrupt as lost, and a watcher
    thread delivers it again to the main thread once the hook has returned
    (raised in the hook, it would be lost again, so the handler defers while
    the hook runs). Only in the main thread and where SIGINT has Python's
    default handler: a program with its own handler keeps it, and a nested use
    changes nothing.
    """
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    lost = False
    done = threading.Event()
    previous_hook = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        nonlocal lost
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            lost = True
        else:
            previous_hook(unraisable)

    def in_hook(frame: Any) -> bool:
        while frame is not None:
            if frame.f_code is hook.__code__:
                return True
            frame = frame.f_back
        return False

    def on_sigint(signum: int, frame: Any) -> None:
        nonlocal lost
        if in_hook(frame):
            lost = True
            return
        raise KeyboardInterrupt

    def watch() -> None:
        nonlocal lost
        while not done.wait(0.05):
            if lost:
                lost = False
                _thread.interrupt_main(signal.SIGINT)

    watcher = threading.Thread(target=watch, name="fairaes-interrupts", daemon=True)
    sys.unraisablehook = hook
    signal.signal(signal.SIGINT, on_sigint)
    watcher.start()
    try:
        yield
    finally:
        # put back what was replaced first: an interrupt from here on is an
        # ordinary KeyboardInterrupt, and must not leave our handler installed
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.unraisablehook = previous_hook
        done.set()
        watcher.join()
