"""The ``authors`` prompt style: the Code-A1 authors' coder and tester messages, word for word.

Sources (github.com/ZJU-REAL/Code-A1): the coder's messages are the ``prompt`` column of
``Code-A1/code/rl/val_data/validation_data_mix.parquet``, the tester's are built in
``Code-A1/code/rl/trainer_a1.py`` lines 443-468 (see ``agents/players/prompts.py``).
"""

from __future__ import annotations

import argparse
import typing
from pathlib import Path
from typing import Any

import pytest

from agents.players.prompts import (
    CODER_AUTHORS,
    CODER_AUTHORS_SYSTEM,
    PROMPT_STYLES,
    TESTER_AUTHORS,
    TESTER_AUTHORS_SFT,
    TESTER_AUTHORS_SYSTEM,
    PromptTemplate,
    prompt_style,
    with_system_prompt,
)
from agents.training.config import TrainConfig, from_preset
from codea1_env.scoring.extraction import extract_code
from codea1_env.scoring.testcases import parse_tests

PROBLEM = 'def add(a: int, b: int) -> int:\n    """Return a + b."""\n'
CODE = "def add(a: int, b: int) -> int:\n    return a - b\n"
CODER_OBS: dict[str, Any] = {"role": 0, "prompt": PROBLEM, "entry_point": "add", "code": ""}
TESTER_OBS: dict[str, Any] = {**CODER_OBS, "role": 1, "code": CODE}

# A jinja chat template like a chat model's: every message tagged with its role.
CHAT_TEMPLATE = (
    "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)

# The authors' coder message for HumanEval/0 as their validation parquet holds it (the question
# is the problem as given; ours is right-stripped, so a problem is written without its final
# newline here).
AUTHORS_CODER_USER = (
    "Given the following Question, complete the function. Output the complete function inside "
    "'```python ... ```' code block, and do not output anything else.\n\nQuestion:\n"
    "def add(a: int, b: int) -> int:\n"
    '    """Return a + b."""'
)

# A typical answer to the authors' tester prompt: 8 asserts in one python block.
AUTHORS_TESTER_ANSWER = """```python
assert add(1, 2) == 3
assert add(0, 0) == 0
assert add(-1, 1) == 0
assert add(-5, -7) == -12
assert add(10**9, 10**9) == 2000000000
assert add(3, -3) == 0
assert add(100, 1) == 101
assert add(2, 2) == 4
```"""


def _section_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("# ")]


# ---------------------------------------------------------------- templates


def test_the_styles_are_the_configs_literal() -> None:
    hints = typing.get_type_hints(TrainConfig)
    assert set(typing.get_args(hints["prompt_style"])) == set(PROMPT_STYLES)
    for name in PROMPT_STYLES:
        prompt_style(name)  # each one is known
    with pytest.raises(ValueError, match="unknown prompt style 'bogus'"):
        prompt_style("bogus")


def test_the_authors_style_selects_their_messages() -> None:
    style = prompt_style("authors")
    assert (style.coder, style.tester) == (CODER_AUTHORS, TESTER_AUTHORS)
    assert (
        style.system("coder")
        == CODER_AUTHORS_SYSTEM
        == "You are a helpful code completion assistant."
    )
    assert (
        style.system("tester")
        == TESTER_AUTHORS_SYSTEM
        == "You are a helpful test case generation assistant."
    )
    assert style.stop == () and style.chat_template is None
    with pytest.raises(ValueError, match="unknown role"):
        style.system("referee")
    # the other styles have no system message of their own
    for name in ("chat", "compact"):
        assert prompt_style(name).system("coder") is None
        assert prompt_style(name).system("tester") is None


def test_the_coder_message_is_the_authors() -> None:
    text = PromptTemplate(CODER_AUTHORS).render_observation(CODER_OBS)
    assert text == AUTHORS_CODER_USER


