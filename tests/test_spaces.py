"""The observation space's Text fields: cheap copies that still sample independently."""

from __future__ import annotations

import copy
import pickle

from gymnasium import spaces
from gymnasium.vector.utils import batch_space

from codea1_env.game.spaces import TEXT_CHARSET, CharsetText, observation_space


def test_a_copy_shares_the_charset_tables_and_nothing_else() -> None:
    space = observation_space()
    space.seed(3)
    clone = copy.deepcopy(space)
    assert clone == space
    for key in ("prompt", "entry_point", "code"):
        ours, theirs = space[key], clone[key]
        assert isinstance(theirs, CharsetText) and isinstance(ours, CharsetText)
        assert theirs is not ours
        assert theirs._char_index is ours._char_index  # not walked: ~55,000 entries
        assert theirs.np_random is not ours.np_random
        assert (theirs.min_length, theirs.max_length) == (ours.min_length, ours.max_length)
    # the copy's generator continues from the same state, as a deep copy's does
    assert clone["prompt"].sample() == space["prompt"].sample()


def test_equal_to_gymnasium_text_and_pickles() -> None:
    ours = observation_space()["code"]
    assert isinstance(ours, CharsetText)
    plain = spaces.Text(max_length=ours.max_length, min_length=0, charset=TEXT_CHARSET)
    assert ours == plain and plain == ours
    again = pickle.loads(pickle.dumps(ours))
    assert again == ours and type(again) is CharsetText
    assert ours.contains("def f(x):\n\treturn x") and not ours.contains("\x00")


def test_batched_sub_spaces_sample_independently() -> None:
    batched = batch_space(observation_space(), 16)
    assert isinstance(batched, spaces.Dict)
    batched.seed(0)
    prompts = batched["prompt"]
    assert isinstance(prompts, spaces.Tuple) and len(prompts) == 16
    assert len({id(sub.np_random) for sub in prompts}) == 16
    assert len({id(sub._char_index) for sub in prompts}) == 1
    sample = batched.sample()
    assert len(set(sample["code"])) == 16  # distinct generators, distinct draws
    assert batched.contains(sample)
    batched.seed(0)
    assert batched.sample()["code"] == sample["code"]


def test_the_length_bounds_share_one_table_and_are_checked() -> None:
    space = observation_space()
    prompt, name, code = space["prompt"], space["entry_point"], space["code"]
    assert isinstance(prompt, CharsetText) and isinstance(code, CharsetText)
    assert isinstance(name, CharsetText)
    assert prompt._char_index is name._char_index is code._char_index
    assert (prompt.min_length, name.min_length) == (1, 0)
    assert prompt.max_length != code.max_length
    assert not prompt.contains("") and name.contains("")
    assert not name.contains("x" * (name.max_length + 1))


def test_prompts_in_any_script_are_observed_as_written() -> None:
    from codea1_env.game.spaces import REPLACEMENT, clean_text

    space = observation_space()
    for text in ("返回列表中最大的数。", "최댓값을 반환", "Вернуть максимум", "ℕ → ℝ, x ≤ y ∀ x"):
        assert clean_text(text, 100) == text and space["prompt"].contains(text)
    assert clean_text("ok \U0001f600 \x07", 100) == f"ok {REPLACEMENT} {REPLACEMENT}"


def test_the_action_space_copies_cheaply_and_stays_a_plain_text_to_gymnasium() -> None:
    from codea1_env.game.spaces import action_space

    space = action_space(100)
    assert isinstance(space, CharsetText)
    assert space == spaces.Text(max_length=100, min_length=0, charset=space.character_set)
    assert "TEXT_CHARSET" not in repr(space) and "abc" in repr(space)  # printed as gymnasium does
    batched = batch_space(space, 8)
    assert isinstance(batched, spaces.Tuple)
    assert len({id(sub._char_index) for sub in batched}) == 1
    batched.seed(0)
    sample = batched.sample()
    assert len(set(sample)) == 8 and batched.contains(sample)
    assert not space.contains("\u00e9")  # printable ASCII only
