"""The two players over a language model: their prompts and their role policies.

* :mod:`.prompts`: the editable prompt templates of both roles;
* :mod:`.policy`: :class:`~.policy.CoderPolicy` and :class:`~.policy.TesterPolicy`.

The models and the tokenizer they sample from are :mod:`agents.lm`'s.
"""
