"""The self-play GRPO trainer and everything a run needs.

* :mod:`.trainer`: :class:`~.trainer.Trainer`, one run's lifecycle and its step;
* :mod:`.run_setup`: what a run is made of before its first step (seeds, run dir, players, referee);
* :mod:`.problem_order`: which problems each step plays (shuffled epochs, as verl's loader);
* :mod:`.play`: the step's duels, the coder's and tester's moves played as the env plays them;
* :mod:`.groups`: the step's GRPO groups (group selection, collapsed groups, advantages);
* :mod:`.player`: one trained player (model, optimizer, schedule, reference) and its update;
* :mod:`.roles`: the two roles as the trainer samples them;
* :mod:`.grpo`: the GRPO loss, as pure tensor functions;
* :mod:`.rollout`: rollout samples as token sequences, and their log-probabilities;
* :mod:`.rollout_weights`: a low-precision copy of a trained model for the rollouts;
* :mod:`.sft`: the supervised warm start (the loop and the run's plan of roles);
* :mod:`.heldout_eval`: the before/after evaluation on a held-out problem set;
* :mod:`.checkpoint`: atomic checkpoints and the trainer's state in them;
* :mod:`.saved_players`: a run's saved players, loaded to evaluate, serve or export them;
* :mod:`.distributed`: data-parallel training with ``torch.distributed``;
* :mod:`.metrics`: the run's metrics (JSONL, TensorBoard, wandb);
* :mod:`.environment`: what a run (or ``codea1 eval``) ran on: Python, packages, the sandbox;
* :mod:`.config`: :class:`~.config.TrainConfig`, its validation and JSON, the presets' builder;
* :mod:`.config_sections`: the fields' docstrings and choices; the nested sections' flat names;
* :mod:`.config_flags`: ``codea1 train``'s flags, generated from the fields;
* :mod:`.presets`: the named presets (plain data).
"""
