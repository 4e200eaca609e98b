"""Sampling from any ``transformers`` causal LM: :class:`TransformersLM`.

A small, explicit sampling loop instead of ``model.generate``: prompts are left-padded into one
batch, the prompt pass fills the KV cache, and each step feeds one token per sequence; finished
sequences leave the batch (and their KV cache rows) as they end, and the stop strings are looked
for only after a token that can complete one. The loop returns exactly what a policy-gradient
trainer needs: the prompt and completion token ids and the log-probability of each sampled token
under the distribution it was drawn from. On CPU with tiny models it is also faster than
``generate`` (no logits processors, no per-step Python overhead beyond one forward call).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.lm.interfaces import FinishReason, Generation, SamplingParams, stream_key

if TYPE_CHECKING:
    import torch

__all__ = [
    "TransformersLM",
    "accepts_logits_to_keep",
    "cache_argument",
    "decode_attention",
    "left_padded",
    "sample_next",
]

log = logging.getLogger(__name__)


def _require_torch() -> Any:
    try:
        import torch
    except ImportError as exc:
        raise ImportError("TransformersLM needs torch: pip install 'codea1[train]'") from exc
    return torch


def row_generators(seed: int, first_row: int, rows: int) -> list[torch.Generator]:
    """One CPU random stream per row, keyed by ``seed + first_row + row`` (splitmix64-mixed).

    A row's draws therefore depend only on its seed and its index in the whole batch, not on
    which other rows share the call: a batch split across calls or data-parallel processes
    samples exactly what it would have sampled in one call.
    """
    th = _require_torch()
    generators = []
    for row in range(first_row, first_row + rows):
        z = stream_key(seed, row)
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        generator = th.Generator()
        generator.manual_seed((z ^ (z >> 31)) & 0x7FFFFFFFFFFFFFFF)
        generators.append(generator)
    return generators


def sample_next(
    logits: torch.Tensor,
    temperature: float,
    top_p: float,
    generator: torch.Generator | Sequence[torch.Generator] | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sample one token per row of ``logits`` ``(B, V)``.

    ``generator`` is one generator for the whole batch, one per row (each row then draws one
    uniform number from its own stream and takes the token where the cumulative probability
    passes it), or ``None`` (the global RNG).

    Returns:
        ``(ids, logprobs)``, both ``(B,)``: the sampled ids and their log-probabilities under the
        distribution actually sampled from (``softmax(logits / temperature)`` restricted to the
        top-p nucleus and renormalised). With ``temperature == 0`` the argmax is taken and its
        log-probability under the untempered ``softmax(logits)`` is reported.

    """
    th = _require_torch()
    logits = logits.float()
    if temperature == 0.0:
        ids = logits.argmax(dim=-1)
        logp = th.log_softmax(logits, dim=-1).gather(-1, ids[:, None]).squeeze(-1)
        return ids, logp
    scaled = logits / temperature
    if top_p < 1.0:
        sorted_logits, order = scaled.sort(dim=-1, descending=True)
        probs = sorted_logits.softmax(dim=-1)
        # drop a token when the tokens ranked before it already hold top_p of the mass
        drop_sorted = (probs.cumsum(dim=-1) - probs) >= top_p
        drop_sorted[:, 0] = False
        drop = th.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        scaled = scaled.masked_fill(drop, float("-inf"))
    logp_all = th.log_softmax(scaled, dim=-1)
    if generator is None or isinstance(generator, th.Generator):
        ids = th.multinomial(logp_all.exp(), 1, generator=generator).squeeze(-1)
    else:
        rows: list[torch.Generator] = list(generator)  # type: ignore[arg-type]
        if len(rows) != logits.shape[0]:
            raise ValueError(f"{len(rows)} generators for {logits.shape[0]} rows")
        uniforms = th.stack([th.rand((), generator=g, dtype=th.float64) for g in rows])
        cumulative = logp_all.double().exp().cumsum(dim=-1)
        targets = (uniforms.to(cumulative.device) * cumulative[:, -1])[:, None]
        ids = (cumulative <= targets).sum(dim=-1).clamp(max=logits.shape[-1] - 1)
        # never land on a token the nucleus (or an underflow) gave no probability
        ids = th.where(
            th.isfinite(logp_all.gather(-1, ids[:, None]).squeeze(-1)), ids, logp_all.argmax(dim=-1)
        )
    return ids, logp_all.gather(-1, ids[:, None]).squeeze(-1)


