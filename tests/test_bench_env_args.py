"""``benchmarks/bench_env.py``'s arguments: shapes and counts are checked before any work."""

from __future__ import annotations

import pytest

from benchmarks import bench_env


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--shape", "canonical"], "--shape canonical needs --source humaneval"),
        (["--source", "humaneval", "--problems", "0"], "--problems must be at least 1"),
        (["--source", "humaneval", "--shape", "paper", "--groups", "0"], "--groups"),
        (["--shape", "mixed"], "invalid choice"),
    ],
)
def test_bad_arguments_exit_2_naming_the_flag(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        bench_env.main(argv)
    assert exc.value.code == 2
    assert said in capsys.readouterr().err
