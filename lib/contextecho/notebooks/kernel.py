"""One kernel that executes several notebooks in turn (``contextecho paper``).

A fresh kernel per notebook spends most of a warm ``make paper`` importing the same
libraries again (pandas, scipy, seaborn, LiteLLM: about 7 s a kernel). A
:class:`SharedKernel` is started once; before each notebook after the first its namespace
is reset as a new kernel's is (:data:`RESET`: every name the previous notebook defined
removed, the input history a new session, execution counts from 1, open figures closed,
warnings shown again), while the modules it imported, and the embedded model with its
kept prefix states, stay loaded. A kernel that died is replaced by a new one.

Papermill executes each notebook as it always does (parameters injected, cells run and
recorded, the executed copy written), through the engine :data:`ENGINE` registered here,
which hands papermill's notebook client this kernel instead of starting its own. A
reviewer's ``papermill notebooks/X.ipynb out.ipynb`` is unchanged: it starts its own kernel.
"""
from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Mapping, Sequence

from jupyter_client.client import KernelClient
from jupyter_client.manager import KernelManager
from jupyter_core.paths import jupyter_runtime_dir
from papermill.clientwrap import PapermillNotebookClient
from papermill.engines import NBClientEngine, NotebookExecutionManager, papermill_engines
from papermill.utils import merge_kwargs, remove_args
from traitlets.config import Config

#: The engine name papermill is given to run a notebook in a :class:`SharedKernel`.
ENGINE = "contextecho-shared-kernel"


def kernel_config() -> Config:
    """The configuration of a new kernel: it talks to papermill over local IPC sockets, not TCP
    on loopback (nothing else on the machine can connect, and ipykernel's warning about
    unencrypted TCP stays off the console), at an absolute path of its own in Jupyter's runtime
    folder. Left to jupyter_client, the sockets are ``kernel-ipc-1`` to ``-5`` in the working
    folder, numbered by the files that exist yet: two kernels started at once there (two test
    workers, a run beside a JupyterLab) took the same five and read each other's messages
    ("Invalid Signature", then "Kernel didn't respond in 60 seconds"); and a relative path names
    a file in each process's own folder, where a :class:`SharedKernel` runs in the repository
    and this process anywhere. Twelve hex digits name it: a socket's path has 104 bytes at most
    on macOS, and the runtime folder is under the user's home there."""
    runtime = Path(jupyter_runtime_dir())
    runtime.mkdir(parents=True, exist_ok=True)
    return Config({"KernelManager": {"transport": "ipc",
                                     "ip": str(runtime / f"contextecho-{uuid.uuid4().hex[:12]}-ipc")}})

#: Seconds the kernel may take to start, import its preload, or reset.
STARTUP_S = 120

#: Run silently in the kernel before each notebook after the first: what a new kernel would
#: not hold. ``reset(new_session=True)`` clears the user namespace and the output cache, starts
#: a new history session (what ``bind`` reads) and sets the execution count back to 1.
RESET = """\
def _contextecho_reset():
    import sys, warnings
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        pyplot.close("all")
    getattr(warnings, "_filters_mutated", lambda: None)()
    get_ipython().reset(new_session=True)
_contextecho_reset()
"""


#: Seconds between two writes of the executed copy while a notebook runs in the shared kernel.
SAVE_EVERY_S = 10.0


class SparseSaves(NotebookExecutionManager):
    """Papermill's execution manager, writing the executed copy at most every
    :data:`SAVE_EVERY_S` seconds while cells run instead of before and after every cell (a
    warm ``make paper`` spent a tenth of its time serialising notebooks), and always when the
    notebook completes or fails (papermill's final save, and the copy it writes on an error)."""

    in_cell_step = False  # inside cell_start or cell_complete, whose saves may be skipped

    def cell_start(self, cell, cell_index=None, **kwargs):
        self.in_cell_step = True
        try:
            super().cell_start(cell, cell_index, **kwargs)
        finally:
            self.in_cell_step = False

    def cell_complete(self, cell, cell_index=None, **kwargs):
        self.in_cell_step = True
        try:
            super().cell_complete(cell, cell_index, **kwargs)
        finally:
            self.in_cell_step = False

    def save(self, **kwargs):
        if self.in_cell_step and (self.now() - self.last_save_time).total_seconds() < SAVE_EVERY_S:
            return
        super().save(**kwargs)


