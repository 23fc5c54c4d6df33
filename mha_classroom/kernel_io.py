"""The course's kernels: standard output and error that skip a flush with nothing to send.

ipykernel (7.4) flushes ``sys.stdout`` and ``sys.stderr`` after every message it handles, a control's change
in the page included. Each flush hands two pieces of work to the kernel's IO thread and waits for the
second, even when nothing was written: four thread hand-overs per change that carry nothing.

The course's kernels use ``QuietOutStream`` for both streams instead (ipykernel's own setting
``IPKernelApp.outstream_class``, which ``tools/course.py install`` and ``deploy/start.sh`` write into the
environment's ``etc/ipython/ipython_kernel_config.py``). It is ipykernel's stream, with one difference: a
flush when nothing was written since the last flush returns at once. Whatever was written is flushed as
before, in the same order, before the kernel says it is idle; output from another thread, or from C code
writing to the file descriptor, goes through ``write`` too and so makes the next flush a real one.

Measured with ``python -m benchmarks.loadtest.profile_server`` (300 changes of notebook 03's head count,
four interleaved pairs on two cores): the kernel's CPU per change 2.1-2.3 ms with it, 2.3-2.8 ms without.
"""

from __future__ import annotations

from ipykernel.iostream import OutStream


class QuietOutStream(OutStream):
    """ipykernel's ``OutStream`` whose ``flush`` does nothing when nothing was written since the last one."""

    #: False: every flush goes to the IO thread, as ipykernel's own stream does (``benchmarks/loadtest/ab.sh``).
    skip_clean_flush = True

    def __init__(self, *args, **kwargs):
        self._course_written = True  # before ipykernel's own set-up, which may start writing at once
        super().__init__(*args, **kwargs)

    def write(self, string: str) -> int | None:
        # Marked before the text reaches the buffer: a flush that sees no mark finds nothing of this write.
        self._course_written = True
        return super().write(string)

    def flush(self) -> None:
        if self.skip_clean_flush and not self._course_written:
            return
        self._course_written = False
        super().flush()
