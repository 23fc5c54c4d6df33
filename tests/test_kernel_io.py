"""The course's kernels (``mha_classroom/kernel_io.py``): their output streams and their late ``busy`` for a
control's change, in a real kernel and on their own, and how an environment gets them (``tools/course.py``'s
``install_kernel_config``)."""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import course  # noqa: E402
from kernel_run import run_in_kernel  # noqa: E402

#: The stream and kernel classes the course's kernel settings name.
SETTINGS = dict(re.search(r'IPKernelApp\.(\w+) = "([\w.]+)"', line).groups() for line in course.KERNEL_CONFIG_LINES)
STREAM, KERNEL = SETTINGS["outstream_class"], SETTINGS["kernel_class"]


@pytest.fixture(scope="module")
def kernel():
    from jupyter_client.manager import KernelManager

    km = KernelManager(kernel_name="python3")
    # Without pytest's marker: ipykernel does not capture the file descriptors under pytest.
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    env["JUPYTER_WIDGETS_ECHO"] = "0"  # as the class's servers start kernels: a change is not echoed back
    km.start_kernel(extra_arguments=[f"--IPKernelApp.outstream_class={STREAM}", f"--IPKernelApp.kernel_class={KERNEL}"],
                    env=env)
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        yield kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def run(kc, code: str, timeout: float = 60) -> list[tuple[str, str]]:
    out = run_in_kernel(kc, code, timeout)
    assert not [text for name, text in out if name == "error"], f"the kernel raised: {out}"
    return out


#: In the kernel: how many pieces of work three flushes with nothing written hand to the IO thread, and how many
#: one flush after a write does (counted at the thread's public ``schedule``).
COUNT_HANDOVERS = """
import sys
_thread, _calls = sys.stdout.pub_thread, []
_schedule = _thread.schedule
_thread.schedule = lambda f: (_calls.append(f), _schedule(f))[1]
sys.stdout.flush(); sys.stdout.flush(); sys.stderr.flush()
_clean = len(_calls)
sys.stdout.write("x\\n")
_before = len(_calls)
sys.stdout.flush()
_written = len(_calls) - _before
del _thread.schedule
print(type(sys.stdout).__name__, type(sys.stderr).__name__, _clean, _written)
"""


def test_a_flush_with_nothing_written_hands_nothing_to_the_io_thread(kernel):
    (_, x), (_, line) = run(kernel, COUNT_HANDOVERS)
    assert x == "x\n"
    cls_out, cls_err, clean, written = line.split()
    assert cls_out == cls_err == STREAM.rsplit(".", 1)[1]
    assert int(clean) == 0
    assert int(written) >= 1  # what was written is flushed through the IO thread, as before


def test_the_count_sees_ipykernels_own_flushes(kernel):
    """The same count with the stream behaving as ipykernel's (``skip_clean_flush = False``): each flush hands
    work over, so the test above would see it."""
    try:
        run(kernel, "type(sys.stdout).skip_clean_flush = False")
        line = run(kernel, COUNT_HANDOVERS)[-1][1]
    finally:
        run(kernel, "type(sys.stdout).skip_clean_flush = True")
    assert int(line.split()[2]) >= 3


def test_every_output_arrives_before_idle_in_order(kernel):
    code = ("import os, sys, threading\n"
            "print('one')\n"
            "sys.stderr.write('two\\n')\n"
            "t = threading.Thread(target=lambda: print('three')); t.start(); t.join()\n"
            "print('four', end='')\n")
    out = run(kernel, code)
    assert "".join(text for name, text in out if name == "stdout") == "one\nthree\nfour"
    assert "".join(text for name, text in out if name == "stderr") == "two\n"
    # Nothing is held back for the next message: the next execution starts with nothing of this one's.
    assert run(kernel, "print('five')") == [("stdout", "five\n")]


def test_output_written_to_the_file_descriptor_arrives(kernel):
    out = run(kernel, "import os, time\nos.write(1, b'from C\\n')\ntime.sleep(0.5)")
    out += run(kernel, "pass")  # the pipe's watcher may pass it on just after the first idle, as with ipykernel's stream
    assert "".join(text for name, text in out if name == "stdout") == "from C\n"