class SharedKernelEngine(NBClientEngine):
    """Papermill's nbclient engine with the kernel manager passed in (``km=``): the kernel is
    neither started nor shut down per notebook, the notebook's client is closed after it, and
    the executed copy is written sparsely while cells run (:class:`SparseSaves`)."""

    @classmethod
    def execute_notebook(cls, nb, kernel_name, output_path=None, progress_bar=True, log_output=False,
                         autosave_cell_every=30, **kwargs):
        """Papermill's :meth:`Engine.execute_notebook` with :class:`SparseSaves` as the manager."""
        nb_man = SparseSaves(nb, output_path=output_path, progress_bar=progress_bar, log_output=log_output,
                             autosave_cell_every=autosave_cell_every)
        nb_man.notebook_start()
        try:
            cls.execute_managed_notebook(nb_man, kernel_name, log_output=log_output, **kwargs)
        finally:
            nb_man.cleanup_pbar()
            nb_man.notebook_complete()
        return nb_man.nb

    @classmethod
    def execute_managed_notebook(cls, nb_man, kernel_name, log_output=False, stdout_file=None,
                                 stderr_file=None, start_timeout=60, execution_timeout=None, **kwargs):
        kwargs = remove_args(["input_path", "timeout", "startup_timeout"], **kwargs)
        client = PapermillNotebookClient(nb_man, **merge_kwargs(
            kwargs, timeout=execution_timeout, startup_timeout=start_timeout, kernel_name=kernel_name,
            log_output=log_output, stdout_file=stdout_file, stderr_file=stderr_file))
        try:
            return client.execute()
        finally:
            if client.kc is not None:
                client.kc.stop_channels()


papermill_engines.register(ENGINE, SharedKernelEngine)


class SharedKernel:
    """A kernel started once (in ``cwd``, with ``env`` added to this process's environment)
    for several notebooks: :meth:`ready` before each one returns its manager, reset as a new
    kernel (:data:`RESET`), or a new kernel where the last one died. A context manager that
    shuts the kernel down on leaving.

    ``preload``: modules the kernel imports as soon as it starts (:meth:`start`), while this
    process goes on with its own work (the two cores import side by side); the first
    :meth:`ready` waits for them, and the kernel is reset before the first notebook, which
    finds them loaded and no name they bound (a module that failed to import fails again in
    the notebook's own cell, with its traceback in the executed copy)."""

    def __init__(self, cwd: Path, env: Mapping[str, str] | None = None, kernel_name: str = "python3",
                 preload: Sequence[str] = ()):
        self.cwd, self.env, self.kernel_name = Path(cwd), dict(env or {}), kernel_name
        self.preload = tuple(preload)
        self.km: KernelManager | None = None
        self.used = False  # the current kernel ran something since it started or was reset
        self.started = 0  # kernels started
        self._pending: tuple[KernelClient, str] | None = None  # (client, message id) of the preload

    def __enter__(self) -> "SharedKernel":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        """Start the kernel now (and send it the preload, without waiting for it)."""
        self.close()
        self.km = KernelManager(kernel_name=self.kernel_name, config=kernel_config())
        self.km.start_kernel(cwd=str(self.cwd), env={**os.environ, **self.env})
        self.started += 1
        self.used = False
        if self.preload:
            client = self.km.client()
            client.start_channels()
            # Then what the imports built moves to the collector's permanent generation
            # (gc.freeze): each reset's full collection (IPython's reset runs one) walks only
            # what notebooks made since, not every module's objects again (0.2 s a reset).
            code = ("import gc, importlib\ntry:\n"
                    + "".join(f"    importlib.import_module({m!r})\n" for m in self.preload)
                    + "finally:\n    gc.freeze()\n")
            self._pending = (client, client.execute(code, silent=True, store_history=False))
            self.used = True

    def ready(self) -> KernelManager:
        """The kernel manager for the next notebook: a live kernel with a namespace as new."""
        if self.km is None or not self.km.is_alive():
            self.start()
        if self._pending is not None:  # wait for the preload; one that failed is the notebook's to
            client, _ = self._pending  # report (its first cell imports the same, with the traceback)
            self._pending = None
            try:
                client.get_shell_msg(timeout=STARTUP_S)
            finally:
                client.stop_channels()
        if self.used:
            self._reset()
        self.used = True
        return self.km

    def _reset(self) -> None:
        """Run :data:`RESET` in the kernel (silently: no output, no history, no count)."""
        client = self.km.client()
        client.start_channels()
        try:
            client.wait_for_ready(timeout=STARTUP_S)
            reply = client.execute_interactive(RESET, silent=True, store_history=False, timeout=STARTUP_S)
        finally:
            client.stop_channels()
        content = reply["content"]
        if content.get("status") != "ok":
            raise RuntimeError(f"resetting the shared kernel failed: {content.get('ename')}: {content.get('evalue')}")

    def close(self) -> None:
        if self._pending is not None:
            self._pending[0].stop_channels()
            self._pending = None
        if self.km is not None:
            if self.km.has_kernel:
                self.km.shutdown_kernel(now=True)
            self.km = None
