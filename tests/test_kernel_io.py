"""The course's kernel output streams (``mha_classroom/kernel_io.py``), in a real kernel, and how an environment
gets them (``tools/course.py``'s ``install_kernel_config``)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import course  # noqa: E402
from kernel_run import run_in_kernel  # noqa: E402

#: The stream class the course's kernel setting names.
STREAM = re.search(r'outstream_class = "([\w.]+)"', course.KERNEL_CONFIG_LINE).group(1)


@pytest.fixture(scope="module")
def kernel():
    from jupyter_client.manager import KernelManager

    km = KernelManager(kernel_name="python3")
    # Without pytest's marker: ipykernel does not capture the file descriptors under pytest.
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    km.start_kernel(extra_arguments=[f"--IPKernelApp.outstream_class={STREAM}"], env=env)
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
    assert course.KERNEL_CONFIG_LINE in target.read_text().splitlines()
    course.install_kernel_config(tmp_path)
    assert target.read_text().count(course.KERNEL_CONFIG_LINE) == 1
    target.write_text("c.InteractiveShell.colors = 'nocolor'")  # an environment's own setting stays
    course.install_kernel_config(tmp_path)
    lines = target.read_text().splitlines()
    assert lines[0] == "c.InteractiveShell.colors = 'nocolor'" and course.KERNEL_CONFIG_LINE in lines


def test_every_route_to_an_environment_writes_the_setting(tmp_path, monkeypatch):
    assert "install_kernel_config(prefix)" in Path(course.__file__).read_text()  # tools/course.py install and env
    # An environment installed before the setting existed, and up to date: make lab and make test still write it.
    course.stamp_path(tmp_path).touch()
    monkeypatch.setattr(course.sys, "prefix", str(tmp_path))
    assert course.course_python() == sys.executable
    assert course.KERNEL_CONFIG_LINE in tmp_path.joinpath(*course.KERNEL_CONFIG_PARTS).read_text().splitlines()
    start = (ROOT / "deploy" / "start.sh").read_text()
    assert "course.install_kernel_config(sys.prefix)" in start  # the hub's environment