def test_the_setting_is_written_into_an_environment_once_beside_what_it_holds(tmp_path):
    old_umask = os.umask(0o077)  # a root shell's strict umask: the learners' kernels must still read it
    try:
        target = course.install_kernel_config(tmp_path)
    finally:
        os.umask(old_umask)
    assert all(p.stat().st_mode & 0o005 == 0o005 for p in (tmp_path / "etc", tmp_path / "etc" / "ipython"))
    assert target.stat().st_mode & 0o004
    assert target == tmp_path / "etc" / "ipython" / "ipython_kernel_config.py"
    assert set(course.KERNEL_CONFIG_LINES) <= set(target.read_text().splitlines())
    course.install_kernel_config(tmp_path)
    assert all(target.read_text().count(line) == 1 for line in course.KERNEL_CONFIG_LINES)
    target.write_text("c.InteractiveShell.colors = 'nocolor'\n" + course.KERNEL_CONFIG_LINES[0])  # an older setting
    course.install_kernel_config(tmp_path)
    lines = target.read_text().splitlines()
    assert lines[0] == "c.InteractiveShell.colors = 'nocolor'"  # an environment's own setting stays
    assert all(lines.count(line) == 1 for line in course.KERNEL_CONFIG_LINES)  # only the missing line added


def test_every_route_to_an_environment_writes_the_setting(tmp_path, monkeypatch):
    assert "install_kernel_config(prefix)" in Path(course.__file__).read_text()  # tools/course.py install and env
    # An environment installed before the setting existed, and up to date: make lab and make test still write it.
    course.stamp_path(tmp_path).touch()
    monkeypatch.setattr(course.sys, "prefix", str(tmp_path))
    assert course.course_python() == sys.executable
    assert set(course.KERNEL_CONFIG_LINES) <= set(tmp_path.joinpath(*course.KERNEL_CONFIG_PARTS).read_text().splitlines())
    start = (ROOT / "deploy" / "start.sh").read_text()
    assert "course.install_kernel_config(sys.prefix)" in start  # the hub's environment


# --------------------------------------------------------------------------- a control's change: busy only when slow


#: In the kernel: three sliders. Moving ``quick`` does nothing more; moving ``slow`` takes two seconds; moving
#: ``echo`` sets ``quick``, so the kernel sends the page an update of it (as a figure's change does).
SLIDERS = """
import time
import ipywidgets as widgets
quick, slow, echo = widgets.IntSlider(), widgets.IntSlider(), widgets.IntSlider()
slow.observe(lambda change: time.sleep(2.0), "value")
echo.observe(lambda change: setattr(quick, "value", change["new"]), "value")
print(quick.model_id, slow.model_id, echo.model_id)
"""


@pytest.fixture(scope="module")
def sliders(kernel):
    out = run(kernel, SLIDERS)
    quick, slow, echo = out[-1][1].split()
    return {"quick": quick, "slow": slow, "echo": echo}


def move(kc, comm_id: str, value: int, timeout: float = 30) -> list[tuple[float, str, str]]:
    """A control moved as the page does; every IOPub message answering it up to its idle, each as (seconds after
    the move was sent, type, execution state or the comm message's method)."""
    msg = kc.session.msg("comm_msg", {"comm_id": comm_id, "data": {"method": "update", "state": {"value": value},
                                                                    "buffer_paths": []}})
    start = time.monotonic()
    kc.shell_channel.send(msg)
    got = []
    while True:
        reply = kc.get_iopub_msg(timeout=timeout)
        if reply["parent_header"].get("msg_id") != msg["header"]["msg_id"]:
            continue
        content = reply["content"]
        got.append((time.monotonic() - start, reply["msg_type"],
                    content.get("execution_state") or content.get("data", {}).get("method", "")))
        if reply["msg_type"] == "status" and content["execution_state"] == "idle":
            return got


def test_a_quick_change_is_answered_with_idle_alone(kernel, sliders):
    answers = [move(kernel, sliders["quick"], value) for value in range(1, 6)]
    alone = [a for a in answers if [kind for _, *kind in a] == [["status", "idle"]]]
    # A busy only if the machine held the kernel up for half a second (a loaded test machine), never at once.
    late = [a for a in answers if a not in alone]
    assert all([kind for _, *kind in a] == [["status", "busy"], ["status", "idle"]] and a[0][0] >= 0.45 for a in late)
    assert len(alone) >= 3, answers
    assert run(kernel, "print(quick.value)") == [("stdout", "5\n")]  # the kernel took every change


