"""vLLM generation for GPU runs (optional extra ``codea1[vllm]``) and backend selection.

:func:`select_generation_backend` decides which engine samples rollouts: ``"vllm"`` only when
vLLM imports **and** a CUDA GPU is visible, ``"transformers"`` otherwise (CPU machines, or vLLM
missing), and logs one line saying which runs and why. :class:`VLLMLM` is the
:class:`~agents.lm.interfaces.LanguageModel` over ``vllm.LLM``;
:class:`agents.lm.transformers_lm.TransformersLM` is the fallback with the same interface.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from agents.lm.interfaces import FinishReason, Generation, SamplingParams

__all__ = ["Backend", "VLLMLM", "select_generation_backend", "vllm_available"]

log = logging.getLogger(__name__)

Backend = Literal["vllm", "transformers"]

_VLLM_EXTRA = "pip install 'codea1[vllm]' (vLLM needs a CUDA GPU)"


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError as exc:
        raise ImportError(f"VLLMLM needs vLLM: {_VLLM_EXTRA}") from exc
    return vllm


def vllm_available() -> tuple[bool, str]:
    """Whether vLLM can run here, and why not when it cannot.

    Returns:
        ``(True, "vLLM <version> with CUDA device <name>")`` or ``(False, reason)``.
    """
    try:
        import vllm
    except Exception as exc:  # ImportError, or a broken install raising anything on import
        return False, f"vLLM is not importable ({type(exc).__name__}: {exc}); {_VLLM_EXTRA}"
    try:
        import torch
    except ImportError:
        return False, "torch is not installed"
    if not torch.cuda.is_available():
        return False, "vLLM is installed but torch.cuda.is_available() is False (no CUDA GPU)"
    version = getattr(vllm, "__version__", "?")
    return True, f"vLLM {version} with CUDA device {torch.cuda.get_device_name(0)}"


def select_generation_backend(prefer: str = "auto") -> Backend:
    """Choose the rollout engine and log one line saying which runs and why.

    Args:
        prefer: ``"auto"`` (vLLM when it can run, else transformers), ``"transformers"`` (always),
            or ``"vllm"`` (required: an error if it cannot run).

    Returns:
        ``"vllm"`` or ``"transformers"``.

    Raises:
        ValueError: On an unknown ``prefer``.
        RuntimeError: With ``prefer="vllm"`` when vLLM cannot run here (the message says why).
    """
    if prefer not in ("auto", "vllm", "transformers"):
        raise ValueError(f"unknown generation backend {prefer!r}; use auto, vllm or transformers")
    if prefer == "transformers":
        log.info("generation backend: transformers (requested)")
        return "transformers"
    ok, reason = vllm_available()
    if ok:
        log.info("generation backend: vllm (%s)", reason)
        return "vllm"
    if prefer == "vllm":
        raise RuntimeError(f"generation backend vllm was requested but cannot run: {reason}")
    log.info("generation backend: transformers, because %s", reason)
    return "transformers"


class VLLMLM:
    """A :class:`~agents.lm.interfaces.LanguageModel` over an offline ``vllm.LLM`` engine.

    Args:
        model: A model directory or hub name.
        tokenizer: Optional tokenizer directory or name (default: the model's).
        dtype: ``"auto"``, ``"bfloat16"``, ``"float16"``...
        gpu_memory_utilization: Share of GPU memory vLLM may take (leave room for training).
        tensor_parallel_size: GPUs per engine.
        max_model_len: Longest prompt + completion; default: the model's.
        seed: Engine seed.
        chat_template: Wrap prompts in the tokenizer's chat template; ``None``: when it has one.
        system_prompt: Optional system message with the chat template.
        **engine_kwargs: More ``vllm.LLM`` arguments.

    Log-probabilities are requested after temperature and top-p (``logprobs_mode=
    "processed_logprobs"``, vLLM >= 0.10.2) so they match
    :class:`~agents.lm.interfaces.Generation`'s contract; an older vLLM reports the raw model
    distribution (a warning says so).

    Raises:
        ImportError: Without vLLM (the message names the ``vllm`` extra).
    """

    def __init__(
        self,
        model: str,
        tokenizer: str | None = None,
        dtype: str = "auto",
        gpu_memory_utilization: float = 0.5,
        tensor_parallel_size: int = 1,
        max_model_len: int | None = None,
        seed: int = 0,
        chat_template: bool | None = None,
        system_prompt: str | None = None,
        **engine_kwargs: Any,
    ) -> None:
        vllm = _import_vllm()
        self._vllm = vllm
        kwargs: dict[str, Any] = {
            "model": model,
            "tokenizer": tokenizer,
            "dtype": dtype,
            "gpu_memory_utilization": gpu_memory_utilization,
            "tensor_parallel_size": tensor_parallel_size,
            "max_model_len": max_model_len,
            "seed": seed,
            **engine_kwargs,
        }
        kwargs.setdefault("logprobs_mode", "processed_logprobs")
        try:
            self.llm = vllm.LLM(**kwargs)
            self.processed_logprobs = kwargs.get("logprobs_mode") == "processed_logprobs"
        except TypeError as exc:
            if "logprobs_mode" not in str(exc):
                raise
            kwargs.pop("logprobs_mode")
            log.warning(
                "this vLLM has no logprobs_mode: log-probabilities are those of the raw model "
                "distribution, not after temperature/top-p"
            )
            self.llm = vllm.LLM(**kwargs)
            self.processed_logprobs = False
        self.tokenizer = self.llm.get_tokenizer()
        has_template = bool(getattr(self.tokenizer, "chat_template", None))
        if chat_template and not has_template:
            raise ValueError("chat_template=True but the tokenizer has no chat template")
        self.uses_chat_template = has_template if chat_template is None else chat_template
        self.system_prompt = system_prompt

    def render(self, prompt: str) -> str:
        """Return the prompt text as the model sees it (chat template applied when used)."""
        if not self.uses_chat_template:
            return prompt
        messages = []
        if self.system_prompt is not None:
            messages.append({"role": "system", "content": self.system_prompt})
        messages.append({"role": "user", "content": prompt})
        return str(
            self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        )

    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[Generation]:
        """Sample one completion per prompt.

        Each prompt gets its own request seed (``params.seed + params.seed_offset + index``), so
        repeated prompts in one call (a GRPO group) give independent samples, and the same call
        gives the same ones.
        """
        if isinstance(prompts, str):
            raise TypeError("generate() takes a sequence of prompts, not a single string")
        if not prompts:
            return []
        rendered = [self.render(p) for p in prompts]
        per_request = [
            self._vllm.SamplingParams(
                n=1,
                temperature=params.temperature,
                top_p=params.top_p,
                max_tokens=params.max_new_tokens,
                stop=list(params.stop) or None,
                seed=None if params.seed is None else params.seed + params.seed_offset + i,
                logprobs=0,
            )
            for i in range(len(rendered))
        ]
        outputs = self.llm.generate(rendered, per_request, use_tqdm=False)
        return [_to_generation(out, text) for out, text in zip(outputs, rendered, strict=True)]

    def load_weights(self, named_parameters: Iterable[tuple[str, Any]]) -> None:
        """Copy updated weights (e.g. ``model.named_parameters()``) into the engine.

        Uses the colocated worker's model (as TRL does) and resets the prefix cache.

        Raises:
            RuntimeError: If this vLLM version does not expose the in-process model.
        """
        try:
            runner_model = self.llm.llm_engine.model_executor.driver_worker.model_runner.model
        except AttributeError as exc:
            raise RuntimeError(
                "this vLLM version does not expose the in-process model for weight updates; "
                "run with VLLM_ENABLE_V1_MULTIPROCESSING=0 or a vLLM release TRL supports"
            ) from exc
        for name, tensor in named_parameters:
            runner_model.load_weights([(name, tensor)])
        self.llm.reset_prefix_cache()


def _to_generation(output: Any, prompt: str) -> Generation:
    completion = output.outputs[0]
    ids = tuple(int(i) for i in completion.token_ids)
    logprobs: tuple[float, ...] = ()
    if completion.logprobs:
        logprobs = tuple(
            float(step[token].logprob) for step, token in zip(completion.logprobs, ids, strict=True)
        )
    finish: FinishReason = "length" if completion.finish_reason == "length" else "stop"
    return Generation(
        text=str(completion.text),
        prompt_ids=tuple(int(i) for i in (output.prompt_token_ids or ())),
        completion_ids=ids,
        logprobs=logprobs,
        finish_reason=finish,
        prompt=prompt,
    )
