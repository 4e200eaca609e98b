"""agents: language-model players for CodeTestDuel-v0 and the Code-A1 self-play trainer.

Subpackages, in the order imports run (each imports only those after it, and ``codea1_env``):

* :mod:`agents.commands`: the ``codea1`` command line (``python -m agents.cli``);
* :mod:`agents.integrations`: adapters for other RL engines (TRL, verl, OpenRLHF, SkyRL,
  verifiers) and the HTTP reward service;
* :mod:`agents.evaluation`: policy evaluation and run reports;
* :mod:`agents.training`: the self-play GRPO trainer, its config and presets, checkpoints;
* :mod:`agents.players`: prompts and the role policies;
* :mod:`agents.lm`: the language-model interface and its backends (transformers, vLLM, HTTP,
  and a test server), the models and the tokenizer.

The heavy parts (torch, transformers) live in submodules and are imported only when used; install
them with ``pip install 'codea1[train]'``. The old flat module paths the docs name
(``agents.trainer``, ``agents.config``, ``agents.serve``, ...) are kept as re-export modules.
"""

__version__ = "0.1.0"
