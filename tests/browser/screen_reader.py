"""A real screen reader for the browser tests: GNOME Orca reading Chromium under Xvfb, its speech as text.

    with ScreenReader(tmp) as sr:
        page = sr.open("file:///.../03_multiple_heads.html")   # Chromium, not headless, on the page itself
        sr.wait_loaded()                                        # Orca said "Finished loading", then a quiet second
        start = sr.key("Tab")                                   # a real key (xdotool), marked in the transcript
        said = sr.wait_speech(start, r"slider")                 # what Orca spoke after that key

Start order and the gotchas that make it hang (../../shared/TOOLCHAIN.md, "A real screen reader"):
Xvfb on a free display, a private session bus, the AT-SPI bus, Orca (``orca_launcher.py``, which
copies every utterance to a file as it is spoken), then Chromium with its accessibility tree on,
started on the page itself. Everything gets a private HOME and XDG_RUNTIME_DIR and
``GSETTINGS_BACKEND=memory``; speech-dispatcher sends its audio to ALSA's null device (there is no
sound card, and its PulseAudio default hangs). Playwright attaches over the DevTools port only to
read the page (is MathJax idle, are the figures drawn, what does a figure say); every key a learner
presses goes through X with ``xdotool``.

``transcript()`` is the page's record: each key pressed, then each utterance that followed it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
SYSTEM_PYTHON = "/usr/bin/python3"
LAUNCHER = HERE / "orca_launcher.py"
AT_SPI_LAUNCHER = "/usr/libexec/at-spi-bus-launcher"
#: What the checks need, and the Debian packages that give it (.ci/run installs them).
PACKAGES = ("orca speech-dispatcher speech-dispatcher-espeak-ng at-spi2-core python3-pyatspi gir1.2-atspi-2.0 "
            "xvfb dbus-x11 espeak-ng xdotool")
SPEECH = re.compile(r"^SPEECH OUTPUT: '(.*?)'(?: voice=\w+)?$", re.M | re.S)
#: Orca's modifier in its desktop layout.
ORCA_KEY = "Insert"


def norm(text: str) -> str:
    """Text as compared with speech: quotes, dashes and spaces made plain, lower case."""
    text = text.replace("\u2018", "'").replace("\u2019", "'").replace("\u201c", '"').replace("\u201d", '"')
    text = text.replace("\u2212", "-").replace("\u2013", "-").replace("\u2014", "-").replace("\u00a0", " ")
    return re.sub(r"\s+", " ", text).strip().lower()


def plain(said: str) -> str:
    """What ``ScreenReader.said`` returns, as one ``norm`` text: Orca may split a sentence into utterances."""
    return norm(said.replace(" | ", " "))


class ScreenReaderError(RuntimeError):
    """Orca, Xvfb or Chromium did not start, or Orca stayed silent where it should speak."""


def missing(chromium: str) -> list[str]:
    """What this machine lacks to run Orca headless; empty when everything is there."""
    problems = []
    for tool in ("Xvfb", "xdotool", "dbus-daemon", "speech-dispatcher"):
        if shutil.which(tool) is None:
            problems.append(f"{tool} not found")
    if not Path(AT_SPI_LAUNCHER).exists():
        problems.append(f"{AT_SPI_LAUNCHER} not found")
    if not Path(SYSTEM_PYTHON).exists() or subprocess.run(
            [SYSTEM_PYTHON, "-c", "import importlib.util as u, sys; sys.exit(not (u.find_spec('orca') and u.find_spec('pyatspi')))"],
            capture_output=True).returncode:
        problems.append(f"GNOME Orca is not importable by {SYSTEM_PYTHON}")
    if not Path(chromium).exists():
        problems.append(f"Chromium not found at {chromium}")
    if problems:
        problems.append(f"Debian: apt-get install --no-install-recommends {PACKAGES}")
    return problems


def _stop(proc: subprocess.Popen | None, timeout: float = 5) -> None:
    """End one process this harness started (and its process group), by its id."""
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout)


class ScreenReader:
    """Xvfb, a session bus, the AT-SPI bus, Orca and (per page) Chromium, in ``work``; see the module docstring."""

    def __init__(self, work: Path, *, chromium: str = "/usr/bin/chromium", size=(1280, 900)):
        self.work = Path(work)
        self.chromium = chromium
        self.size = size
        self.procs: list[subprocess.Popen] = []
        self.browser_proc: subprocess.Popen | None = None
        self.speech_file = self.work / "speech.log"
        self.events: list[tuple[int, str]] = []  # (offset in the speech file, key or note)
        #: Each wait for speech that ran to its timeout (what was awaited, seconds): a test that goes on after one
        #: spent those seconds listening to nothing; the summary of a page names them.
        self.waited_out: list[tuple[str, float]] = []
        self._playwright = self._driver = None
        self._browser = None
        self.env: dict[str, str] = {}

    # ------------------------------------------------------------------ start and stop

    def __enter__(self) -> "ScreenReader":
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _spawn(self, argv, **kw) -> subprocess.Popen:
        kw.setdefault("stdout", subprocess.DEVNULL)
        kw.setdefault("stderr", open(self.work / f"{Path(argv[0]).name}.err", "ab"))
        proc = subprocess.Popen(argv, env=self.env, start_new_session=True, **kw)
        self.procs.append(proc)
        return proc

    def _start(self) -> None:
        home, runtime = self.work / "home", self.work / "run"
        for d in (home, runtime, home / ".config" / "speech-dispatcher", home / "orca"):
            d.mkdir(parents=True, exist_ok=True)
        runtime.chmod(0o700)
        # No sound card: ALSA to its null device, and speech-dispatcher told to use ALSA (its PulseAudio default hangs).
        (home / ".asoundrc").write_text("pcm.!default { type null }\nctl.!default { type hw card 0 }\n")
        system_conf = Path("/etc/speech-dispatcher/speechd.conf")
        conf = system_conf.read_text() if system_conf.exists() else ""
        (home / ".config" / "speech-dispatcher" / "speechd.conf").write_text(
            conf + '\nAudioOutputMethod "alsa"\nDefaultModule espeak-ng\n')
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "XDG_RUNTIME_DIR": str(runtime),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "GSETTINGS_BACKEND": "memory",
            "NO_AT_BRIDGE": "0",
            "GTK_A11Y": "atspi",
            "ACCESSIBILITY_ENABLED": "1",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
        }
        # Xvfb picks a free display and writes its number to a pipe.
        read, write = os.pipe()
        self._spawn(["Xvfb", "-displayfd", str(write), "-screen", "0", f"{self.size[0]}x{self.size[1]}x24",
                     "-nolisten", "tcp"], pass_fds=(write,))
        os.close(write)
        display = b""
        deadline = time.monotonic() + 30
        while not display.endswith(b"\n") and time.monotonic() < deadline:
            chunk = os.read(read, 16)
            if not chunk:
                break
            display += chunk
        os.close(read)
        if not display.strip():
            raise ScreenReaderError("Xvfb did not report a display")
        self.env["DISPLAY"] = f":{display.decode().strip()}"
        # A private session bus.
        bus = self._spawn(["dbus-daemon", "--session", "--nofork", "--print-address=1"], stdout=subprocess.PIPE)
        address = bus.stdout.readline().decode().strip()
        if not address:
            raise ScreenReaderError("dbus-daemon did not print its address")
        self.env["DBUS_SESSION_BUS_ADDRESS"] = address
        self._spawn([AT_SPI_LAUNCHER, "--launch-immediately"])
        time.sleep(0.5)
        self.speech_file.write_text("")
        self._spawn([SYSTEM_PYTHON, str(LAUNCHER), str(self.speech_file), str(home / "orca")])
        # Orca greets when it is ready ("Screen reader on.").
        self.wait_speech(0, r".", timeout=60, what="Orca's first words")

    def close(self) -> None:
        self.close_page()
        with contextlib.suppress(Exception):
            if self._playwright is not None:
                self._driver.__exit__(None, None, None)
        self._playwright = self._driver = None
        for proc in reversed(self.procs):
            _stop(proc)
        self.procs.clear()

    # ------------------------------------------------------------------ the page

    def open(self, url: str, *, timeout: float = 60):
        """Chromium on ``url`` (not headless: headless Chromium exposes nothing to a screen reader); the page,
        through playwright over the DevTools port, for reading only."""
        from lab_page import playwright_driver

        self.close_page()
        profile = self.work / f"profile-{len(self.events)}-{time.monotonic_ns()}"
        profile.mkdir()
        self.events.append((self.offset(), f"OPEN {url.rsplit('/', 1)[-1]}"))
        self.browser_proc = subprocess.Popen(
            [self.chromium, f"--user-data-dir={profile}", "--no-sandbox", "--force-renderer-accessibility",
             "--ozone-platform=x11", "--no-first-run", "--no-default-browser-check", "--disable-gpu",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-dev-shm-usage", "--disable-features=Translate,MediaRouter", "--password-store=basic",
             f"--window-size={self.size[0]},{self.size[1]}", "--window-position=0,0",
             "--remote-debugging-port=0", url],
            env=self.env, start_new_session=True, stdout=subprocess.DEVNULL,
            stderr=open(self.work / "chromium.err", "ab"))
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not (port_file.exists() and port_file.read_text().strip()):
            if time.monotonic() > deadline or self.browser_proc.poll() is not None:
                raise ScreenReaderError(f"Chromium did not open its DevTools port within {timeout:.0f} s")
            time.sleep(0.1)
        port = port_file.read_text().split()[0]
        if self._playwright is None:
            self._driver = playwright_driver()
            self._playwright = self._driver.__enter__()
        self._browser = self._playwright.chromium.connect_over_cdp(f"http://127.0.0.1:{port}", timeout=timeout * 1000)
        pages = [p for ctx in self._browser.contexts for p in ctx.pages]
        if not pages:
            raise ScreenReaderError("Chromium opened no page")
        page = pages[0]
        page.wait_for_load_state("load", timeout=timeout * 1000)
        return page

    def close_page(self) -> None:
        with contextlib.suppress(Exception):
            if self._browser is not None:
                self._browser.close()
        self._browser = None
        _stop(self.browser_proc)
        self.browser_proc = None

    # ------------------------------------------------------------------ speech

    def offset(self) -> int:
        try:
            return self.speech_file.stat().st_size
        except FileNotFoundError:
            return 0

    def _raw(self, start: int = 0, stop: int | None = None) -> str:
        data = self.speech_file.read_bytes()
        return data[start:stop].decode("utf-8", "replace")

    def spoken(self, start: int = 0, stop: int | None = None) -> list[str]:
        """The utterances between two offsets of the speech file."""
        return [m.group(1) for m in SPEECH.finditer(self._raw(start, stop))]

    def said(self, start: int = 0, stop: int | None = None) -> str:
        """What was spoken between two offsets, as one text (utterances joined by ' | ')."""
        return " | ".join(self.spoken(start, stop))

    def mode(self) -> str:
        """Orca's mode on the page as it last announced it: "focus" or "browse" (browse until it says otherwise)."""
        said = [u for u in self.spoken() if u in ("Focus mode", "Browse mode")]
        return "focus" if said and said[-1] == "Focus mode" else "browse"

    def wait_speech(self, start: int, pattern: str, *, timeout: float = 15, what: str = "",
                    silent_grace: float = 0.0) -> str:
        """Wait until the speech since ``start`` matches ``pattern`` (a regex, case-insensitive), as spoken or as
        ``plain`` text (a pattern made from ``norm``'s text has straight quotes and dashes, and may span two
        utterances); what was said. ``silent_grace``: when ``timeout`` passes and Orca has said nothing at all since
        ``start`` (it has not yet reacted: on a loaded machine it lags), wait that much longer; anything else said
        still fails at ``timeout``."""
        deadline = time.monotonic() + timeout
        rx = re.compile(pattern, re.I | re.S)
        while True:
            text = self.said(start)
            if rx.search(text) or rx.search(plain(text)):
                return text
            if time.monotonic() > deadline and silent_grace > 0 and not text.strip():
                deadline, timeout, silent_grace = deadline + silent_grace, timeout + silent_grace, 0.0
            if time.monotonic() > deadline:
                self.waited_out.append((what or pattern, timeout))
                raise ScreenReaderError(f"Orca did not say {what or pattern!r} within {timeout:.0f} s; it said: {text[-600:]!r}")
            time.sleep(0.1)

    def said_after(self, start: int, first: str, *, timeout: float, what: str) -> str:
        """What was spoken since ``start``, once the text ``first`` (its first 30 characters) was heard, or
        ``timeout`` passed, and Orca then fell quiet for a second: the caller checks what is missing."""
        try:
            self.wait_speech(start, re.escape(norm(first)[:30]), timeout=timeout, what=what)
        except ScreenReaderError:
            pass
        self.wait_quiet(1.0)
        return self.said(start)

    def wait_quiet(self, quiet: float = 1.0, *, timeout: float = 15) -> None:
        """Wait until Orca has said nothing new for ``quiet`` seconds."""
        deadline = time.monotonic() + timeout
        last, since = self.offset(), time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(0.1)
            now = self.offset()
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet:
                return

    def wait_loaded(self, start: int = 0, *, timeout: float = 60) -> None:
        self.wait_speech(start, r"Finished loading", timeout=timeout, what="Finished loading")
        self.wait_quiet()

    def key(self, *keys: str, settle: float = 0.0) -> int:
        """Press keys as a person would (X events through xdotool); the speech file's offset before them."""
        start = self.offset()
        self.events.append((start, "KEY " + " ".join(keys)))
        subprocess.run(["xdotool", "key", "--delay", "60", *keys], env=self.env, check=True, timeout=30)
        if settle:
            time.sleep(settle)
        return start

    def note(self, text: str) -> int:
        start = self.offset()
        self.events.append((start, text))
        return start

    def transcript(self) -> str:
        """Every key and note, each followed by the utterances that came after it, in order."""
        lines, marks = [], sorted(self.events, key=lambda e: e[0])
        bounds = [m[0] for m in marks] + [None]
        first = bounds[0] if marks else None
        if first:
            lines += [f"  said: {u}" for u in self.spoken(0, first)]
        for (start, text), stop in zip(marks, bounds[1:]):
            lines.append(f"[{text}]")
            lines += [f"  said: {u}" for u in self.spoken(start, stop)]
        return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ what a walk heard


