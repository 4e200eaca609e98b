"""LM policies: sampling loop, prompts, role policies.

(``policy.TesterPolicy`` is used through its module so pytest does not try to collect it.)
"""

from __future__ import annotations

import logging
import math
import sys
import types
from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip("torch", reason="needs the train extra: pip install 'codea1[train]'")

import torch

from agents.lm import transformers_lm
from agents.lm.interfaces import Generation, LanguageModel, Policy, SamplingParams
from agents.lm.models import build_tiny_model
from agents.lm.tokenizer import load_tiny_tokenizer
from agents.lm.transformers_lm import (
    TransformersLM,
    rows_to_keep,
    sample_next,
    select_cache_rows,
    stop_char_filter,
)
from agents.players import policy
from agents.players.policy import CODE_BLOCK_STOP, CoderPolicy
from agents.players.prompts import (
    CODER_COMPACT,
    CODER_PROMPT,
    TESTER_COMPACT,
    TESTER_PROMPT,
    PromptTemplate,
    close_code_block,
    ends_with_open_fence,
)
from agents.training.grpo import token_logprobs

CODER_OBS: dict[str, Any] = {
    "role": 0,
    "prompt": 'def f(x: int) -> int:\n    """Return x + 1 when x > 3, else x."""\n',
    "entry_point": "f",
    "code": "",
}
TESTER_OBS: dict[str, Any] = {
    **CODER_OBS,
    "role": 1,
    "code": "def f(x: int) -> int:\n    return x + 1\n",
}


@pytest.fixture(scope="module")
def tok() -> Any:
    return load_tiny_tokenizer()


@pytest.fixture(scope="module")
def model(tok: Any) -> Any:
    return build_tiny_model("nano", tok, seed=0)


@pytest.fixture(scope="module")
def lm(model: Any, tok: Any) -> TransformersLM:
    return TransformersLM(model, tok)


class ScriptedLM:
    """A LanguageModel that returns fixed completions and records its prompts."""

    def __init__(self, texts: Sequence[str], finish: str = "stop") -> None:
        self.texts = list(texts)
        self.finish = finish
        self.prompts: list[str] = []
        self.params: list[SamplingParams] = []

    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[Generation]:
        self.prompts.extend(prompts)
        self.params.append(params)
        return [
            Generation(text=self.texts[i % len(self.texts)], finish_reason=self.finish)  # type: ignore[arg-type]
            for i in range(len(prompts))
        ]


# ---------------------------------------------------------------- sampling params


