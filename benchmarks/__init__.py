"""The course's benchmarks: one command, a report in Markdown and JSON.

    python -m benchmarks                      # everything (about 10 minutes on two cores)
    python -m benchmarks --quick              # few repeats: checks the machinery, figures indicative
    python -m benchmarks --only attention,import

Each section runs in its own fresh process (torch's worker threads slow NumPy down
in a process that has run torch work), and every figure is a median over repeated,
interleaved runs, with its ratio to a reference measured in the same rounds.
See benchmarks/README.md for how to read the report.
"""

SECTIONS = ("import", "attention", "numpy", "gpu", "controls", "notebooks", "memory", "serving", "training", "pretrained",
            "decoder")
