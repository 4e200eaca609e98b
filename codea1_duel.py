"""``vf-eval codea1-duel``: verifiers imports this module for the taskset id ``codea1-duel``.

A thin re-export of :mod:`agents.integrations.verifiers_env` (see there); verifiers takes the
one Taskset, Env and Harness subclass listed in ``__all__``.
"""

from agents.integrations.verifiers_env import DuelChatHarness, DuelEnv, DuelTaskset

__all__ = ["DuelChatHarness", "DuelEnv", "DuelTaskset"]
