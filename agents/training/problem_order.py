"""Which problems each RL step plays: shuffled epochs over the training source, as verl draws them.

The authors train through verl, whose data loader draws a question set in epochs: a fresh random
permutation each epoch (``RandomSampler``), cut into batches of ``problems_per_step``, the last
incomplete batch dropped (``drop_last=True``). So no problem is played twice in one step and each
is played once per epoch. :class:`EpochOrder` gives the same order as a pure function of the seed
and the step: step ``s`` (from 1) plays batch ``(s - 1) % steps_per_epoch`` of epoch
``(s - 1) // steps_per_epoch``, and epoch ``e``'s permutation comes from ``(seed, e)`` alone. A
resumed run therefore plays exactly the problems the uninterrupted run plays, with nothing in the
checkpoint but the step.

A source with fewer problems than ``problems_per_step`` cannot give a whole batch without
repeats (verl would give no batch at all): the steps then read the permutations one after the
other without dropping anything, and a problem can come twice in a step (the referee merges its
mistake-book updates into one, rule 8).

``problem_order="uniform"`` (the trainer's option) draws each problem independently and
uniformly instead, with replacement, through the env's picker. The epochs are read from the
package's own sources (:data:`BUILT_IN_SOURCES`: the bank, HumanEval, JSONL and hub files, the
procedural families, and their ``hard_only`` filter); a curriculum, and a source object of the
user's own, always draw through their ``sample``, whose order is theirs to choose.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from codea1_env.problems import ListSource, ProceduralSource

__all__ = ["BUILT_IN_SOURCES", "EpochOrder"]

BUILT_IN_SOURCES = (ListSource, ProceduralSource)
"""The source types the trainer reads in epochs (``problem_order="epochs"``)."""

_TAG = 0x0C0DEA1
"""Mixed into every permutation's seed, so the order differs from other streams of the seed."""


class EpochOrder:
    """The task ids each step plays, in shuffled epochs with the last incomplete batch dropped.

    Args:
        ids: The training source's task ids, in the source's order.
        batch: Problems per step (at least 1).
        seed: The run's seed.

    Raises:
        ValueError: no ids, or a batch below 1.

    Example:
        >>> order = EpochOrder(["a", "b", "c", "d", "e"], batch=2, seed=0)
        >>> order.steps_per_epoch  # the fifth problem of each epoch is dropped
        2
        >>> len(set(order.ids_for_step(1) + order.ids_for_step(2)))
        4
    """

    def __init__(self, ids: Sequence[str], batch: int, seed: int) -> None:
        if not ids:
            raise ValueError("the training source has no problems")
        if batch < 1:
            raise ValueError(f"problems per step must be >= 1, got {batch}")
        self.ids = list(ids)
        self.batch = int(batch)
        self.seed = int(seed)
        self._cached: tuple[int, list[int]] | None = None

    @property
    def steps_per_epoch(self) -> int:
        """Whole batches in one epoch; 0 when the source is smaller than a batch."""
        return len(self.ids) // self.batch

    def permutation(self, epoch: int) -> list[int]:
        """Epoch ``epoch``'s order of the ids' indices (from ``(seed, epoch)`` alone)."""
        if self._cached is None or self._cached[0] != epoch:
            rng = np.random.default_rng([self.seed, epoch, _TAG])
            self._cached = (epoch, [int(i) for i in rng.permutation(len(self.ids))])
        return self._cached[1]

    def epoch_of(self, step: int) -> int:
        """The epoch (from 0) that step ``step`` (from 1) draws from; its last one if several."""
        if self.steps_per_epoch:
            return (step - 1) // self.steps_per_epoch
        return (step * self.batch - 1) // len(self.ids)

    def ids_for_step(self, step: int) -> list[str]:
        """The task ids step ``step`` (from 1) plays, in order.

        Raises:
            ValueError: ``step`` is below 1.
        """
        if step < 1:
            raise ValueError(f"steps count from 1, got {step}")
        if self.steps_per_epoch:
            epoch, index = divmod(step - 1, self.steps_per_epoch)
            start = index * self.batch
            chosen = self.permutation(epoch)[start : start + self.batch]
        else:  # a source smaller than one batch: the permutations one after the other
            size = len(self.ids)
            position = (step - 1) * self.batch
            chosen = []
            while len(chosen) < self.batch:
                epoch, offset = divmod(position, size)
                take = min(self.batch - len(chosen), size - offset)
                chosen.extend(self.permutation(epoch)[offset : offset + take])
                position += take
        return [self.ids[i] for i in chosen]
