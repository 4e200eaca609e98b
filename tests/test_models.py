"""The tiny CPU models, the shipped tokenizer, and loading a model directory like a hub model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch", reason="needs the train extra: pip install 'codea1[train]'")

import torch

from agents.lm.interfaces import SamplingParams
from agents.lm.models import (
    TINY_SIZES,
    build_tiny_model,
    count_parameters,
    load_model,
    load_tokenizer,
    resolve_dtype,
    tiny_config,
)
from agents.lm.tokenizer import (
    EOS_TOKEN,
    PAD_TOKEN,
    TOKENIZER_PATH,
    load_tiny_tokenizer,
    stdlib_texts,
    train_bpe,
)
from agents.lm.transformers_lm import TransformersLM


@pytest.fixture(scope="module")
def tok() -> Any:
    return load_tiny_tokenizer()


# ---------------------------------------------------------------- tokenizer


def test_shipped_tokenizer_file_is_small_and_loads(tok: Any) -> None:
    assert TOKENIZER_PATH.is_file()
    assert TOKENIZER_PATH.stat().st_size < 400_000
    assert len(tok) == 4096
    assert tok.convert_ids_to_tokens([tok.eos_token_id, tok.pad_token_id]) == [EOS_TOKEN, PAD_TOKEN]
    assert tok.eos_token_id != tok.pad_token_id
    assert tok.padding_side == "left"


@pytest.mark.parametrize(
    "text",
    [
        "def f(x: int) -> int:\n    return x + 1\n",
        "assert f([1, 2]) == {'a': (3,)}\n\tx = '\\x00\\n'",
        "héllo wörld ✓ 日本語 \x07\x1b",
        "    \n\n   trailing spaces   ",
    ],
)
def test_tokenizer_round_trips_any_text(tok: Any, text: str) -> None:
    ids = tok(text)["input_ids"]
    assert tok.decode(ids) == text


def test_tokenizer_compresses_python(tok: Any) -> None:
    source = "def clamp(x: int, low: int, high: int) -> int:\n    return max(low, min(x, high))\n"
    assert len(source) / len(tok(source)["input_ids"]) > 2.5


def test_train_bpe_small_corpus() -> None:
    corpus = ["def add(a, b):\n    return a + b\n"] * 50 + ["assert add(1, 2) == 3\n"] * 50
    tokenizer = train_bpe(corpus, vocab_size=300, min_frequency=2)
    assert tokenizer.get_vocab_size() <= 300
    assert tokenizer.token_to_id(EOS_TOKEN) == 0
    assert tokenizer.token_to_id(PAD_TOKEN) == 1
    encoding = tokenizer.encode("def add(a, b):")
    assert len(encoding.ids) < len("def add(a, b):")  # merges were learned
    assert tokenizer.decode(tokenizer.encode("ünïcode ok").ids) == "ünïcode ok"
    with pytest.raises(ValueError, match="vocab_size"):
        train_bpe(corpus, vocab_size=100)


def test_stdlib_texts_skips_tests(tmp_path: Path) -> None:
    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "test_x.py").write_text("skipped")
    (tmp_path / "mod.py").write_text("kept")
    (tmp_path / "bad.py").write_bytes(b"\xff\xfe")
    assert list(stdlib_texts(tmp_path)) == ["kept"]


def test_missing_tokenizer_file_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="train_tokenizer.py"):
        load_tiny_tokenizer(tmp_path / "nope.json")


# ---------------------------------------------------------------- tiny models


@pytest.mark.parametrize(
    ("size", "low", "high"), [("nano", 1.2e6, 1.7e6), ("tiny", 8e6, 12e6), ("small", 40e6, 55e6)]
)
def test_tiny_model_sizes(tok: Any, size: str, low: float, high: float) -> None:
    config = tiny_config(size, tok)  # type: ignore[arg-type]
    assert config.model_type == "qwen2"
    assert config.tie_word_embeddings
    assert config.vocab_size == 4096
    assert config.eos_token_id == tok.eos_token_id
    assert config.pad_token_id == tok.pad_token_id
    if size == "nano":
        n = count_parameters(build_tiny_model("nano", tok))
    else:
        with torch.device("meta"):
            import transformers

            n = count_parameters(transformers.Qwen2ForCausalLM(config))
    assert low < n < high


def test_build_tiny_model_is_seeded_and_keeps_global_rng(tok: Any) -> None:
    torch.manual_seed(123)
    expected_next = torch.rand(1)
    torch.manual_seed(123)
    a = build_tiny_model("nano", tok, seed=7)
    after = torch.rand(1)
    assert torch.equal(after, expected_next)
    b = build_tiny_model("nano", tok, seed=7)
    c = build_tiny_model("nano", tok, seed=8)
    wa, wb, wc = (m.model.embed_tokens.weight for m in (a, b, c))
    assert torch.equal(wa, wb)
    assert not torch.equal(wa, wc)
    assert a.lm_head.weight.data_ptr() == a.model.embed_tokens.weight.data_ptr()  # tied
    assert not a.training


def test_unknown_size_and_dtype() -> None:
    with pytest.raises(ValueError, match="size"):
        build_tiny_model("huge")  # type: ignore[arg-type]
    assert resolve_dtype("bf16") is torch.bfloat16
    assert resolve_dtype("auto") == "auto"
    assert resolve_dtype(None) is None
    assert resolve_dtype(torch.float16) is torch.float16
    with pytest.raises(ValueError, match="dtype"):
        resolve_dtype("float8")
    assert set(TINY_SIZES) == {"nano", "tiny", "small"}


# ---------------------------------------------------------------- loading a model directory


def test_saved_model_directory_loads_like_a_hub_model(tok: Any, tmp_path: Path) -> None:
    model = build_tiny_model("nano", tok, seed=3)
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)

    loaded_tok = load_tokenizer(tmp_path)
    assert loaded_tok.padding_side == "left"
    assert loaded_tok.pad_token_id == tok.pad_token_id
    loaded = load_model(tmp_path, dtype="float32", device="cpu")
    assert not loaded.training
    assert count_parameters(loaded) == count_parameters(model)

    params = SamplingParams(temperature=0.0, max_new_tokens=12)
    prompts = ["def f(x: int) -> int:", "x = ["]
    from_path = TransformersLM(tmp_path).generate(prompts, params)
    in_memory = TransformersLM(model, tok).generate(prompts, params)
    assert [g.completion_ids for g in from_path] == [g.completion_ids for g in in_memory]
    assert [g.text for g in from_path] == [g.text for g in in_memory]

    bf16 = load_model(tmp_path, dtype="bfloat16")
    assert next(bf16.parameters()).dtype == torch.bfloat16


def test_load_model_error_names_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(OSError, match="no-such-model"):
        load_model(missing)
    with pytest.raises(OSError, match="no-such-model"):
        load_tokenizer(missing)


def test_a_model_directory_without_its_tokenizer_files_is_named(tok: Any, tmp_path: Path) -> None:
    """transformers builds an empty tokenizer there: it was accepted, and every prompt then
    came out empty ("nothing to condition on") after the run had been written."""
    model = build_tiny_model("nano", tok)
    model.save_pretrained(tmp_path / "model")
    with pytest.raises(OSError, match=r"no usable tokenizer in .*model.*tokenizer files"):
        load_tokenizer(tmp_path / "model")
    tok.save_pretrained(tmp_path / "model")
    assert len(load_tokenizer(tmp_path / "model")) == len(tok)