def test_sampling_params_validation() -> None:
    p = SamplingParams(stop=["```"])  # type: ignore[arg-type]
    assert p.stop == ("```",)
    assert p.replace(seed=4).seed == 4
    for bad in (
        {"temperature": -0.1},
        {"top_p": 0.0},
        {"top_p": 1.5},
        {"max_new_tokens": 0},
        {"stop": ("",)},
        {"temperature": float("nan")},
    ):
        with pytest.raises(ValueError):
            SamplingParams(**bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        SamplingParams(stop="```")  # type: ignore[arg-type]


# ---------------------------------------------------------------- sample_next


def test_sample_next_top_p_nucleus_and_logprobs() -> None:
    probs = torch.tensor([[0.5, 0.3, 0.2]])
    logits = probs.log().repeat(400, 1)
    gen = torch.Generator().manual_seed(0)
    ids, logp = sample_next(logits, temperature=1.0, top_p=0.6, generator=gen)
    # nucleus: 0.5 < 0.6, so token 1 joins; 0.8 >= 0.6, token 2 is dropped; renormalised 5/8, 3/8
    assert set(ids.tolist()) == {0, 1}
    expected = torch.where(ids == 0, math.log(0.625), math.log(0.375))
    assert torch.allclose(logp, expected)
    share = (ids == 0).float().mean().item()
    assert 0.5 < share < 0.75


def test_sample_next_temperature_and_greedy() -> None:
    logits = torch.tensor([[0.0, math.log(3.0)]])
    ids, logp = sample_next(logits, 0.0, 1.0, None)
    assert ids.tolist() == [1]
    assert logp.item() == pytest.approx(math.log(0.75))
    gen = torch.Generator().manual_seed(1)
    ids, logp = sample_next(logits.repeat(8, 1), 2.0, 1.0, gen)
    s3 = math.sqrt(3.0)
    expected = torch.where(ids == 1, math.log(s3 / (1 + s3)), math.log(1 / (1 + s3)))
    assert torch.allclose(logp, expected)
    ids, _ = sample_next(torch.tensor([[0.0, 5.0, 4.9]]), 1.0, 1e-6, gen)
    assert ids.tolist() == [1]  # top_p this small keeps only the best token


# ---------------------------------------------------------------- TransformersLM


def test_left_padded_batch_matches_single_prompts(lm: TransformersLM) -> None:
    prompts = ["def f(x: int) -> int:", "x", "import os\nprint(os.getcwd())  # a longer one"]
    params = SamplingParams(temperature=0.0, max_new_tokens=10)
    batched = lm.generate(prompts, params)
    for prompt, gen in zip(prompts, batched, strict=True):
        single = lm.generate([prompt], params)[0]
        assert gen.completion_ids == single.completion_ids
        assert gen.logprobs == pytest.approx(single.logprobs, abs=1e-4)
        assert gen.prompt == prompt
        assert gen.prompt_ids == tuple(lm.tokenizer(prompt)["input_ids"])
        assert gen.finish_reason == "length"
        assert len(gen.completion_ids) == 10


def test_logprobs_are_those_of_the_sampling_distribution(lm: TransformersLM, model: Any) -> None:
    gen = lm.generate(["def g(a, b):"], SamplingParams(temperature=0.7, max_new_tokens=16, seed=3))[
        0
    ]
    ids = torch.tensor([list(gen.prompt_ids) + list(gen.completion_ids)])
    n_prompt = len(gen.prompt_ids)
    with torch.no_grad():
        logits = model(input_ids=ids).logits[:, n_prompt - 1 : -1]
    recomputed = token_logprobs(logits, ids[:, n_prompt:], temperature=0.7)[0]
    assert torch.allclose(recomputed, torch.tensor(gen.logprobs), atol=1e-4)


def test_seeds_reproduce_and_differ(lm: TransformersLM) -> None:
    params = SamplingParams(max_new_tokens=12, seed=5)
    prompts = ["def f(x):", "def f(x):", "class A:"]
    a = lm.generate(prompts, params)
    b = lm.generate(prompts, params)
    c = lm.generate(prompts, params.replace(seed=6))
    assert [g.completion_ids for g in a] == [g.completion_ids for g in b]
    assert [g.completion_ids for g in a] != [g.completion_ids for g in c]
    assert a[0].completion_ids != a[1].completion_ids  # same prompt, independent samples


def test_batch_size_chunks_and_empty_inputs(model: Any, tok: Any) -> None:
    chunked = TransformersLM(model, tok, batch_size=2)
    out = chunked.generate(["a", "b", "c"], SamplingParams(temperature=0.0, max_new_tokens=3))
    whole = TransformersLM(model, tok).generate(["a", "b", "c"], SamplingParams(0.0, 1.0, 3))
    assert [g.completion_ids for g in out] == [g.completion_ids for g in whole]
    assert chunked.generate([], SamplingParams()) == []
    with pytest.raises(ValueError, match="empty prompt"):
        chunked.generate([""], SamplingParams())
    with pytest.raises(TypeError):
        chunked.generate("abc", SamplingParams())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="batch_size"):
        TransformersLM(model, tok, batch_size=0)
    with pytest.raises(ValueError, match="tokenizer"):
        TransformersLM(model)


def test_stop_string_truncates_text_and_keeps_ids(lm: TransformersLM) -> None:
    params = SamplingParams(max_new_tokens=40, seed=11)
    full = lm.generate(["def f(x):"], params)[0]
    assert len(full.text) > 12
    stop = full.text[6:9]
    first = full.text.find(stop)
    stopped = lm.generate(["def f(x):"], params.replace(stop=(stop, "never-there")))[0]
    assert stopped.finish_reason == "stop"
    assert stopped.text == full.text[:first]
    # the ids stop with the token that completed the stop string: a prefix of the free run
    assert full.completion_ids[: len(stopped.completion_ids)] == stopped.completion_ids
    assert len(stopped.completion_ids) < len(full.completion_ids)
    assert len(stopped.logprobs) == len(stopped.completion_ids)


