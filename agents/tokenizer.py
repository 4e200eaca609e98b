"""Kept as a documented import path; the code lives in :mod:`agents.lm.tokenizer`."""

from agents.lm.tokenizer import (
    EOS_TOKEN,
    PAD_TOKEN,
    SPECIAL_TOKENS,
    TOKENIZER_PATH,
    corpus_texts,
    load_tiny_tokenizer,
    problem_texts,
    stdlib_texts,
    train_bpe,
)

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