def rows_to_keep(live: Sequence[int], present: int) -> list[int]:
    """The batch slots to keep when the rows ``live`` (of ``present`` slots) are unfinished.

    Finished rows leave the batch once they are at least an eighth of it: each cut copies the KV
    cache once, so it pays only when enough rows go.

    Returns:
        ``live`` (sorted) when a cut is due, else all ``present`` slots.
    """
    if present - len(live) < max(1, present // 8):
        return list(range(present))
    return sorted(live)


def select_cache_rows(cache: Any, rows: torch.Tensor) -> Any:
    """The KV cache cut to the batch rows ``rows`` (in that order), or ``None`` if it cannot be.

    A ``transformers`` :class:`~transformers.Cache` is cut in place (``reorder_cache``, the
    beam-search reordering); a legacy tuple of per-layer ``(key, value)`` tensors is rebuilt.
    """
    if cache is None:
        return None
    reorder = getattr(cache, "reorder_cache", None)
    if callable(reorder):
        reorder(rows)
        return cache
    if isinstance(cache, tuple) and all(isinstance(layer, tuple) for layer in cache):
        return tuple(tuple(t.index_select(0, rows) for t in layer) for layer in cache)
    return None


def stop_char_filter(decode: Any, stop: Sequence[str]) -> Any:
    """A cheap necessary test for "this token may complete a stop string": ``token -> bool``.

    A stop string that newly appears in the decoded tail must end inside the last token's text,
    so a token whose text holds no stop string's last character cannot complete one. Tokens
    whose text alone is not their text in context (a partial UTF-8 sequence) always pass, as do
    all tokens when a stop string ends in whitespace (tokenizers move spaces between tokens).
    The answers are cached per token id.
    """
    lasts = {s[-1] for s in stop if s}
    if not lasts or any(c.isspace() for c in lasts):
        return lambda token: True
    answers: dict[int, bool] = {}

    def may_stop(token: int) -> bool:
        known = answers.get(token)
        if known is None:
            text = str(decode([token]))
            known = answers[token] = "\ufffd" in text or any(c in text for c in lasts)
        return known

    return may_stop


def accepts_logits_to_keep(model: Any) -> bool:
    """Whether ``model.forward`` takes ``logits_to_keep`` (the LM head on the last positions only).

    Wrapped models (PEFT) hide the signature, so the base model's class is inspected; the answer
    is cached per class (a training step asks once per forward).
    """
    get_base = getattr(model, "get_base_model", None)
    base = get_base() if callable(get_base) else model
    return _forward_takes_logits_to_keep(base.__class__)


@functools.cache
def _forward_takes_logits_to_keep(kind: Any) -> bool:
    try:
        return "logits_to_keep" in inspect.signature(kind.forward).parameters
    except (AttributeError, TypeError, ValueError):
        return False


def cache_argument() -> str:
    """The name this ``transformers`` gives the KV cache, in a forward's arguments and outputs.

    ``transformers`` 5.x renamed ``past_key_values`` to ``cache``; the output dataclass tells
    which name this version uses.
    """
    from transformers.modeling_outputs import CausalLMOutputWithPast

    names = {f.name for f in dataclasses.fields(CausalLMOutputWithPast)}
    return "cache" if "cache" in names else "past_key_values"


def decode_attention(device: Any) -> contextlib.AbstractContextManager[Any]:
    """The attention kernels the sampling loop may use on ``device``: all but cuDNN's on CUDA.

    cuDNN's fused attention (which torch picks for bf16 on Hopper GPUs) builds an execution plan
    for every new shape it meets and caches it by exact shape. Sampling meets a new shape at every
    decode step (the KV length grows by one, the batch shrinks as rows finish, the prompt width
    changes per call), so it rebuilds plans on the host step after step. On an H200 a bf16
    Qwen2-1.5B sampled 16 prompts at 147 ms a step on shapes it had not met and 22 ms once their
    plans were cached, and in ``scripts/gpu_check.sh`` the coder's generations took 7.6 s with
    cuDNN and 3.4 s without (``docs/performance.md``, "On one GPU"). Float32 never reaches cuDNN.
    Training forwards keep it (a step's micro-batches repeat shapes).
    """
    th = _require_torch()
    if th.device(device).type != "cuda":
        return contextlib.nullcontext()
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:  # pragma: no cover - torch < 2.3 has no such context
        return contextlib.nullcontext()
    return sdpa_kernel(
        [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]
    )


def left_padded(
    prompt_ids: Sequence[Sequence[int]], pad_id: int, device: Any
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(input_ids, attention_mask)`` of the prompts, padded on the left.

    Built on the CPU and moved to ``device`` in one copy each (not one copy per row).
    """
    th = _require_torch()
    width = max(len(ids) for ids in prompt_ids)
    input_ids = th.full((len(prompt_ids), width), pad_id, dtype=th.long)
    attention = th.zeros((len(prompt_ids), width), dtype=th.long)
    for row, ids in enumerate(prompt_ids):
        input_ids[row, width - len(ids) :] = th.tensor(list(ids), dtype=th.long)
        attention[row, width - len(ids) :] = 1
    return input_ids.to(device), attention.to(device)


class TransformersLM:
    """A :class:`~agents.lm.interfaces.LanguageModel` over a ``transformers`` causal LM.

    Args:
        model_or_path: A local model directory or hub name (loaded with
            :func:`agents.lm.models.load_model`), or a model object, used as is (the trainer
            passes its live model; its train/eval mode is restored after each call).
        tokenizer: The tokenizer; required with a model object, loaded from the path otherwise.
        device: Device for a model loaded from a path (default CPU). A model object stays where it
            is.
        dtype: dtype for a model loaded from a path (see
            :func:`agents.lm.models.resolve_dtype`).
        chat_template: Wrap each prompt as a user message in the tokenizer's chat template.
            ``None`` (default): when the tokenizer has one. ``True`` without a template raises.
        system_prompt: Optional system message when the chat template is used.
        batch_size: Most sequences sampled together; ``None`` puts all prompts in one batch.
        trust_remote_code: Passed to ``from_pretrained``.

    Raises:
        ValueError: With a model object but no tokenizer, or ``chat_template=True`` for a
            tokenizer without one.

    Example:
        >>> from agents.lm.models import build_tiny_model
        >>> from agents.lm.tokenizer import load_tiny_tokenizer
        >>> tok = load_tiny_tokenizer()
        >>> lm = TransformersLM(build_tiny_model("nano", tok), tok)
        >>> out = lm.generate(["def f(x):"], SamplingParams(max_new_tokens=4, seed=0))
        >>> len(out[0].completion_ids) <= 4
        True

    """

    def __init__(
        self,
        model_or_path: Any,
        tokenizer: Any = None,
        device: str | torch.device | None = None,
        dtype: str | torch.dtype | None = None,
        *,
        chat_template: bool | None = None,
        system_prompt: str | None = None,
        batch_size: int | None = None,
        trust_remote_code: bool = False,
    ) -> None:
        from agents.lm.models import load_model, load_tokenizer

        if isinstance(model_or_path, (str, Path)):
            self.model = load_model(model_or_path, dtype, device, trust_remote_code)
            if tokenizer is None:
                tokenizer = load_tokenizer(model_or_path, trust_remote_code)
        else:
            self.model = model_or_path
            if tokenizer is None:
                raise ValueError("TransformersLM(model_object) needs its tokenizer")
        if tokenizer.pad_token_id is None and tokenizer.eos_token_id is not None:
            tokenizer.pad_token = tokenizer.eos_token
        self.tokenizer = tokenizer
        has_template = bool(getattr(tokenizer, "chat_template", None))
        if chat_template and not has_template:
            raise ValueError("chat_template=True but the tokenizer has no chat template")
        self.uses_chat_template: bool = has_template if chat_template is None else chat_template
        self.system_prompt = system_prompt
        if batch_size is not None and batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.batch_size = batch_size
        self._eos_ids = self._collect_eos_ids()
        self._cache_kwarg, self._keeps_logits = self._forward_conventions()

    # ------------------------------------------------------------------ prompts

    @property
    def device(self) -> torch.device:
        """The device of the model's parameters."""
        return next(self.model.parameters()).device

    def render(self, prompt: str) -> str:
        """Return the prompt text as the model sees it (chat template applied when used)."""
        if not self.uses_chat_template:
            return prompt
        messages = []
        if self.system_prompt is not None:
            messages.append({"role": "system", "content": self.system_prompt})
        messages.append({"role": "user", "content": prompt})
        return self.render_messages(messages)

    def render_messages(self, messages: Sequence[Mapping[str, str]]) -> str:
        """Render a chat conversation with the tokenizer's template, opening the reply turn.

        Raises:
            ValueError: If the tokenizer has no chat template.
        """
        if not getattr(self.tokenizer, "chat_template", None):
            raise ValueError("this model's tokenizer has no chat template")
        rendered = self.tokenizer.apply_chat_template(
            [dict(m) for m in messages], tokenize=False, add_generation_prompt=True
        )
        return str(rendered)

    def encode_prompt(self, prompt: str) -> list[int]:
        """Return the token ids of a prompt as the model sees it.

        Raises:
            ValueError: If the prompt encodes to no tokens.
        """
        return self._encode_rendered(self.render(prompt))

    def _encode_rendered(self, rendered: str) -> list[int]:
        # a chat template writes its own special tokens (BOS...); plain text gets the tokenizer's
        ids = self.tokenizer(rendered, add_special_tokens=not self.uses_chat_template)["input_ids"]
        if not ids:
            raise ValueError("empty prompt: nothing to condition on")
        return list(ids)

    # ------------------------------------------------------------------ sampling

    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[Generation]:
        """Sample one completion per prompt (see :class:`~agents.lm.interfaces.SamplingParams`).

        Raises:
            ValueError: If a prompt is empty.
        """
        if isinstance(prompts, str):
            raise TypeError("generate() takes a sequence of prompts, not a single string")
        return self.generate_rendered([self.render(p) for p in prompts], params)

    def generate_rendered(
        self, rendered: Sequence[str], params: SamplingParams
    ) -> list[Generation]:
        """Sample from prompts that are already in the model's format (no template applied).

        Used by :mod:`agents.lm.serve` for raw completions and multi-turn chats.

        Raises:
            ValueError: If a prompt is empty.
        """
        _require_torch()
        if not rendered:
            return []
        encoded = [self._encode_rendered(text) for text in rendered]
        generators: list[torch.Generator] | None = None
        if params.seed is not None:
            generators = row_generators(params.seed, params.seed_offset, len(encoded))
        size = self.batch_size or len(encoded)
        was_training = self.model.training
        self.model.eval()
        try:
            results: list[Generation] = []
            for start in range(0, len(encoded), size):
                chunk = encoded[start : start + size]
                rows = None if generators is None else generators[start : start + size]
                results.extend(self._sample_batch(chunk, params, rows))
        finally:
            self.model.train(was_training)
        return [dataclasses.replace(g, prompt=r) for g, r in zip(results, rendered, strict=True)]

    def _sample_batch(
        self,
        prompt_ids: list[list[int]],
        params: SamplingParams,
        generator: Sequence[torch.Generator] | None,
    ) -> list[Generation]:
        th = _require_torch()
        device = self.device
        batch = len(prompt_ids)
        pad_id = int(self.tokenizer.pad_token_id)
        input_ids, attention = left_padded(prompt_ids, pad_id, device)
        positions = (attention.cumsum(-1) - 1).clamp(min=0)

        completions: list[list[int]] = [[] for _ in range(batch)]
        logprobs: list[list[float]] = [[] for _ in range(batch)]
        reasons: list[FinishReason] = ["length"] * batch
        done = [False] * batch
        stop_tail = max((len(s) for s in params.stop), default=0) * 4 + 4
        may_stop = stop_char_filter(self._decode_token, params.stop)
        # the rows still in the batch (indices into the call's rows) and their random streams
        present = list(range(batch))
        streams = None if generator is None else list(generator)
        shrink = True

        with th.inference_mode(), decode_attention(device):
            logits, cache = self._forward(input_ids, attention, positions, None)
            for _ in range(params.max_new_tokens):
                ids, logp = sample_next(logits, params.temperature, params.top_p, streams)
                ids_list = ids.tolist()
                logp_list = logp.tolist()
                for slot, row in enumerate(present):
                    if done[row]:
                        continue
                    token = ids_list[slot]
                    completions[row].append(token)
                    logprobs[row].append(logp_list[slot])
                    if token in self._eos_ids or (
                        params.stop
                        and may_stop(token)
                        and self._tail_has_stop(completions[row], params, stop_tail)
                    ):
                        done[row] = True
                        reasons[row] = "stop"
                keep = [slot for slot, row in enumerate(present) if not done[row]]
                if not keep:
                    break
                stay = rows_to_keep(keep, len(present))
                if shrink and len(stay) < len(present):
                    # finished rows leave the batch. The rows that stay sample from the same
                    # distributions, with their own random streams; only the rounding of their
                    # logits may change in the last bits (a BLAS kernel's blocking depends on
                    # how many rows share the product).
                    kept = th.tensor(stay, dtype=th.long, device=device)
                    smaller = select_cache_rows(cache, kept)
                    if smaller is None:  # a cache type we cannot cut: keep stepping them all
                        shrink = False
                    else:
                        cache = smaller
                        ids, attention, positions = ids[kept], attention[kept], positions[kept]
                        present = [present[slot] for slot in stay]
                        if streams is not None:
                            streams = [streams[slot] for slot in stay]
                # finished rows not yet dropped keep stepping on padding; their output is ignored
                is_done = th.tensor([done[row] for row in present], device=device)
                ids = th.where(is_done, th.full_like(ids, pad_id), ids)
                attention = th.cat([attention, th.ones_like(attention[:, :1])], dim=-1)
                positions = positions[:, -1:] + 1
                logits, cache = self._forward(ids[:, None], attention, positions, cache)

        return [
            Generation(
                text=self._completion_text(completions[row], params.stop),
                prompt_ids=tuple(prompt_ids[row]),
                completion_ids=tuple(completions[row]),
                logprobs=tuple(logprobs[row]),
                finish_reason=reasons[row],
            )
            for row in range(batch)
        ]

    def _forward(
        self,
        input_ids: torch.Tensor,
        attention: torch.Tensor,
        positions: torch.Tensor,
        cache: Any,
    ) -> tuple[torch.Tensor, Any]:
        kwargs: dict[str, Any] = {
            "input_ids": input_ids,
            "attention_mask": attention,
            "position_ids": positions,
            "use_cache": True,
            self._cache_kwarg: cache,
        }
        if self._keeps_logits:
            kwargs["logits_to_keep"] = 1
        out = self.model(**kwargs)
        new_cache = out.get("cache")
        if new_cache is None:
            new_cache = out.get("past_key_values")
        return out.logits[:, -1, :], new_cache

    def _decode_token(self, ids: list[int]) -> str:
        return str(self.tokenizer.decode(ids, skip_special_tokens=True))

    def _tail_has_stop(self, completion: list[int], params: SamplingParams, tail: int) -> bool:
        text = self.tokenizer.decode(completion[-tail:], skip_special_tokens=True)
        return any(s in text for s in params.stop)

    def _completion_text(self, completion: list[int], stop: tuple[str, ...]) -> str:
        text = str(self.tokenizer.decode(completion, skip_special_tokens=True))
        cuts = [i for i in (text.find(s) for s in stop) if i >= 0]
        return text[: min(cuts)] if cuts else text

    # ------------------------------------------------------------------ setup

    def _collect_eos_ids(self) -> set[int]:
        ids: set[int] = set()
        if self.tokenizer.eos_token_id is not None:
            ids.add(int(self.tokenizer.eos_token_id))
        config = getattr(self.model, "generation_config", None)
        configured = getattr(config, "eos_token_id", None)
        if isinstance(configured, int):
            ids.add(configured)
        elif isinstance(configured, (list, tuple)):
            ids.update(int(i) for i in configured)
        return ids

    def _forward_conventions(self) -> tuple[str, bool]:
        """Name of the KV-cache argument and whether ``logits_to_keep`` is accepted.

        See :func:`cache_argument`. Wrapped models (PEFT) hide the signature, so the base
        model's ``forward`` is inspected.
        """
        return cache_argument(), accepts_logits_to_keep(self.model)