@pytest.mark.parametrize(("temperature", "top_p"), [(1.0, 1.0), (0.7, 0.9), (0.0, 1.0)])
def test_finished_rows_leave_the_batch_without_changing_the_others(
    lm: TransformersLM, monkeypatch: pytest.MonkeyPatch, temperature: float, top_p: float
) -> None:
    # common one-character stop strings end the 40 rows after 1 to ~20 tokens, so the batch is
    # cut several times
    prompts = [f"def f{i}(x):\n    return x + {i}\n" + "# note\n" * (i % 4) for i in range(40)]
    params = SamplingParams(temperature, top_p, 48, stop=("e", "t"), seed=7)
    cuts: list[int] = []
    real_select = transformers_lm.select_cache_rows

    def counting(cache: Any, rows: torch.Tensor) -> Any:
        cuts.append(len(rows))
        return real_select(cache, rows)

    monkeypatch.setattr(transformers_lm, "select_cache_rows", counting)
    cut = lm.generate(prompts, params)
    monkeypatch.setattr(transformers_lm, "select_cache_rows", lambda cache, rows: None)
    whole = lm.generate(prompts, params)
    lengths = sorted(len(g.completion_ids) for g in whole)
    assert lengths[0] < lengths[-1]  # rows end at different steps
    if temperature > 0:
        assert len(cuts) >= 2 and cuts == sorted(cuts, reverse=True) and cuts[-1] < 10
    for a, b in zip(cut, whole, strict=True):
        # the same tokens; a cut batch may round its logits differently in the last bits
        assert (a.completion_ids, a.text, a.finish_reason) == (
            b.completion_ids,
            b.text,
            b.finish_reason,
        )
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-5)


def test_rows_to_keep_cuts_once_an_eighth_has_finished() -> None:
    assert rows_to_keep([0, 1, 2], 3) == [0, 1, 2]  # nothing finished
    assert rows_to_keep(list(range(1, 64)), 64) == list(range(64))  # 1 of 64: not yet
    assert rows_to_keep(list(range(8, 64)), 64) == list(range(8, 64))  # an eighth: cut
    assert rows_to_keep([40, 5], 64) == [5, 40]
    assert rows_to_keep([2], 4) == [2]
    assert rows_to_keep([], 16) == []


def test_select_cache_rows_cuts_caches_it_knows() -> None:
    from transformers import DynamicCache

    keys = torch.arange(24.0).reshape(3, 1, 4, 2)
    legacy = ((keys, keys + 100),)
    cut = select_cache_rows(legacy, torch.tensor([2, 0]))
    assert torch.equal(cut[0][0], keys[[2, 0]]) and torch.equal(cut[0][1], keys[[2, 0]] + 100)
    cache = DynamicCache()
    cache.update(keys, keys + 100, 0)
    assert select_cache_rows(cache, torch.tensor([1])) is cache
    assert torch.equal(cache.layers[0].keys, keys[[1]])
    assert select_cache_rows(None, torch.tensor([0])) is None
    assert select_cache_rows(object(), torch.tensor([0])) is None


def test_stop_char_filter_passes_every_token_that_may_complete_a_stop(tok: Any) -> None:
    def decode(ids: list[int]) -> str:
        return str(tok.decode(ids, skip_special_tokens=True))

    may_stop = stop_char_filter(decode, ("\n```",))
    fence = tok("```")["input_ids"][-1]
    word = tok("hello")["input_ids"][0]
    assert "`" in decode([fence]) and may_stop(fence)
    assert "`" not in decode([word]) and not may_stop(word)
    # every token whose text alone is not its text in context passes
    partial = [i for i in range(len(tok)) if "\ufffd" in decode([i])]
    assert partial and all(may_stop(i) for i in partial)
    always = stop_char_filter(decode, ("end\n",))  # whitespace moves between tokens
    assert always(word) and stop_char_filter(decode, ())(word)


