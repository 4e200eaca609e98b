"""The RL views of the duel: what an RL library constructs and steps.

* :mod:`.duel_env`: ``CodeTestDuel-v0``, the two-player Gymnasium env;
* :mod:`.vector`: its natively batched vector form (one sandbox call per batched step);
* :mod:`.single_role`: ``CodeTestDuel-Coder-v0`` / ``-Tester-v0``, one role against a fixed
  opponent;
* :mod:`.tokens`: a token-level view (``Discrete`` actions, ``Box`` observations);
* :mod:`.pettingzoo_aec`: the PettingZoo AEC view (needs the ``pettingzoo`` extra).

Every view hosts its duels with :class:`codea1_env.game.host.DuelHost`, plays
:class:`codea1_env.game.duel.Duel` and scores through
:class:`codea1_env.scoring.referee.Referee`; nothing below imports from here.
"""