def test_a_slow_change_says_busy_once_half_a_second_has_passed(kernel, sliders):
    got = move(kernel, sliders["slow"], 7)
    assert [kind for _, *kind in got] == [["status", "busy"], ["status", "idle"]]
    (busy_at, *_), (idle_at, *_) = got
    # The busy came once half a second had passed, while the two-second callback still ran (the margin is for a
    # loaded machine, where the watcher thread may wake late).
    assert 0.45 <= busy_at < 1.9 and idle_at >= 1.95


def test_anything_the_kernel_sends_for_a_change_comes_after_its_busy(kernel, sliders):
    got = move(kernel, sliders["echo"], 3)
    assert [kind for _, *kind in got] == [["status", "busy"], ["comm_msg", "update"], ["status", "idle"]]


def test_a_cell_still_says_busy_first(kernel, sliders):
    msg_id = kernel.execute("quick.value")
    first = kernel.get_iopub_msg(timeout=30)
    while first["parent_header"].get("msg_id") != msg_id:
        first = kernel.get_iopub_msg(timeout=30)
    assert (first["msg_type"], first["content"].get("execution_state")) == ("status", "busy")
    while not (first["msg_type"] == "status" and first["content"]["execution_state"] == "idle"
               and first["parent_header"].get("msg_id") == msg_id):
        first = kernel.get_iopub_msg(timeout=30)


def test_ipykernels_own_busy_when_held_back_is_off(kernel, sliders):
    """The same quick change with the session behaving as ipykernel's (``hold_busy = False``): busy, then idle,
    so the first test above would see a busy sent at once."""
    try:
        run(kernel, "from mha_classroom.kernel_io import LateBusySession\nLateBusySession.hold_busy = False")
        assert [kind for _, *kind in move(kernel, sliders["quick"], 9)] == [["status", "busy"], ["status", "idle"]]
    finally:
        run(kernel, "LateBusySession.hold_busy = True")


def test_the_kernel_and_its_streams_never_give_one_message_id_twice(kernel, sliders):
    msg_id = kernel.execute("for k in range(3):\n    print(k, flush=True)\n    quick.value = 100 + k")
    ids = []
    while True:
        msg = kernel.get_iopub_msg(timeout=30)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        ids.append((msg["msg_type"], msg["header"]["msg_id"]))
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    kinds = {kind for kind, _ in ids}
    assert {"stream", "comm_msg", "status"} <= kinds  # the app's session (streams) and the kernel's (the rest)
    assert len({i for _, i in ids}) == len(ids)


class Recorder:
    """A socket the session sends on: keeps the type and state of each message, with the time."""

    def __init__(self, session):
        self.session, self.sent, self.lock = session, [], threading.Lock()

    def send_multipart(self, parts, copy=True, **kwargs):
        _, msg = self.session.feed_identities(parts)
        msg = self.session.deserialize(msg)
        with self.lock:
            self.sent.append((msg["msg_type"], msg["content"].get("execution_state"),
                              msg["parent_header"].get("msg_id")))


@pytest.fixture
def late():
    from jupyter_client.session import Session

    from mha_classroom.kernel_io import LateBusySession

    origin = Session(key=b"a-key")
    session = LateBusySession.beside(origin)
    assert session.key == origin.key and session.session == origin.session
    return session, Recorder(origin)


def status(session, sock, state, parent):
    session.send(sock, "status", {"execution_state": state}, parent=parent)


def test_the_session_holds_a_widget_messages_busy_and_drops_it_at_idle(late):
    session, sock = late
    change, cell = session.msg("comm_msg", {}), session.msg("execute_request", {})
    status(session, sock, "busy", change)
    assert sock.sent == []
    status(session, sock, "idle", change)
    status(session, sock, "busy", cell)
    status(session, sock, "idle", cell)
    assert sock.sent == [("status", "idle", change["header"]["msg_id"]), ("status", "busy", cell["header"]["msg_id"]),
                         ("status", "idle", cell["header"]["msg_id"])]