@dataclass
class Listening:
    """What one page's walk heard, and what was missing."""

    stem: str
    problems: list[str] = field(default_factory=list)
    controls_moved: int = 0
    figures_heard: int = 0
    quiz_heard: bool = False
    seconds: float = 0.0


def numbers_in(text: str) -> list[str]:
    return re.findall(r"\d[\d,]*(?:\.\d+)?(?:e-?\d+)?", text)


def heard(words: str, said: str) -> bool:
    """Whether ``words`` (a page text) were spoken in ``said``: the text, whatever Orca split it into."""
    w, s = norm(words), plain(said)
    return bool(w) and w in s


def listened(reader: ScreenReader, transcript: str, listen, transcripts: Path) -> Listening:
    """``listen()`` from a clean transcript, its keys and utterances written to ``<transcripts>/<transcript>.txt``."""
    reader.events.clear()
    reader.waited_out.clear()
    reader.speech_file.write_text("")
    try:
        return listen()
    finally:
        transcripts.mkdir(parents=True, exist_ok=True)
        (transcripts / f"{transcript}.txt").write_text(reader.transcript())


def waits_and_time(reader: ScreenReader, listening: Listening) -> str:
    """The listening's seconds, and how many waits for speech ran to their timeout (seconds heard of nothing)."""
    return (f"{listening.seconds:.0f} s, {len(reader.waited_out)} waits for speech ran out "
            f"({sum(t for _, t in reader.waited_out):.0f} s)")