def test_the_tester_message_has_their_sections_the_question_and_the_code() -> None:
    text = PromptTemplate(TESTER_AUTHORS).render_observation(TESTER_OBS, num_tests=8)
    assert _section_lines(text) == [
        "# Role",
        "# Task",
        "# Strategy",
        "# Context",
        "# Output Format",
    ]
    assert text.startswith("\n# Role\nYou are specializing in finding specific inputs that cause")
    assert (
        "Generate 8 assertion-based test cases to detect bugs for the function in `Buggy Code` "
        "according to the `Question`." in text
    )
    assert "1. **Attack Logic Gaps**" in text and "2. **Prioritize Complexity**" in text
    assert (
        "Only the first few generated tests will be evaluated, so quality and ordering matter "
        "more than quantity." in text
    )
    assert "Question:\n" + PROBLEM.rstrip() + "\n\nBuggy Code:\n```python\n" in text
    assert "```python\n" + CODE.rstrip() + "\n```\n\n# Output Format" in text
    assert text.endswith(
        "Output ALL the assert statements inside ONE '```python ... ```' code block.\n"
        "Format: 'assert function_name(parameters) == answer'\n"
    )
    # the count is K (``num_tests``): 8 gives their text, another K asks for K
    other = PromptTemplate(TESTER_AUTHORS).render_observation(TESTER_OBS, num_tests=5)
    assert "Generate 5 assertion-based test cases" in other and "Generate 8" not in other


def test_the_sft_style_gives_their_shorter_tester_message() -> None:
    style = prompt_style("authors-sft")
    assert (style.coder, style.tester) == (CODER_AUTHORS, TESTER_AUTHORS_SFT)
    assert style.system("coder") == CODER_AUTHORS_SYSTEM
    assert style.system("tester") == TESTER_AUTHORS_SYSTEM
    assert style.stop == () and style.chat_template is None
    text = PromptTemplate(TESTER_AUTHORS_SFT).render_observation(TESTER_OBS, num_tests=8)
    assert text == (
        "Given the following Question, generate 8 assert-based test cases to detect bugs in the "
        "following python function Buggy Code. Each test case must be in the format: "
        "'assert function_name(parameters) == answer', and split by '\\n'. Output all assert "
        "statements inside '```python ... ```' code block, and do not output anything else.\n\n"
        "Question:\n" + PROBLEM.rstrip() + "\n\nBuggy Code:\n" + CODE.rstrip()
    )
    assert "split by '\\n'" in text and "```python\n" not in text  # a backslash and an n; no fence
    other = PromptTemplate(TESTER_AUTHORS_SFT).render_observation(TESTER_OBS, num_tests=5)
    assert other.startswith("Given the following Question, generate 5 assert-based test cases")


# ---------------------------------------------------------------- extraction


def test_the_extractors_read_answers_to_the_authors_prompts() -> None:
    parsed = parse_tests(AUTHORS_TESTER_ANSWER, "add")
    assert parsed.reason == "" and not parsed.rejected
    assert len(parsed.cases) == 8
    assert parsed.cases[0].call == "add(1, 2)" and parsed.cases[0].expected == "3"
    assert [c.call for c in parsed.cases][-1] == "add(2, 2)"
    # with a line of prose around the block, as a chat model may add
    chatty = "Here are the tests:\n\n" + AUTHORS_TESTER_ANSWER + "\n\nThese cover edge cases."
    assert len(parse_tests(chatty, "add").cases) == 8
    coder_answer = "```python\ndef add(a: int, b: int) -> int:\n    return a + b\n```"
    assert extract_code(coder_answer) == "def add(a: int, b: int) -> int:\n    return a + b"


# ---------------------------------------------------------------- config


def test_the_config_takes_the_style_and_names_the_field_for_a_bad_one() -> None:
    assert TrainConfig(prompt_style="authors").prompt_style == "authors"
    assert from_preset("nano", prompt_style="authors").prompt_style == "authors"
    with pytest.raises(ValueError, match="prompt_style") as info:
        TrainConfig(prompt_style="verbatim")  # type: ignore[arg-type]
    assert "authors" in str(info.value)


