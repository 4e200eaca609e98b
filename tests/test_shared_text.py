"""Text observations through Gymnasium's shared memory (codea1_env.game.shared_text)."""

from __future__ import annotations

import copy
import gc
import multiprocessing as mp
import pickle
from typing import Any

import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector.utils import shared_memory as gym_shared

from codea1_env.game.shared_text import SharedTexts, decode, encode
from codea1_env.game.spaces import REPLACEMENT, observation_space

create_shared_memory = gym_shared.create_shared_memory
read_from_shared_memory: Any = gym_shared.read_from_shared_memory
write_to_shared_memory: Any = gym_shared.write_to_shared_memory  # typed for arrays, not strings

TEXTS = ("def f(x):\n\treturn x", "", "中文 \u00e9 " + REPLACEMENT, "x" * 256)


def text_space() -> spaces.Text:
    space = observation_space()["entry_point"]
    assert isinstance(space, spaces.Text)
    return space


def test_each_write_shows_through_the_buffer_read_once() -> None:
    space = text_space()
    shared = create_shared_memory(space, n=len(TEXTS), ctx=mp)
    view = read_from_shared_memory(space, shared, n=len(TEXTS))  # once, as AsyncVectorEnv does
    assert isinstance(view, SharedTexts) and len(view) == len(TEXTS)
    for index, text in enumerate(TEXTS):
        write_to_shared_memory(space, index, text, shared)
    assert tuple(view) == TEXTS and view == TEXTS and view[1:3] == TEXTS[1:3]
    snapshot = copy.deepcopy(view)
    assert type(snapshot) is tuple and snapshot == TEXTS
    write_to_shared_memory(space, 0, "changed", shared)
    assert view[0] == "changed" and snapshot[0] == TEXTS[0]  # the copy is not live
    assert pickle.loads(pickle.dumps(view)) == ("changed", *TEXTS[1:])  # sent as its texts


def test_the_layout_is_gymnasiums_both_ways() -> None:
    ours = text_space()
    shared = create_shared_memory(ours, n=len(TEXTS), ctx=mp)
    gym_write = write_to_shared_memory.dispatch(spaces.Text)
    gym_read = read_from_shared_memory.dispatch(spaces.Text)
    for index, text in enumerate(TEXTS):
        gym_write(ours, index, text, shared)  # Gymnasium's writer, our reader
    assert tuple(read_from_shared_memory(ours, shared, n=len(TEXTS))) == TEXTS
    for index, text in enumerate(reversed(TEXTS)):
        write_to_shared_memory(ours, index, text, shared)  # our writer, Gymnasium's reader
    assert gym_read(ours, shared, n=len(TEXTS)) == tuple(reversed(TEXTS))


def test_encode_matches_gymnasiums_flatten_and_refuses_what_is_not_in_the_space() -> None:
    space = text_space()
    for text in TEXTS:
        row = encode(space, text)
        assert (
            np.array_equal(row, np.asarray(spaces.flatten(space, text)))
            and decode(space, row) == text
        )
    with pytest.raises(ValueError, match="outside the charset"):
        encode(space, "emoji \U0001f600")
    with pytest.raises(ValueError, match="outside the charset"):
        encode(space, "bell \x07")
    with pytest.raises(ValueError, match="257 characters"):
        encode(space, "x" * 257)


def test_the_tables_are_freed_with_their_space() -> None:
    from codea1_env.game import shared_text

    before = len(shared_text._TABLES)
    for _ in range(5):
        space = pickle.loads(pickle.dumps(text_space()))
        assert decode(space, encode(space, "ab")) == "ab"
        del space
    gc.collect()
    assert len(shared_text._TABLES) <= before + 1
