"""The course's kernels: standard output and error that skip a flush with nothing to send.

ipykernel (6.31, and 7.4 alike) flushes ``sys.stdout`` and ``sys.stderr`` after every message it handles, a
control's change in the page included. Each flush hands two pieces of work to the kernel's IO thread and waits for the
second, even when nothing was written: four thread hand-overs per change that carry nothing.

The course's kernels use ``QuietOutStream`` for both streams instead (ipykernel's own setting
``IPKernelApp.outstream_class``, which ``tools/course.py install`` and ``deploy/start.sh`` write into the
environment's ``etc/ipython/ipython_kernel_config.py``). It is ipykernel's stream, with one difference: a
flush when nothing was written since the last flush returns at once. Whatever was written is flushed as
before, in the same order, before the kernel says it is idle; output from another thread, or from C code
writing to the file descriptor, goes through ``write`` too and so makes the next flush a real one.

Measured with ``python -m benchmarks.loadtest.profile_server`` (300 changes of notebook 03's head count,
four interleaved pairs on two cores): the kernel's CPU per change 2.1-2.3 ms with it, 2.3-2.8 ms without.

A control's change is one message to the kernel, and the kernel answers it with two on IOPub: ``busy`` before it
handles the change and ``idle`` after. Each goes through the kernel's IO thread, the learner's server and the
hub's proxy to the page. The page needs only ``idle`` (ipywidgets sends a control's next change once the last one
is idle); ``busy`` is for JupyterLab's kernel indicator, which a change handled in a few milliseconds only makes
flicker. The course's kernels (``IPKernelApp.kernel_class``, the same configuration file) are ipykernel's with
one difference, in ``LateBusySession``: for a widget message (``comm_msg``) the ``busy`` waits. It goes out
after ``busy_after_s`` (half a second) if the kernel is still at it, or at once before anything else the kernel
sends while at it (a figure's update, a reply); if ``idle`` comes first, it never goes. Every other message, a
cell's run included, has its ``busy`` at once, as before.

The course pins ipykernel 6 (``pyproject.toml``): ipykernel 7 hands every message from the shell socket to the
kernel's main thread through a thread of its own, for kernel subshells, which the course does not use; that hand-over
was about 0.45 ms of the kernel's CPU for each change (``benchmarks/loadtest/analysis.md``). Both classes here work
with either.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import time

from ipykernel.iostream import OutStream
from ipykernel.ipkernel import IPythonKernel
from jupyter_client.session import Session


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


#: The messages to the kernel whose ``busy`` waits (``LateBusySession``): a control's change in the page.
LATE_BUSY_TYPES = frozenset({"comm_msg"})


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


class Alarm:
    """A one-shot alarm that one thread sets and another waits on, without waking the one that waits: a Linux
    ``timerfd`` (through ctypes). Setting and clearing it is one system call each; the waiting thread wakes only
    when it goes off. ``Alarm.create()`` is None where there is no ``timerfd`` (macOS, Windows)."""

    CLOCK_MONOTONIC, TFD_CLOEXEC = 1, 0o2000000

    def __init__(self, fd: int, settime):
        self.fd, self._settime = fd, settime

    @classmethod
    def create(cls) -> "Alarm | None":
        if not sys.platform.startswith("linux"):
            return None
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            create, settime = libc.timerfd_create, libc.timerfd_settime
        except (OSError, AttributeError):
            return None
        create.argtypes, create.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
        settime.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(_Itimerspec), ctypes.c_void_p]
        settime.restype = ctypes.c_int
        fd = create(cls.CLOCK_MONOTONIC, cls.TFD_CLOEXEC)
        return cls(fd, settime) if fd >= 0 else None

    def set(self, seconds: float) -> None:
        """Go off once, ``seconds`` from now (at once for 0 or less), in place of any earlier setting."""
        nanos = max(1, round(seconds * 1e9))  # a zero time would disarm the timer instead
        self._arm(nanos // 1_000_000_000, nanos % 1_000_000_000)

    def clear(self) -> None:
        """Never go off (until set again); an expiry not yet waited for is dropped."""
        self._arm(0, 0)

    def _arm(self, whole: int, nanos: int) -> None:
        spec = _Itimerspec(_Timespec(0, 0), _Timespec(whole, nanos))
        if self._settime(self.fd, 0, ctypes.byref(spec), None) != 0:
            raise OSError(ctypes.get_errno(), "timerfd_settime failed")

    def wait(self) -> None:
        """Until the alarm goes off (at once if it went off since it was last set)."""
        os.read(self.fd, 8)


class LateBusySession(Session):
    """jupyter_client's ``Session`` whose ``send`` holds back a widget message's ``busy`` status.

    Made with ``beside(session)``: a copy of the kernel's session (key, signature scheme, session id) that draws
    its message ids from the original, so the two never give one id twice. The held ``busy`` goes out:

    - before any other message this session sends (in the order the kernel sent them);
    - after ``busy_after_s`` seconds, from a watcher thread, if the kernel is still handling the message;
    - never, if the kernel says ``idle`` for the message first.

    The watcher sleeps on an ``Alarm`` set when a ``busy`` is held and cleared when it goes or is dropped, so a
    quick change never wakes it (a woken thread costs the kernel as much CPU as the ``busy`` would have); where
    there is no ``Alarm``, it is woken by an event at each held ``busy`` and sleeps until that one is due.
    """

    #: False: every ``busy`` goes out at once, as ipykernel's own session does (``benchmarks/loadtest/ab.sh``).
    hold_busy = True
    #: False: the watcher is woken by an event at each held ``busy``, as where there is no ``Alarm`` (ab.sh).
    use_alarm = True
    #: How long a widget message may run before the page is told the kernel is busy with it.
    busy_after_s = 0.5
    #: The session this one sends beside (``beside``); None: a plain ``Session``.
    _origin = None

    @classmethod
    def beside(cls, session: Session) -> "LateBusySession":
        new = cls()
        for name in session.traits():  # as Session.clone does
            setattr(new, name, getattr(session, name))
        new._origin = session
        new._lock = threading.Lock()
        new._held = None  # (the message's id, when its busy is due, the busy's send arguments)
        new._alarm = Alarm.create() if cls.use_alarm else None
        new._due = threading.Event() if new._alarm is None else None  # where there is no alarm: the watcher's wake-up
        new._watcher = None
        new.watcher_wakes = 0  # how often the watcher woke (tests: a quick change does not wake it)
        return new

    @property
    def msg_id(self) -> str:
        return super().msg_id if self._origin is None else self._origin.msg_id

    def send(self, stream, msg_or_type, content=None, parent=None, ident=None, buffers=None, track=False,
             header=None, metadata=None):
        call = (stream, msg_or_type, content, parent, ident, buffers, track, header, metadata)
        if not self.hold_busy or self._origin is None:
            return super().send(*call)
        with self._lock:
            held, self._held = self._held, None
            if held is not None and self._alarm is not None:
                self._alarm.clear()
            if msg_or_type == "status" and isinstance(content, dict) and isinstance(parent, dict):
                state, asked = content.get("execution_state"), parent.get("header") or {}
                if state == "idle" and held is not None and held[0] == asked.get("msg_id"):
                    return super().send(*call)  # handled before its busy was due: the busy never goes
                if state == "busy" and asked.get("msg_type") in LATE_BUSY_TYPES:
                    if held is not None:
                        super().send(*held[2])
                        held = None
                    self._held = (asked.get("msg_id"), time.monotonic() + self.busy_after_s, call)
                    try:
                        self._start_watch()
                        return None
                    except OSError:  # the alarm could not be set (not expected): the busy goes at once
                        self._held = None
            if held is not None:
                super().send(*held[2])
            return super().send(*call)

    def _start_watch(self) -> None:
        if self._watcher is None:
            self._watcher = threading.Thread(target=self._watch, name="course-late-busy", daemon=True)
            self._watcher.start()
        if self._alarm is not None:
            self._alarm.set(self.busy_after_s)
        else:
            self._due.set()

    def _send_if_due(self) -> float:
        """Sends the held ``busy`` if it is due; else how long until it is (0: nothing held)."""
        with self._lock:
            if self._held is None:
                return 0.0
            wait = self._held[1] - time.monotonic()
            if wait > 0:
                return wait
            held, self._held = self._held, None
            Session.send(self, *held[2])
            return 0.0

    def _watch(self) -> None:
        """Sends a held ``busy`` once it is due; sleeps until the next is held."""
        while True:
            if self._alarm is not None:
                self._alarm.wait()  # set for the busy held now: it is due (or already gone, or held again)
                self.watcher_wakes += 1
                if (wait := self._send_if_due()) > 0:  # held again meanwhile, and set again: not expected
                    self._alarm.set(wait)
                continue
            self._due.wait()
            self._due.clear()
            self.watcher_wakes += 1
            while (wait := self._send_if_due()) > 0:
                time.sleep(wait)


class CourseKernel(IPythonKernel):
    """ipykernel's Python kernel, sending with a ``LateBusySession`` beside the app's session."""

    def __init__(self, **kwargs):
        if kwargs.get("session") is not None:
            kwargs["session"] = LateBusySession.beside(kwargs["session"])
        super().__init__(**kwargs)