def test_the_train_flag_takes_the_style(capsys: pytest.CaptureFixture[str]) -> None:
    from agents.commands.train_cli import add_arguments, build_config

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert "{chat,compact,authors,authors-sft}" in parser.format_help()
    config = build_config(parser.parse_args(["--preset", "nano", "--prompt-style", "authors"]))
    assert config.prompt_style == "authors"
    with pytest.raises(SystemExit):
        parser.parse_args(["--prompt-style", "verbatim"])
    assert "--prompt-style" in capsys.readouterr().err


# ---------------------------------------------------------------- through a tokenizer

TRAIN_EXTRA = "needs the train extra: pip install 'codea1[train]'"


@pytest.fixture(scope="module")
def chat_tok() -> Any:
    pytest.importorskip("torch", reason=TRAIN_EXTRA)
    from agents.lm.tokenizer import load_tiny_tokenizer

    tok = load_tiny_tokenizer()
    tok.chat_template = CHAT_TEMPLATE
    return tok


@pytest.fixture(scope="module")
def model(chat_tok: Any) -> Any:
    from agents.lm.models import build_tiny_model

    return build_tiny_model("nano", chat_tok, seed=0)


def test_policies_render_both_messages_through_the_chat_template(model: Any, chat_tok: Any) -> None:
    from agents.lm.interfaces import Generation, SamplingParams
    from agents.lm.transformers_lm import TransformersLM
    from agents.players.policy import CoderPolicy, TesterPolicy

    style = prompt_style("authors")
    params = SamplingParams(max_new_tokens=2, seed=0)
    coder_lm = TransformersLM(
        model, chat_tok, chat_template=style.chat_template, system_prompt=style.system("coder")
    )
    tester_lm = with_system_prompt(coder_lm, style.system("tester"))  # one model, both roles
    assert tester_lm is not coder_lm and tester_lm.model is coder_lm.model
    assert coder_lm.system_prompt == CODER_AUTHORS_SYSTEM  # the original is left as it was

    coder = CoderPolicy(coder_lm, template=style.coder, params=params)
    gen = coder.act_with_generations([CODER_OBS])[0]
    assert gen.prompt == (
        f"<system>{CODER_AUTHORS_SYSTEM}\n<user>{AUTHORS_CODER_USER}\n<assistant>"
    )
    assert gen.prompt_ids == tuple(chat_tok(gen.prompt, add_special_tokens=False)["input_ids"])

    tester = TesterPolicy(tester_lm, template=style.tester, params=params, num_tests=8)
    gen = tester.act_with_generations([TESTER_OBS])[0]
    assert gen.prompt.startswith(f"<system>{TESTER_AUTHORS_SYSTEM}\n<user>\n# Role\n")
    assert "Question:\n" + PROBLEM.rstrip() in gen.prompt
    assert "```python\n" + CODE.rstrip() + "\n```" in gen.prompt
    assert gen.prompt.endswith("== answer'\n\n<assistant>")
    # an answer in their format closes into a block the tester's extractor reads
    answer = tester.answer(Generation(text=AUTHORS_TESTER_ANSWER))
    assert answer == AUTHORS_TESTER_ANSWER and len(parse_tests(answer, "add").cases) == 8


def test_without_a_chat_template_the_prompt_is_the_user_message(model: Any) -> None:
    from agents.lm.tokenizer import load_tiny_tokenizer
    from agents.lm.transformers_lm import TransformersLM

    style = prompt_style("authors")
    plain_tok = load_tiny_tokenizer()  # no chat template: plain text, no system message
    lm = TransformersLM(model, plain_tok, chat_template=None, system_prompt=style.system("coder"))
    assert not lm.uses_chat_template
    assert lm.render(AUTHORS_CODER_USER) == AUTHORS_CODER_USER


def _players(cfg: TrainConfig, chat: bool) -> tuple[Any, Any]:
    torch = pytest.importorskip("torch", reason=TRAIN_EXTRA)
    from agents.training.player import build_player

    cpu = torch.device("cpu")
    coder = build_player("coder", "builtin:nano", cfg, seed=0, lr=1e-4, device=cpu)
    tester = build_player("tester", "builtin:nano", cfg, seed=1, lr=1e-4, device=cpu)
    if chat:
        coder.tokenizer.chat_template = CHAT_TEMPLATE
        tester.tokenizer.chat_template = CHAT_TEMPLATE
    return coder, tester


