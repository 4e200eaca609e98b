"""agents: language-model players for CodeTestDuel-v0 and the Code-A1 self-play trainer.

The heavy parts (torch, transformers) live in submodules and are imported only when used; install
them with ``pip install 'codea1[train]'``. The command line is :mod:`agents.cli` (``codea1``).
"""

__version__ = "0.1.0"