def test_eos_ends_a_completion(model: Any, tok: Any) -> None:
    params = SamplingParams(temperature=0.0, max_new_tokens=20)
    free = TransformersLM(model, tok).generate(["x = 1"], params)[0]
    eos_like = free.completion_ids[3]
    saved = model.generation_config.eos_token_id
    model.generation_config.eos_token_id = [saved, eos_like]
    try:
        ended = TransformersLM(model, tok).generate(["x = 1"], params)[0]
    finally:
        model.generation_config.eos_token_id = saved
    cut = free.completion_ids.index(eos_like) + 1
    assert ended.completion_ids == free.completion_ids[:cut]
    assert ended.finish_reason == "stop"


def test_train_mode_is_restored(model: Any, tok: Any) -> None:
    model.train()
    try:
        TransformersLM(model, tok).generate(["a"], SamplingParams(max_new_tokens=2, seed=0))
        assert model.training
    finally:
        model.eval()


def test_chat_template_is_used_when_present(model: Any, tok: Any) -> None:
    with pytest.raises(ValueError, match="chat template"):
        TransformersLM(model, tok, chat_template=True)
    chat_tok = load_tiny_tokenizer()
    chat_tok.chat_template = (
        "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}"
    )
    chat_lm = TransformersLM(model, chat_tok, system_prompt="be brief")
    assert chat_lm.uses_chat_template
    assert chat_lm.render("hi") == "<system>be brief\n<user>hi\n<assistant>"
    gen = chat_lm.generate(["hi"], SamplingParams(max_new_tokens=2, seed=0))[0]
    assert gen.prompt == "<system>be brief\n<user>hi\n<assistant>"
    assert gen.prompt_ids == tuple(chat_tok(gen.prompt, add_special_tokens=False)["input_ids"])
    plain = TransformersLM(model, chat_tok, chat_template=False)
    assert plain.render("hi") == "hi"


def test_protocols_are_satisfied(lm: TransformersLM) -> None:
    assert isinstance(lm, LanguageModel)
    assert isinstance(CoderPolicy(lm), Policy)
    assert isinstance(policy.TesterPolicy(lm), Policy)


# ---------------------------------------------------------------- prompts


def test_templates_validate_fields() -> None:
    with pytest.raises(ValueError, match="unknown template field"):
        PromptTemplate("{problem}")
    with pytest.raises(ValueError, match="named fields"):
        PromptTemplate("{}")
    with pytest.raises(ValueError, match="invalid"):
        PromptTemplate("{prompt")
    for reaching in ("{num_tests[0]}", "{prompt.__class__.__mro__}"):
        with pytest.raises(ValueError, match="not indexed or read into"):
            PromptTemplate(reaching)  # failed at the first act(), or rendered a class
    for bad in ("{prompt!z}", "{num_tests:q}"):
        with pytest.raises(ValueError, match="does not render"):
            PromptTemplate(bad)
    assert PromptTemplate("{num_tests:>3} {prompt!r}").render(num_tests=8, prompt="p") == "  8 'p'"
    t = PromptTemplate("Solve {entry_point}: {{literal}} {prompt}")
    assert t.fields == {"entry_point", "prompt"}
    assert t.render(entry_point="g", prompt="p", code="unused") == "Solve g: {literal} p"
    with pytest.raises(KeyError):
        t.render(prompt="p")
    with pytest.raises(ValueError, match="lacks"):
        t.render_observation({"prompt": "p"})


def test_builtin_templates_render_an_observation() -> None:
    for text in (CODER_PROMPT, CODER_COMPACT, TESTER_PROMPT, TESTER_COMPACT):
        PromptTemplate(text)
    tester = PromptTemplate(TESTER_PROMPT).render_observation(TESTER_OBS, num_tests=8)
    assert TESTER_OBS["code"].rstrip() in tester
    assert "exactly 8 unit tests" in tester
    assert "assert f(...) == expected" in tester
    coder = PromptTemplate(CODER_PROMPT).render_observation(CODER_OBS)
    assert "`f`" in coder and "```python" in coder


