"""The byte-level BPE tokenizer of the CPU preset: training, and loading the shipped file.

The CPU preset's tiny Qwen2 models (:mod:`agents.lm.models`) need a tokenizer that exists
without a download. This module trains one with the Hugging Face ``tokenizers`` library on Python
source (the standard library, plus the text of the package's own problems when they are importable)
and loads the result, shipped as ``agents/assets/tokenizer.json``, as a
``transformers`` fast tokenizer. ``scripts/train_tokenizer.py`` regenerates the shipped file.

Byte-level means every string round-trips exactly (no unknown token), which matters for code:
indentation and odd characters in a tester's output survive encoding.
"""

from __future__ import annotations

import logging
import sysconfig
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerBase

__all__ = [
    "EOS_TOKEN",
    "PAD_TOKEN",
    "SPECIAL_TOKENS",
    "TOKENIZER_PATH",
    "corpus_texts",
    "load_tiny_tokenizer",
    "problem_texts",
    "stdlib_texts",
    "train_bpe",
]

log = logging.getLogger(__name__)

EOS_TOKEN = "<|endoftext|>"
"""End of a document; the tiny models stop generating when they emit it."""
PAD_TOKEN = "<|pad|>"
"""Padding (left padding for generation, right padding for training batches)."""
SPECIAL_TOKENS: tuple[str, ...] = (EOS_TOKEN, PAD_TOKEN)
TOKENIZER_PATH = Path(__file__).resolve().parents[1] / "assets" / "tokenizer.json"
"""Where the shipped tokenizer lives (package data)."""

_SKIPPED_STDLIB_DIRS = frozenset({"site-packages", "test", "tests", "idlelib", "turtledemo"})


def _require_tokenizers() -> Any:
    try:
        import tokenizers
    except ImportError as exc:
        raise ImportError(
            "training the tokenizer needs the `tokenizers` library: pip install 'codea1[train]'"
        ) from exc
    return tokenizers


def stdlib_texts(root: Path | None = None) -> Iterator[str]:
    """Yield the sources of the running interpreter's standard library, in sorted path order.

    Test suites, IDLE, turtle demos and ``site-packages`` are left out. Unreadable files are
    skipped.

    Args:
        root: The standard library directory (default: this interpreter's).

    """
    base = Path(root) if root is not None else Path(sysconfig.get_paths()["stdlib"])
    for path in sorted(base.rglob("*.py")):
        if _SKIPPED_STDLIB_DIRS.intersection(path.relative_to(base).parts):
            continue
        try:
            yield path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue


def problem_texts(procedural_count: int = 2000) -> tuple[list[str], list[str]]:
    """Text of the package's own problems, when their sources are importable.

    Each problem contributes its prompt, its GT program and its GT tests, and the same problem as
    the compact prompts of :mod:`agents.players.prompts` show it to the tiny models. Sources: the
    built-in bank (``codea1_env.problems.load_source("bank")``) and the first
    ``procedural_count`` problems of the procedural family's *train* split
    (``codea1_env.problems.ProceduralSource``); held-out problems are not used.

    Returns:
        ``(texts, used)``: the texts, and the names of the sources that were available.
    """
    texts: list[str] = []
    used: list[str] = []
    try:
        from codea1_env import problems
    except ImportError:
        return texts, used
    load_source = getattr(problems, "load_source", None)
    if load_source is not None:
        try:
            bank = load_source("bank")
            texts.extend(_problem_text(bank[task_id]) for task_id in bank.ids())
            used.append("bank")
        except Exception as exc:  # a missing or broken data file must not stop training
            log.warning("problem bank unavailable for tokenizer training: %s", exc)
    procedural = getattr(problems, "ProceduralSource", None)
    if procedural is not None and procedural_count > 0:
        try:
            source = procedural(seed=0, split="train")
            count = min(procedural_count, len(source))
            texts.extend(_problem_text(source.problem_at(i)) for i in range(count))
            used.append("procedural")
        except Exception as exc:
            log.warning("procedural problems unavailable for tokenizer training: %s", exc)
    return texts, used