def test_the_trainers_roles_sample_with_each_roles_system_message() -> None:
    pytest.importorskip("torch", reason=TRAIN_EXTRA)
    from agents.training.roles import RolePolicies

    cfg = from_preset("nano", prompt_style="authors", mode="self-play", rollout_dtype="float32")
    coder, _ = _players(cfg, chat=True)
    roles = RolePolicies(coder, coder, cfg)  # self-play: one model plays both roles
    assert roles.encoders["coder"].system_prompt == CODER_AUTHORS_SYSTEM
    assert roles.encoders["tester"].system_prompt == TESTER_AUTHORS_SYSTEM
    assert roles.lms["tester"].model is roles.lms["coder"].model is coder.model
    assert roles.stop == ()
    gens = {
        role: roles.generate(role, [obs], seed=0)[0]
        for role, obs in (("coder", CODER_OBS), ("tester", TESTER_OBS))
    }
    assert gens["coder"].prompt.startswith(f"<system>{CODER_AUTHORS_SYSTEM}\n<user>Given the")
    assert gens["tester"].prompt.startswith(f"<system>{TESTER_AUTHORS_SYSTEM}\n<user>\n# Role")
    # the warm start's answers are chat answers: a whole python block and EOS
    assert roles.answer_text("tester", "assert add(1, 2) == 3").startswith("```python\n")


class _FakeEngine:
    """Records the weights a vLLM engine would receive."""

    def __init__(self, spec: str, **options: Any) -> None:
        self.spec, self.options, self.loads = spec, options, 0
        self.system_prompt = options.get("system_prompt")

    def load_weights(self, named: Any) -> None:
        self.loads += 1


def test_one_engine_serves_both_roles_and_loads_once(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch", reason=TRAIN_EXTRA)
    from agents.lm import vllm
    from agents.training.roles import RolePolicies

    monkeypatch.setattr(vllm, "VLLMLM", _FakeEngine)
    monkeypatch.setattr(vllm, "select_generation_backend", lambda choice: "vllm")
    cfg = from_preset("nano", prompt_style="authors", mode="self-play")
    coder, _ = _players(cfg, chat=False)
    shared = RolePolicies(coder, coder, cfg, specs={"coder": "dir/a", "tester": "dir/a"})
    views = shared.lms["coder"], shared.lms["tester"]
    assert [v.system_prompt for v in views] == [CODER_AUTHORS_SYSTEM, TESTER_AUTHORS_SYSTEM]
    assert views[0].options is views[1].options  # the same engine, rendered two ways
    shared.sync()
    assert views[0].loads + views[1].loads == 1


def test_a_checkpoint_policy_keeps_each_roles_system_message(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason=TRAIN_EXTRA)
    from agents.evaluation.policies import EvalSettings, load_policy
    from agents.training.trainer import Trainer

    run_dir = tmp_path / "run"
    cfg = from_preset(
        "nano", prompt_style="authors", mode="self-play", steps=1, output_dir=str(run_dir)
    )
    Trainer(cfg, log=lambda _m: None).train()  # the builtin tokenizer: plain-text prompts
    policy = load_policy(f"checkpoint:{run_dir}", None, EvalSettings())  # type: ignore[arg-type]
    assert policy.coder is not None and policy.tester is not None
    assert policy.coder.lm.system_prompt == CODER_AUTHORS_SYSTEM  # type: ignore[attr-defined]
    assert policy.tester.lm.system_prompt == TESTER_AUTHORS_SYSTEM  # type: ignore[attr-defined]
    assert policy.coder.template.text == CODER_AUTHORS  # type: ignore[attr-defined]
    assert policy.tester.template.text == TESTER_AUTHORS  # type: ignore[attr-defined]
    assert policy.coder.build_prompt(CODER_OBS) == AUTHORS_CODER_USER  # type: ignore[attr-defined]
