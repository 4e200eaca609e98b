"""Adapters that put codea1's referee inside other RL engines.

* :mod:`agents.integrations.core`: the shared scoring core (problems, frozen opponents, one
  referee); every adapter scores through it, so through :meth:`Referee.judge_many
  <codea1_env.scoring.referee.Referee.judge_many>` and nothing else.
* :mod:`agents.integrations.reward_service`: ``codea1 serve-reward``, an HTTP service that batches
  concurrent requests into single sandbox calls (OpenRLHF's remote reward protocol,
  ``/v1/judge`` and verl's ``/v1/rows``).
* :mod:`agents.integrations.reward_client`: the client of ``/v1/rows`` (verl's ``reward_url``:
  reward workers on many nodes, one service, one mistake book).
* :mod:`agents.integrations.openrlhf`: OpenRLHF's request and answer formats, and an in-process
  ``reward_func``.
* :mod:`agents.integrations.skyrl`: SkyRL-gym ``BaseTextEnv`` envs for the coder and the tester.
* :mod:`agents.integrations.verl`: verl's custom ``compute_score`` (and its batch and async
  forms).
* :mod:`agents.integrations.verl_data`: verl's parquet data builders (coder and tester roles).
* :mod:`agents.integrations.verl_manager`: verl 0.9.1's reward manager ``codea1`` (imports verl;
  loaded by verl through the ``verl.plugins`` entry point), batching samples into one referee call.
* :mod:`agents.integrations.trl`: the env's scoring as a TRL ``GRPOTrainer`` reward function.
* :mod:`agents.integrations.verifiers_env`: the duel as a ``verifiers`` 0.4 multi-agent
  environment (``vf-eval codea1-duel``).
* :mod:`agents.integrations.options`: names and limits the adapters share, importable without
  loading the env (for the CLI).

See ``docs/integrations.md`` for each engine's command line.
"""
