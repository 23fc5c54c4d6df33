"""Start GNOME Orca and copy every utterance to a file as it is spoken (run by Debian's python3).

    /usr/bin/python3 orca_launcher.py SPEECH_FILE PREFS_DIR

Orca's ``--debug-file`` is not flushed while Orca runs; its speech logger is. Each line of
SPEECH_FILE is one utterance, as Orca hands it to the speech server. Settings for a test:
no say-all on load (it would move the caret into MathJax and notebook cells mid-test), no
page summary, no braille, no sounds, no key echo (the test writes its own key marks).

Every voice speaks at Orca's fastest rate (99 of 100). speech-dispatcher 0.11 takes the synthesiser's
audio back from espeak-ng a byte at a time, whatever plays it (here ALSA's null device): at Orca's
normal rate that cost more CPU than Chromium's page. What Orca says, and when, is the same; the audio
is shorter.

Unlike /usr/bin/orca this never looks for or kills other Orcas of the same user (on a shared
machine ``orca --replace`` would kill everyone's), and it does not rename its process to
``orca``, so another session's ``--replace`` cannot kill it either.
"""

import logging
import sys

SETTINGS = {
    "sayAllOnLoad": False,
    "pageSummaryOnLoad": False,
    "enableBraille": False,
    "enableBrailleMonitor": False,
    "enableSound": False,
    "enableKeyEcho": False,
    "enableTutorialMessages": False,
    "presentToolTips": False,
}


def main(speech_file: str, prefs_dir: str) -> int:
    from orca import debug  # noqa: F401  (imported first, as /usr/bin/orca does)
    from orca import orca

    handler = logging.FileHandler(speech_file, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(message)s"))
    speech_log = logging.getLogger("speech")
    speech_log.setLevel(logging.INFO)
    speech_log.addHandler(handler)

    manager = orca.getSettingsManager()
    chosen = {**SETTINGS, "voices": fastest_voices()}
    manager.activate(prefs_dir, dict(chosen))
    for key, value in chosen.items():
        manager.setSetting(key, value)
    return orca.main()


def fastest_voices() -> dict:
    """Orca's voices as they are (default, uppercase, hyperlink, system), each at the fastest rate."""
    from orca import settings
    from orca.acss import ACSS

    return {kind: ACSS({**voice, ACSS.RATE: 99}) for kind, voice in settings.voices.items()}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
