"""Names and limits the adapters share, importable without loading the env (for the CLI)."""

from __future__ import annotations

__all__ = ["DEFAULT_MAX_BODY_BYTES", "MODES", "OPPONENTS"]

OPPONENTS = ("gt", "gt+mistake_book", "boundary", "random", "trivial", "http")
"""Frozen testers for coder rows.

* ``gt``: no tester; the coder's reward is its GT-test pass rate (``reward_mode="golden"``, the
  paper's "Golden Tests" row; ``CodeTestDuel-Coder-v0``'s ``opponent="gt"``).
* ``gt+mistake_book``: the problem's GT tests are the suite, plus the replayed mistake book
  (Code-A1's coder reward; ``CodeTestDuel-Coder-v0``'s ``opponent="gt+mistake_book"``).
* ``boundary``, ``random``, ``trivial``: the scripted testers of
  :mod:`codea1_env.baselines.scripted` write a suite against each code (white-box), as in ``codea1
  duel``.
* ``http``: a frozen Test LLM behind an OpenAI-compatible server
  (:class:`agents.players.policy.TesterPolicy` over :class:`agents.lm.http.OpenAICompatibleLM`).
"""

MODES = ("code-a1", "self-play")
"""Reward modes for a core whose opponent is not ``gt`` (``gt`` implies ``golden``)."""

DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
"""Largest request body the reward service accepts (413 above)."""