def test_the_session_sends_a_held_busy_before_the_next_message_or_when_due(late):
    session, sock = late
    first, second = session.msg("comm_msg", {}), session.msg("comm_msg", {})
    status(session, sock, "busy", first)
    session.send(sock, "comm_msg", {"comm_id": "x", "data": {}}, parent=first)
    status(session, sock, "idle", first)
    assert [s[:2] for s in sock.sent] == [("status", "busy"), ("comm_msg", None), ("status", "idle")]
    session.busy_after_s = 0.2
    status(session, sock, "busy", second)
    deadline = time.monotonic() + 10
    while len(sock.sent) < 4 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert sock.sent[3] == ("status", "busy", second["header"]["msg_id"])
    status(session, sock, "idle", second)
    assert sock.sent[4:] == [("status", "idle", second["header"]["msg_id"])]


def test_a_session_beside_another_never_gives_an_id_the_other_gives():
    from jupyter_client.session import Session

    from mha_classroom.kernel_io import LateBusySession

    origin = Session(key=b"a-key")
    beside = LateBusySession.beside(origin)
    ids = [s.msg_id for s in (origin, beside, origin, beside, beside)]
    assert len(set(ids)) == len(ids)  # one counter for both; ipykernel's streams send with the original


def test_a_quick_change_does_not_wake_the_watcher_on_linux(kernel, sliders):
    """The watcher sleeps on an ``Alarm`` (a timerfd) that a held busy sets and its idle clears: five quick
    changes wake it at most as often as one went past half a second (a loaded machine), not once each."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the alarm is Linux's timerfd; elsewhere the watcher is woken by an event")
    count = "print(type(get_ipython().kernel.session._alarm).__name__, get_ipython().kernel.session.watcher_wakes)"
    kind, before = run(kernel, count)[0][1].split()
    answers = [move(kernel, sliders["quick"], value) for value in range(11, 16)]
    late = sum(1 for a in answers if a[0][1:] == ("status", "busy"))
    after = int(run(kernel, count)[0][1].split()[1])
    assert kind == "Alarm"
    assert after - int(before) <= late, (before, after, answers)


def test_the_alarm_goes_off_once_when_set_and_never_when_cleared():
    from mha_classroom.kernel_io import Alarm

    alarm = Alarm.create()
    if alarm is None:
        pytest.skip("no timerfd here")
    import select

    alarm.set(0.05)
    start = time.monotonic()
    alarm.wait()
    assert 0.045 <= time.monotonic() - start < 5
    alarm.set(0.05)
    alarm.clear()
    assert select.select([alarm.fd], [], [], 0.2)[0] == []  # cleared: it never goes off
    alarm.set(0.05)
    alarm.set(0.3)  # set again: only the later one counts
    assert select.select([alarm.fd], [], [], 0.15)[0] == []
    alarm.wait()
    for soon in (0, 1e-12):  # no time left (a busy due now): it goes off at once, it is not disarmed
        alarm.set(soon)
        assert select.select([alarm.fd], [], [], 1)[0] == [alarm.fd], soon
        alarm.wait()
    os.close(alarm.fd)


def test_without_an_alarm_the_watcher_still_sends_a_held_busy_when_due(monkeypatch):
    """macOS and Windows have no timerfd: the watcher is woken by an event at each held busy instead."""
    from jupyter_client.session import Session

    from mha_classroom.kernel_io import Alarm, LateBusySession

    monkeypatch.setattr(Alarm, "create", classmethod(lambda cls: None))  # as where there is no timerfd
    origin = Session(key=b"a-key")
    session, sock = LateBusySession.beside(origin), Recorder(origin)
    session.busy_after_s = 0.2
    change = session.msg("comm_msg", {})
    status(session, sock, "busy", change)
    deadline = time.monotonic() + 10
    while not sock.sent and time.monotonic() < deadline:
        time.sleep(0.02)
    assert sock.sent == [("status", "busy", change["header"]["msg_id"])]
    status(session, sock, "idle", change)
    assert sock.sent[1:] == [("status", "idle", change["header"]["msg_id"])]