def _problem_text(problem: Any) -> str:
    from agents.players.prompts import CODER_COMPACT, TESTER_COMPACT, PromptTemplate

    program = problem.gt_program.strip("\n")
    tests = "\n".join(problem.tests)
    observation = {"prompt": problem.prompt, "entry_point": problem.entry_point, "code": program}
    coder = PromptTemplate(CODER_COMPACT).render_observation(observation)
    tester = PromptTemplate(TESTER_COMPACT).render_observation(observation)
    parts = [
        problem.prompt,
        program,
        tests,
        coder + "\n" + program + "\n```",
        tester + "\n" + tests + "\n```",
    ]
    return "\n".join(p for p in parts if p)


def corpus_texts(
    extra: Iterable[str] = (), problem_repeats: int = 4
) -> tuple[list[str], dict[str, Any]]:
    """Collect the default training corpus: stdlib sources, problem texts (repeated) and ``extra``.

    Problem texts are repeated ``problem_repeats`` times so that the short, regular shapes the tiny
    models see in training (``def f(x: int) -> int:``, ``assert f(3) == 4``) get their merges.

    Returns:
        ``(texts, summary)``; ``summary`` records the sources used and the corpus size.

    """
    stdlib = list(stdlib_texts())
    problems, used = problem_texts()
    extra_list = list(extra)
    texts = stdlib + problems * problem_repeats + extra_list
    summary = {
        "stdlib_files": len(stdlib),
        "problem_texts": len(problems),
        "problem_sources": used,
        "extra_texts": len(extra_list),
        "chars": sum(len(t) for t in texts),
    }
    return texts, summary


def train_bpe(texts: Iterable[str], vocab_size: int = 4096, min_frequency: int = 2) -> Tokenizer:
    """Train a byte-level BPE tokenizer (GPT-2 pre-tokenisation, no prefix space).

    The special tokens :data:`SPECIAL_TOKENS` get ids 0 and 1; all 256 byte symbols are in the
    vocabulary, so any text encodes and decodes back exactly.

    Args:
        texts: Training documents.
        vocab_size: Target vocabulary size, special tokens included.
        min_frequency: Minimum pair count for a merge.

    Returns:
        A ``tokenizers.Tokenizer``; save it with ``.save(path)``.

    Raises:
        ValueError: If ``vocab_size`` cannot hold the byte alphabet and the special tokens.

    """
    tk = _require_tokenizers()
    alphabet = tk.pre_tokenizers.ByteLevel.alphabet()
    if vocab_size < len(alphabet) + len(SPECIAL_TOKENS):
        raise ValueError(f"vocab_size {vocab_size} is below the byte alphabet size + specials")
    tokenizer = tk.Tokenizer(tk.models.BPE())
    tokenizer.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = tk.decoders.ByteLevel()
    trainer = tk.trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=alphabet,
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    return tokenizer


def load_tiny_tokenizer(path: str | Path | None = None) -> PreTrainedTokenizerBase:
    """Load the shipped (or a given) ``tokenizer.json`` as a ``transformers`` fast tokenizer.

    EOS is ``<|endoftext|>``, padding ``<|pad|>`` on the left (the side generation needs;
    training code that wants right padding sets ``padding_side`` itself). There is no chat
    template: the tiny models take plain-text prompts.

    Args:
        path: A ``tokenizer.json``; default :data:`TOKENIZER_PATH`.

    Raises:
        FileNotFoundError: If the file is missing (regenerate it with
            ``python scripts/train_tokenizer.py``).
        ImportError: Without ``transformers`` (``pip install 'codea1[train]'``).

    """
    file = Path(path) if path is not None else TOKENIZER_PATH
    if not file.is_file():
        raise FileNotFoundError(
            f"tokenizer file {file} not found; create it with `python scripts/train_tokenizer.py`"
        )
    try:
        from transformers import PreTrainedTokenizerFast
    except ImportError as exc:
        raise ImportError(
            "loading the tokenizer needs transformers: pip install 'codea1[train]'"
        ) from exc
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_file=str(file),
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        padding_side="left",
        model_max_length=2048,
        clean_up_tokenization_spaces=False,
    )
    return tokenizer