def test_compact_prompts_end_with_an_open_fence_not_a_newline() -> None:
    for text, obs in ((CODER_COMPACT, CODER_OBS), (TESTER_COMPACT, TESTER_OBS)):
        template = PromptTemplate(text)
        rendered = template.render_observation(obs)
        assert template.opens_code_block
        assert rendered.endswith("```python")
        assert not rendered.endswith("\n")
        assert ends_with_open_fence(rendered)
    assert not PromptTemplate(CODER_PROMPT).opens_code_block
    assert close_code_block("```python\nx = 1\n```") == "```python\nx = 1\n```"
    assert close_code_block("```python\nx = 1\n") == "```python\nx = 1\n```"
    assert close_code_block("x = 1") == "x = 1"


# ---------------------------------------------------------------- role policies


def test_coder_policy_compact_answers_are_closed_blocks() -> None:
    lm = ScriptedLM(["\ndef f(x: int) -> int:\n    return x + 1", "oops no newline"])
    coder = CoderPolicy(lm)
    answers = coder.act([CODER_OBS, CODER_OBS])
    assert answers[0] == "```python\ndef f(x: int) -> int:\n    return x + 1\n```"
    assert answers[1] == "```python\noops no newline\n```"
    assert lm.prompts[0] == PromptTemplate(CODER_COMPACT).render_observation(CODER_OBS)
    assert lm.params[0].stop == (CODE_BLOCK_STOP,)
    assert lm.params[0].temperature == 1.0


def test_chat_style_policy_keeps_the_models_own_fences() -> None:
    lm = ScriptedLM(["Here:\n```python\nassert f(4) == 5\n```", "```python\nassert f(0) == 0"])
    lm.uses_chat_template = True  # type: ignore[attr-defined]
    tester = policy.TesterPolicy(lm, num_tests=3)
    answers = tester.act([TESTER_OBS, TESTER_OBS])
    assert answers[0] == "Here:\n```python\nassert f(4) == 5\n```"
    assert answers[1] == "```python\nassert f(0) == 0\n```"
    assert "exactly 3 unit tests" in lm.prompts[0]
    assert TESTER_OBS["code"].rstrip() in lm.prompts[0]


def test_role_policies_reject_wrong_observations() -> None:
    coder = CoderPolicy(ScriptedLM(["x"]))
    tester = policy.TesterPolicy(ScriptedLM(["x"]))
    with pytest.raises(ValueError, match="tester"):
        coder.act([TESTER_OBS])
    with pytest.raises(ValueError, match="coder"):
        tester.act([CODER_OBS])
    with pytest.raises(ValueError, match="code"):
        tester.act([{"role": 1, "prompt": "p", "entry_point": "f"}])
    with pytest.raises(ValueError, match="num_tests"):
        policy.TesterPolicy(ScriptedLM(["x"]), num_tests=0)


def test_custom_template_and_params_override() -> None:
    lm = ScriptedLM(["assert f(1) == 1"])
    tester = policy.TesterPolicy(
        lm, template="Break {entry_point}:\n{code}", params=SamplingParams(0.0)
    )
    gens = tester.act_with_generations([TESTER_OBS], params=SamplingParams(0.5, seed=9))
    assert gens[0].text == "assert f(1) == 1"
    assert lm.prompts == ["Break f:\n" + TESTER_OBS["code"].rstrip()]
    assert lm.params[0].seed == 9
    assert tester.act([TESTER_OBS]) == ["assert f(1) == 1"]
    assert lm.params[1].temperature == 0.0


def test_policies_run_on_the_tiny_model(lm: TransformersLM) -> None:
    params = SamplingParams(max_new_tokens=24, seed=0, stop=(CODE_BLOCK_STOP,))
    coder = CoderPolicy(lm, params=params)
    tester = policy.TesterPolicy(lm, params=params)
    gens = coder.act_with_generations([CODER_OBS] * 2)
    assert all(len(g.completion_ids) == len(g.logprobs) <= 24 for g in gens)
    assert all(g.prompt.endswith("```python") for g in gens)
    for answer in coder.act([CODER_OBS]) + tester.act([TESTER_OBS]):
        assert answer.startswith("```python\n")
        assert answer.count("```") % 2 == 0


# ---------------------------------------------------------------- vLLM selection


