"""Two kernels for ``contextecho paper``: notebooks that only read the cache run beside the others.

A notebook whose every answer is in the call cache is Python reading answers and computing
statistics and figures: one core's work, while the machine's other core idles (a warm run after
a change to the library executes all fourteen notebooks in turn). So ``contextecho paper`` runs
two lanes. The first takes the notebooks in order, from the front, in the kernel that computes
model calls. The second takes, from the back, only notebooks whose last run asked no model
(:func:`~contextecho.notebooks.freshness.asked_no_model`), in a kernel of its own where only the
cache may answer (:data:`~contextecho.engine.calls.CACHE_ONLY_ENV`). A notebook there that does
ask a model this time (its requests changed with the code) stops at that round, before anything
is called (:class:`~contextecho.engine.calls.UncachedCall`), and is handed back (:class:`HandBack`)
to the first lane, which runs it whole. So model calls are computed in one kernel only, as before:
a cold run has no second lane, and the embedded model never competes with itself for the cores.

The notebooks do not read each other's outputs; each lane writes its own notebook's folder.
On the console (:class:`Console`) the first lane's notebooks print as they run; the second
lane's, which only read, print each as one block when it ends, on lines of their own.
"""
from __future__ import annotations

import threading
from collections import deque
from typing import Callable, Sequence, TextIO


class Console:
    """This process's two streams written by two lanes at once: :meth:`live` streams pass what
    a running notebook prints through as it comes; :meth:`block` writes whole lines at once,
    starting on a line of their own (after a live stream's unfinished line, a new one)."""

    def __init__(self, out: TextIO, err: TextIO):
        self.out, self.err = out, err
        self._lock = threading.Lock()
        self._line_open = False  # the last live write left its line unfinished

    def block(self, text: str) -> None:
        with self._lock:
            self.out.write(("\n" if self._line_open else "") + text.rstrip("\n") + "\n")
            self.out.flush()
            self._line_open = False

    def live(self) -> tuple["_Live", "_Live"]:
        """Streams for a running notebook's stdout and stderr (papermill's ``stdout_file``, ``stderr_file``)."""
        return _Live(self, self.out), _Live(self, self.err)

    def write(self, stream: TextIO, text: str) -> None:
        """Write ``text`` to ``stream`` (one of this console's) as a running notebook printed it."""
        if not text:
            return
        with self._lock:
            stream.write(text)
            stream.flush()
            self._line_open = not text.endswith("\n")


class _Live:
    def __init__(self, console: Console, stream: TextIO):
        self.console, self.stream = console, stream

    def write(self, text: str) -> None:
        self.console.write(self.stream, text)

    def flush(self) -> None:
        pass


class HandBack(Exception):
    """Raised by the second lane's run of a notebook that must call a model: the first lane runs it."""


def handed_back(exc: BaseException) -> str | None:
    """Why a notebook whose run in the second kernel raised ``exc`` goes to the first kernel: it
    asks a model this time (a cell raised :class:`~contextecho.engine.calls.UncachedCall`), or the
    kernel died; None where the failure is the notebook's own, as the first kernel would raise it."""
    from nbclient.exceptions import DeadKernelError
    from papermill import PapermillExecutionError

    from ..engine.calls import UncachedCall

    if isinstance(exc, PapermillExecutionError) and exc.ename == UncachedCall.__name__:
        return f"asks a model this time ({exc.evalue})"
    if isinstance(exc, DeadKernelError):
        return f"lost the second kernel ({exc})"
    return None


def run_lanes(names: Sequence[str], first: Callable[[str], None], second: Callable[[str], None],
              may_go_second: Callable[[str], bool]) -> None:
    """Run every notebook of ``names`` once: ``first(name)`` in this thread, taking them in order
    from the front; ``second(name)`` in a thread of its own, taking from the back those that
    ``may_go_second`` (none: no thread). A notebook ``second`` hands back (:class:`HandBack`) is
    the first lane's to run. The first failure in either lane (anything else raised, Ctrl-C too)
    stops both from taking another notebook; it is raised here once the second lane's current
    notebook has ended (at once on Ctrl-C)."""
    queue = deque(names)
    beside = {name for name in names if may_go_second(name)}
    done = threading.Condition()
    busy = [False]  # the second lane is running a notebook (which it may hand back)
    failures: list[BaseException] = []

    def take_first() -> str | None:
        with done:
            while not failures:
                if queue:
                    return queue.popleft()
                if not busy[0]:
                    return None
                done.wait()  # the second lane may hand its notebook back
            return None

    def take_second() -> str | None:
        with done:
            chosen = next((name for name in reversed(queue) if name in beside), None) if not failures else None
            if chosen is not None:
                queue.remove(chosen)
                busy[0] = True
            return chosen

    def second_lane() -> None:
        while (name := take_second()) is not None:
            given_back = False
            try:
                second(name)
            except HandBack:
                given_back = True
            except BaseException as exc:  # the run's failure, raised by the first lane's thread
                with done:
                    failures.append(exc)
            finally:
                with done:
                    if given_back:
                        beside.discard(name)
                        queue.appendleft(name)
                    busy[0] = False
                    done.notify_all()

    thread = threading.Thread(target=second_lane, name="notebooks-beside", daemon=True) if beside else None
    if thread is not None:
        thread.start()
    try:
        while (name := take_first()) is not None:
            first(name)
    except BaseException as exc:
        with done:
            failures.append(exc)
            done.notify_all()
        if isinstance(exc, KeyboardInterrupt):
            raise
    if thread is not None:
        thread.join()
    if failures:
        raise failures[0]
