"""The self-play GRPO trainer and everything a run needs.

* :mod:`.trainer`: :class:`~.trainer.Trainer`, one run's lifecycle and its step;
* :mod:`.player`: one trained player (model, optimizer, schedule, reference) and its update;
* :mod:`.roles`: the two roles as the trainer samples them;
* :mod:`.grpo`: the GRPO loss, as pure tensor functions;
* :mod:`.rollout`: rollout samples as token sequences, and their log-probabilities;
* :mod:`.sft`: the supervised warm start;
* :mod:`.heldout_eval`: the before/after evaluation on a held-out problem set;
* :mod:`.checkpoint`: atomic checkpoints;
* :mod:`.distributed`: data-parallel training with ``torch.distributed``;
* :mod:`.metrics`: the run's metrics (JSONL, TensorBoard, wandb);
* :mod:`.config`: :class:`~.config.TrainConfig`, its validation, presets, JSON and CLI flags.
"""