def test_backend_selection_on_this_machine_picks_transformers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import importlib.util

    from agents.lm.vllm import select_generation_backend, vllm_available

    if importlib.util.find_spec("vllm") is not None and torch.cuda.is_available():
        pytest.skip("this machine can run vLLM; the CPU fallback is covered by the fakes below")
    ok, reason = vllm_available()
    assert not ok
    with caplog.at_level(logging.INFO, logger="agents.lm.vllm"):
        assert select_generation_backend("auto") == "transformers"
    (line,) = [r.getMessage() for r in caplog.records]
    assert line.startswith("generation backend: transformers, because ")
    assert reason in line
    assert "vLLM" in line or "CUDA" in line
    with pytest.raises(RuntimeError, match="vllm was requested but cannot run"):
        select_generation_backend("vllm")


def _fake_vllm(monkeypatch: pytest.MonkeyPatch, *, cuda: bool) -> types.ModuleType:
    fake = types.ModuleType("vllm")
    fake.__version__ = "0.0-fake"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", fake)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=0: "FakeGPU")
    return fake


def test_backend_selection_rules(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from agents.lm.vllm import select_generation_backend

    with pytest.raises(ValueError, match="unknown generation backend"):
        select_generation_backend("tgi")
    _fake_vllm(monkeypatch, cuda=False)
    with caplog.at_level(logging.INFO, logger="agents.lm.vllm"):
        assert select_generation_backend() == "transformers"
    assert "no CUDA GPU" in caplog.records[-1].getMessage()
    _fake_vllm(monkeypatch, cuda=True)
    with caplog.at_level(logging.INFO, logger="agents.lm.vllm"):
        assert select_generation_backend() == "vllm"
        assert select_generation_backend("transformers") == "transformers"
    messages = [r.getMessage() for r in caplog.records[-2:]]
    assert messages == [
        "generation backend: vllm (vLLM 0.0-fake with CUDA device FakeGPU)",
        "generation backend: transformers (requested)",
    ]


def test_vllm_lm_needs_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from agents.lm.vllm import VLLMLM

    monkeypatch.setitem(sys.modules, "vllm", None)  # makes `import vllm` fail
    with pytest.raises(ImportError, match=r"codea1\[vllm\]"):
        VLLMLM("some/model")


def test_vllm_lm_maps_requests_and_outputs(monkeypatch: pytest.MonkeyPatch, tok: Any) -> None:
    """VLLMLM against a stand-in with vLLM's offline API shape (no GPU here)."""
    from agents.lm.vllm import VLLMLM

    fake = _fake_vllm(monkeypatch, cuda=True)
    seen: dict[str, Any] = {}

    class FakeLLM:
        def __init__(self, **kwargs: Any) -> None:
            if "logprobs_mode" in kwargs:  # an older vLLM without the option
                raise TypeError("__init__() got an unexpected keyword argument 'logprobs_mode'")
            seen["engine"] = kwargs

        def get_tokenizer(self) -> Any:
            return tok

        def generate(self, prompts: list[str], params: list[Any], use_tqdm: bool) -> list[Any]:
            seen["prompts"], seen["params"] = prompts, params
            step = types.SimpleNamespace
            return [
                step(
                    prompt_token_ids=[5, 6],
                    outputs=[
                        step(
                            token_ids=[7, 8],
                            text=f"out{i}",
                            finish_reason="length" if i else "stop",
                            logprobs=[{7: step(logprob=-0.5)}, {8: step(logprob=-1.5)}],
                        )
                    ],
                )
                for i in range(len(prompts))
            ]

    fake.LLM = FakeLLM  # type: ignore[attr-defined]
    fake.SamplingParams = lambda **kw: kw  # type: ignore[attr-defined]
    lm = VLLMLM("dir", gpu_memory_utilization=0.3)
    assert not lm.processed_logprobs
    assert seen["engine"]["gpu_memory_utilization"] == 0.3
    assert not lm.uses_chat_template  # the tiny tokenizer has no chat template
    gens = lm.generate(["a", "a"], SamplingParams(0.7, 0.9, 5, stop=("```",), seed=10))
    assert [p["seed"] for p in seen["params"]] == [10, 11]  # distinct samples per prompt
    assert seen["params"][0]["stop"] == ["```"] and seen["params"][0]["max_tokens"] == 5
    assert gens[0] == Generation("out0", (5, 6), (7, 8), (-0.5, -1.5), "stop", "a")
    assert gens[1].finish_reason == "length"
