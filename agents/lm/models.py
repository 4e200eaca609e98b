"""Causal LMs: the tiny Qwen2 models of the CPU preset, and loading any Hugging Face model.

The CPU preset builds a small Qwen2-architecture model from a config (no download) with the
shipped byte-level BPE tokenizer (:func:`agents.lm.tokenizer.load_tiny_tokenizer`):

======  ==========  ======  =====  =====  ===========  =================================
size    parameters  hidden  layers heads  KV heads     use
======  ==========  ======  =====  =====  ===========  =================================
nano    ~1.4M       128     5      4      2            unit tests, smoke runs
tiny    ~10M        256     9      8      4            the CPU training preset
small   ~47M        512     14     8      4            longer CPU runs
======  ==========  ======  =====  =====  ===========  =================================

(vocabulary 4096, embeddings tied with the output layer.) Real experiments load a pretrained model
(e.g. ``Qwen/Qwen2.5-Coder-1.5B-Instruct``) with :func:`load_model` from a local directory or,
when online, the Hugging Face hub.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase, Qwen2ForCausalLM

__all__ = [
    "TINY_SIZES",
    "model_path_problem",
    "ModelSize",
    "build_tiny_model",
    "count_parameters",
    "load_model",
    "load_tokenizer",
    "resolve_dtype",
    "tiny_config",
]

ModelSize = Literal["nano", "tiny", "small"]

TINY_SIZES: dict[str, dict[str, int]] = {
    "nano": {
        "hidden_size": 128,
        "intermediate_size": 352,
        "num_hidden_layers": 5,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
    },
    "tiny": {
        "hidden_size": 256,
        "intermediate_size": 1024,
        "num_hidden_layers": 9,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
    },
    "small": {
        "hidden_size": 512,
        "intermediate_size": 1536,
        "num_hidden_layers": 14,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
    },
}
"""Architecture of each tiny size (the rest of the Qwen2 config is shared)."""

_MAX_POSITIONS = 2048


_HUB_ID = re.compile(r"(\b[\w\-.]+\b/)?\b[\w\-.]{1,96}\b")
"""A Hugging Face hub id's form, ``NAME`` or ``NAMESPACE/NAME`` (``huggingface_hub``'s rule)."""


def model_path_problem(spec: str) -> str:
    """Why ``spec`` cannot name a model to load (``""`` when it can), without loading anything.

    A spec names a model when it is an existing directory or has a hub id's form; whether the hub
    or its cache holds such an id is known only when it loads.
    """
    path = Path(spec)
    if path.exists():
        return "" if path.is_dir() else f"{spec} is a file, not a model directory"
    if ".." in spec or "--" in spec or _HUB_ID.fullmatch(spec) is None:
        return f"no model directory {spec}, and not a hub id (NAMESPACE/NAME)"
    return ""


def _require_transformers() -> Any:
    try:
        import transformers
    except ImportError as exc:
        raise ImportError(
            "language models need torch and transformers: pip install 'codea1[train]'"
        ) from exc
    return transformers


def resolve_dtype(dtype: str | torch.dtype | None) -> torch.dtype | str | None:
    """Map a dtype name (``"float32"``, ``"bf16"``...) to a ``torch.dtype``.

    ``"auto"``, ``None`` and ``torch.dtype`` values are passed through.

    Raises:
        ValueError: On an unknown dtype name.

    """
    if dtype is None or not isinstance(dtype, str):
        return dtype
    if dtype == "auto":
        return "auto"
    import torch

    aliases = {
        "float32": torch.float32,
        "fp32": torch.float32,
        "float": torch.float32,
        "bfloat16": torch.bfloat16,
        "bf16": torch.bfloat16,
        "float16": torch.float16,
        "fp16": torch.float16,
        "half": torch.float16,
    }
    if dtype not in aliases:
        raise ValueError(f"unknown dtype {dtype!r}; expected one of {sorted(aliases)} or 'auto'")
    return aliases[dtype]


def tiny_config(size: ModelSize, tokenizer: PreTrainedTokenizerBase) -> Any:
    """Build the ``Qwen2Config`` of a tiny size, with vocabulary and special ids from ``tokenizer``.

    Raises:
        ValueError: On an unknown size.

    """
    if size not in TINY_SIZES:
        raise ValueError(f"unknown tiny model size {size!r}; expected one of {sorted(TINY_SIZES)}")
    transformers = _require_transformers()
    eos = tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    return transformers.Qwen2Config(
        vocab_size=len(tokenizer),
        max_position_embeddings=_MAX_POSITIONS,
        tie_word_embeddings=True,
        rms_norm_eps=1e-6,
        bos_token_id=eos,
        eos_token_id=eos,
        pad_token_id=pad,
        **TINY_SIZES[size],
    )


def build_tiny_model(
    size: ModelSize = "nano",
    tokenizer: PreTrainedTokenizerBase | None = None,
    seed: int = 0,
) -> Qwen2ForCausalLM:
    """Build a randomly initialised tiny Qwen2 causal LM (float32, CPU).

    Initialisation uses ``seed`` without disturbing the caller's global RNG state.

    Args:
        size: ``"nano"`` (~1.4M parameters), ``"tiny"`` (~10M) or ``"small"`` (~47M).
        tokenizer: Its vocabulary size and special ids go into the config; default: the shipped
            tokenizer (:func:`agents.lm.tokenizer.load_tiny_tokenizer`).
        seed: Initialisation seed.

    """
    transformers = _require_transformers()
    import torch

    if tokenizer is None:
        from agents.lm.tokenizer import load_tiny_tokenizer

        tokenizer = load_tiny_tokenizer()
    config = tiny_config(size, tokenizer)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = transformers.Qwen2ForCausalLM(config)
    model.generation_config.pad_token_id = config.pad_token_id
    model.generation_config.eos_token_id = config.eos_token_id
    model.eval()
    return model


def count_parameters(model: Any) -> int:
    """Count distinct parameters (tied weights counted once)."""
    seen: set[int] = set()
    total = 0
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            total += p.numel()
    return total


def load_model(
    path_or_name: str | Path,
    dtype: str | torch.dtype | None = None,
    device: str | torch.device | None = None,
    trust_remote_code: bool = False,
) -> PreTrainedModel:
    """Load any causal LM with ``AutoModelForCausalLM`` from a local directory or a hub name.

    Args:
        path_or_name: A directory written by ``save_pretrained`` or a hub id (needs network or a
            filled local cache).
        dtype: ``None`` (the library default, float32), ``"auto"`` (the checkpoint's), a name such
            as ``"bfloat16"``, or a ``torch.dtype``.
        device: Where to put the model, e.g. ``"cpu"`` or ``"cuda:0"``; default CPU.
        trust_remote_code: Passed to ``from_pretrained``.

    Returns:
        The model, in eval mode.

    Raises:
        OSError: If the path or hub id cannot be loaded (the message names it).

    """
    transformers = _require_transformers()
    kwargs: dict[str, Any] = {"trust_remote_code": trust_remote_code}
    resolved = resolve_dtype(dtype)
    if resolved is not None:
        kwargs["dtype"] = resolved
    try:
        model = transformers.AutoModelForCausalLM.from_pretrained(str(path_or_name), **kwargs)
    except OSError as exc:
        raise OSError(f"cannot load a causal LM from {str(path_or_name)!r}: {exc}") from exc
    if device is not None:
        model = model.to(device)
    model.eval()
    return model


_GENERIC_TOKENIZERS = frozenset({"TokenizersBackend", "PreTrainedTokenizerFast"})


def _declares_generic_tokenizer(directory: Path) -> bool:
    """Whether a model directory's tokenizer is its ``tokenizer.json`` as is (a generic class)."""
    config = directory / "tokenizer_config.json"
    if not (directory / "tokenizer.json").is_file() or not config.is_file():
        return False
    try:
        declared = json.loads(config.read_text(encoding="utf-8")).get("tokenizer_class")
    except (OSError, ValueError, AttributeError):
        return False
    return declared in _GENERIC_TOKENIZERS


def load_tokenizer(
    path_or_name: str | Path, trust_remote_code: bool = False
) -> PreTrainedTokenizerBase:
    """Load the tokenizer of a model directory or hub id, ready for batched generation.

    Padding goes on the left; a tokenizer without a pad token gets its EOS token as pad.

    Raises:
        OSError: If it cannot be loaded, or what loads encodes no text (a model directory
            without its tokenizer files, for which transformers builds an empty one); the
            message names the path.
        ValueError: If it has neither a pad nor an EOS token.

    """
    transformers = _require_transformers()
    # A directory whose tokenizer_config.json declares the generic class (as the shipped tiny
    # tokenizer saves itself) is loaded as its tokenizer.json says. AutoTokenizer would build
    # the class registered for config.json's model type instead (Qwen2Tokenizer for a tiny
    # Qwen2 model), whose own pre-tokenizer splits text differently than training did.
    loader = (
        transformers.PreTrainedTokenizerFast
        if _declares_generic_tokenizer(Path(path_or_name))
        else transformers.AutoTokenizer
    )
    try:
        tokenizer = loader.from_pretrained(str(path_or_name), trust_remote_code=trust_remote_code)
    except OSError as exc:
        raise OSError(f"cannot load a tokenizer from {str(path_or_name)!r}: {exc}") from exc
    if len(tokenizer) < 2 or not tokenizer("def f(x):", add_special_tokens=False)["input_ids"]:
        raise OSError(
            f"no usable tokenizer in {str(path_or_name)!r}: it has {len(tokenizer)} token(s) "
            "(are the tokenizer files, e.g. tokenizer.json, missing from the model directory?)"
        )
    if tokenizer.pad_token_id is None:
        if tokenizer.eos_token is None:
            raise ValueError(f"tokenizer of {str(path_or_name)!r} has no pad or eos token")
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    return tokenizer
