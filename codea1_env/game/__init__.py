"""The game of one duel, independent of any RL API.

* :mod:`.duel`: the rules (who moves, what each sees, how a judgement becomes an outcome);
* :mod:`.spaces`: the observation and action spaces every view shares;
* :mod:`.shared_text`: their texts through ``AsyncVectorEnv``'s shared memory (Gymnasium's own
  reader decodes a ``Text`` once, at construction);
* :mod:`.policy`: :class:`~.policy.Policy`, the interface every player implements;
* :mod:`.anonymize`: the code the tester reads, stripped of names, comments and docstrings;
* :mod:`.host`: the host every view shares: constructor arguments turned into the problem
  picker, the referee and the mistake book (:class:`~.host.DuelHost`);
* :mod:`.caller`: warnings about what a caller passed, shown at the caller's line.
"""
