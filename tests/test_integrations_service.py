"""The HTTP reward service (codea1 serve-reward): same numbers as the env, batching, errors, shutdown."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import gymnasium as gym
import pytest

import codea1_env  # noqa: F401  (registers the env ids)
from agents.integrations.core import CoderRow, GridRow, PairResult, RequestError, RewardCore
from agents.integrations.core import TesterRow as _TesterRow
from agents.integrations.openrlhf import EXTRA_LOG_KEYS, parse_label, strip_prompt
from agents.integrations.reward_service import RewardService, ServiceUnavailable, make_server
from agents.players.prompts import CODER_PROMPT, PromptTemplate
from codea1_env.baselines.scripted import BoundaryTester
from codea1_env.envs.duel_env import CodeTestDuelEnv
from codea1_env.game.duel import answer_for
from codea1_env.problems import problem_to_dict

PROBLEM = "bank/reverse_words"
BUGGY = answer_for(
    "def reverse_words(s):\n"
    "    words = s.split(' ')\n"
    "    return ' '.join(w for w in reversed(words) if w)\n"
)
TESTS = (
    "```python\n"
    "assert reverse_words('a b') == 'b a'\n"
    "assert reverse_words('  a  b ') == 'b a'\n"
    "assert reverse_words('x') == 'y'\n"
    "assert reverse_words('a\\tb') == 'b a'\n"
    "assert reverse_words('a b') == 'b a'\n"
    "```"
)


def post(url: str, body: Any, timeout: float = 60.0) -> tuple[int, dict[str, Any]]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def get(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=30) as reply:
        return json.loads(reply.read())


def coder_prompt(problem: Any) -> str:
    obs = {"role": 0, "prompt": problem.prompt, "entry_point": problem.entry_point, "code": ""}
    return (
        "<|im_start|>user\n"
        + PromptTemplate(CODER_PROMPT).render_observation(obs)
        + ("<|im_end|>\n<|im_start|>assistant\n")
    )


@pytest.fixture
def served(shared_sandbox: Any, tmp_path: Any) -> Iterator[tuple[str, RewardService]]:
    core = RewardCore(
        "bank",
        opponent="boundary",
        sandbox=shared_sandbox,
        mistake_book=str(tmp_path / "book.sqlite"),
    )
    service = RewardService(core, batch_window_s=0.05)
    server = make_server(service, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server.url, service
    finally:
        server.stop()
        thread.join(10)


def test_rewards_equal_the_envs_for_the_same_texts(served: Any, shared_sandbox: Any) -> None:
    """Judge, OpenRLHF tester role and OpenRLHF coder role, each equal to an env episode.

    The env and the service start with empty mistake books and play the same sequence, so the
    book replayed in later episodes (filled by the buggy code's failures) is the same too.
    """
    url, service = served
    core = service.core
    problem = core.problem(PROBLEM)
    env = gym.make("CodeTestDuel-v0", source="bank", sandbox=shared_sandbox)
    duel_env = env.unwrapped
    assert isinstance(duel_env, CodeTestDuelEnv)
    try:
        # 1: /v1/judge, one code x one suite
        env.reset(seed=0, options={"problem": problem_to_dict(problem)})
        env.step(BUGGY)
        *_, info = env.step(TESTS)
        status, judged = post(
            url + "/v1/judge", {"problem": PROBLEM, "codes": [BUGGY], "suites": [[TESTS]]}
        )
        assert status == 200, judged
        pair = judged["pairs"][0][0]
        assert pair["rewards"] == info["rewards"]
        assert judged["coder_rewards"] == [info["rewards"]["coder"]]
        assert judged["tester_rewards"] == [[info["rewards"]["tester"]]]
        for key in (
            "verdicts",
            "tests",
            "rejected",
            "mistake_book_verdicts",
            "gt_pass_rate",
            "reasons",
            "tester_reward_parts",
        ):
            assert pair[key] == info[key], key
        assert any(not v["passed"] for v in pair["verdicts"])  # the bug is caught
        assert core.mistake_book.size(PROBLEM) > 0

        # 2: OpenRLHF tester role against the frozen buggy code (the book now replays)
        env.reset(options={"problem": problem_to_dict(problem)})
        env.step(BUGGY)
        *_, info = env.step(TESTS)
        assert info["mistake_book_verdicts"]
        label = json.dumps({"problem": PROBLEM, "role": "tester", "code": BUGGY})
        status, answer = post(
            url + "/get_reward",
            {"query": ["PROMPT" + TESTS], "prompts": ["PROMPT"], "labels": [label]},
        )
        assert status == 200, answer
        assert answer["rewards"] == [info["rewards"]["tester"]]
        assert answer["extra_logs"]["codea1_coder_reward"] == [info["rewards"]["coder"]]

        # 3: OpenRLHF coder role: the prompt (with its own python block) is stripped, the frozen
        # boundary tester writes the suite, as a fresh BoundaryTester(seed=0) does for the env
        env.reset(options={"problem_id": PROBLEM})
        obs, *_, step_info = env.step(BUGGY)
        tester = BoundaryTester(seed=0, sandbox=duel_env.referee)
        tests = tester.act([obs], [step_info])[0]
        *_, info = env.step(tests)
        prompt = coder_prompt(problem)
        status, answer = post(
            url + "/get_reward",
            {"query": [prompt + BUGGY + "<|im_end|>"], "prompts": [prompt], "labels": [PROBLEM]},
        )
        assert status == 200, answer
        assert answer["rewards"] == [info["rewards"]["coder"]]
        assert answer["scores"] == answer["rewards"]
        assert answer["extra_logs"]["codea1_tester_reward"] == [info["rewards"]["tester"]]
        assert answer["extra_logs"]["codea1_prompt_found"] == [1.0]
        assert set(answer["extra_logs"]) == set(EXTRA_LOG_KEYS)
        assert core.mistake_book.size() == duel_env.referee.mistake_book.size()
    finally:
        env.close()


def test_concurrent_requests_are_one_judge_many_call(shared_sandbox: Any) -> None:
    core = RewardCore("bank", opponent="gt+mistake_book", sandbox=shared_sandbox)
    calls: list[int] = []
    inner = core.referee.judge_many

    def counting(batch: Any, **kwargs: Any) -> Any:
        calls.append(len(batch))
        return inner(batch, **kwargs)

    core.referee.judge_many = counting  # type: ignore[method-assign]
    service = RewardService(core, batch_window_s=1.0, max_batch=64)
    server = make_server(service, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        ids = list(core.source.ids())[:8]
        bodies = [
            {"query": [answer_for(core.problem(i).gt_program)], "prompts": [""], "labels": [i]}
            for i in ids
        ]
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda b: post(server.url + "/get_reward", b), bodies))
        assert all(status == 200 for status, _ in answers), answers
        assert all(body["rewards"] == [1.0] for _, body in answers)  # GT code passes GT tests
        assert calls == [8]  # 8 requests, 8 problems: one referee call
        health = get(server.url + "/health")
        assert health["batches"] == 1 and health["rows"] == 8 and health["answered"] == 8
    finally:
        server.stop()
        thread.join(10)


def test_errors_are_json_and_name_the_field(shared_sandbox: Any) -> None:
    core = RewardCore("bank", opponent="gt", sandbox=shared_sandbox)
    service = RewardService(core)
    server = make_server(service, "127.0.0.1", 0, max_body_bytes=100_000)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    url = server.url
    try:
        status, body = post(
            url + "/get_reward",
            {
                "query": ["x", "y"],
                "prompts": ["", ""],
                "labels": ["bank/reverse_words", "bank/nope"],
            },
        )
        assert status == 400 and body["error"]["field"] == "labels[1]"
        assert "bank/nope" in body["error"]["message"]
        status, body = post(url + "/get_reward", {"query": "x", "labels": []})
        assert status == 400 and body["error"]["field"] == "query"
        status, body = post(
            url + "/get_reward", {"query": ["x"], "prompts": [], "labels": ["bank/reverse_words"]}
        )
        assert status == 400 and body["error"]["field"] == "prompts"
        label = json.dumps({"problem": PROBLEM, "role": "tester"})
        status, body = post(url + "/get_reward", {"query": ["x"], "labels": [label]})
        assert status == 400 and body["error"]["field"] == "labels[0].code"
        status, body = post(
            url + "/v1/judge",
            {"problem": {"task_id": "t", "prompt": "p", "entry_point": "f"}, "codes": ["x"]},
        )
        assert status == 400 and body["error"]["field"].startswith("problem.")
        # A code that is not text is a move that scores 0, as in the env; not a 400 for all.
        status, body = post(url + "/v1/judge", {"problem": PROBLEM, "codes": [BUGGY, 3, None]})
        assert status == 200, body
        assert body["coder_rewards"][1:] == [0.0, 0.0] and body["coder_rewards"][0] > 0.0
        assert [info["reasons"]["coder"] for info in body["code_infos"][1:]] == ["not_text"] * 2
        status, body = post(
            url + "/v1/judge", {"problem": PROBLEM, "codes": ["x"], "suites": [["a"], ["b"]]}
        )
        assert status == 400 and body["error"]["field"] == "suites"
        status, body = post(url + "/v1/judge", b"{not json")
        assert status == 400 and body["error"]["type"] == "invalid_json"
        # JSON nested past the decoder's depth is bad JSON too, in the body and in the texts
        # that hold a problem record (a RecursionError cut the connection or answered 500).
        status, body = post(url + "/get_reward", b"[" * 20000 + b"]" * 20000)  # 3.13 takes 2,000
        assert status == 400 and body["error"]["type"] == "invalid_json", body
        deep = '{"problem": ' + "[" * 20000 + "]" * 20000 + "}"
        for route, request, field in (
            ("/get_reward", {"query": ["x"], "labels": [deep]}, "labels[0]"),
            ("/v1/judge", {"problem": deep, "codes": ["x"]}, "problem"),
            (
                "/v1/rows",
                {"rows": [{"ground_truth": deep, "response": "x"}]},
                "rows[0].ground_truth",
            ),
        ):
            status, body = post(url + route, request)
            assert status == 400 and body["error"]["field"] == field, (route, body)
            assert "nested too deeply" in body["error"]["message"], (route, body)
        # a role or frozen code that is wrong names the row's extra_info, not its ground_truth
        for info, field in (({"role": "tester"}, "code"), ({"role": "judge"}, "role")):
            row = {"ground_truth": "bank/clamp", "response": "x", "extra_info": info}
            status, body = post(url + "/v1/rows", {"rows": [row]})
            assert status == 400 and body["error"]["field"] == f"rows[0].extra_info.{field}"
        for length in ("-5", "five"):  # the body's end is unknown: 400, and the line closes
            connection = http.client.HTTPConnection("127.0.0.1", server.server_address[1], 10)
            connection.putrequest("POST", "/get_reward")
            connection.putheader("Content-Length", length)
            connection.endheaders()
            reply = connection.getresponse()
            assert reply.status == 400 and reply.getheader("Connection") == "close"
            assert json.loads(reply.read())["error"]["type"] == "invalid_request"
            connection.close()
        status, body = post(url + "/v1/judge", {"problem": PROBLEM, "codes": ["x" * 150_000]})
        assert status == 413 and body["error"]["type"] == "too_large"
        status, body = post(url + "/nowhere", {})
        assert status == 404
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(url + "/v1/judge", timeout=10)
        assert caught.value.code == 405
        # golden mode: a code without suites gets its GT pass rate
        status, body = post(url + "/v1/judge", {"problem": PROBLEM, "codes": [BUGGY, "no code"]})
        assert status == 200, body
        assert (
            body["pairs"] == [[], []]
            and body["code_infos"][0]["reasons"]["tester"] == "golden_mode"
        )
        assert 0.0 < body["coder_rewards"][0] < 1.0 and body["coder_rewards"][1] == 0.0
    finally:
        server.stop()
        thread.join(10)


class _BlockingCore:
    """A core whose score waits for a signal (to fill the queue)."""

    opponent = "gt"
    source_name = "fake"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.closed = False

    def score(self, rows: list[Any]) -> list[Any]:
        self.release.wait(30)
        return [None] * len(rows)

    def close(self) -> None:
        self.closed = True


def test_full_queue_is_503_and_close_finishes_queued_work() -> None:
    core = _BlockingCore()
    service = RewardService(core, max_queue=2, batch_window_s=0.0, max_batch=1)  # type: ignore[arg-type]
    first = service.submit([1])  # type: ignore[list-item]
    deadline = time.monotonic() + 10
    while service._queue.qsize() and time.monotonic() < deadline:  # the collector took it
        time.sleep(0.01)
    queued = [service.submit([2]), service.submit([3])]  # type: ignore[list-item]
    with pytest.raises(ServiceUnavailable, match="queue is full"):
        service.submit([4])  # type: ignore[list-item]
    closer = threading.Thread(target=service.close)
    closer.start()
    time.sleep(0.1)
    with pytest.raises(ServiceUnavailable, match="shutting down"):
        service.submit([5])  # type: ignore[list-item]
    core.release.set()
    closer.join(10)
    assert first.result(5) == [None] and all(f.result(5) == [None] for f in queued)
    assert core.closed and service.stats["rejected_busy"] == 1


def test_a_request_while_the_server_drains_gets_503_not_a_reset(shared_sandbox: Any) -> None:
    """Until its queued work is answered the server still accepts, and answers new work 503."""
    core = RewardCore("bank", opponent="gt", sandbox=shared_sandbox)
    release = threading.Event()
    score = core.score
    core.score = lambda rows: (release.wait(30), score(rows))[1]  # type: ignore[method-assign]
    server = make_server(RewardService(core), "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    request = {"query": [BUGGY], "prompts": [""], "labels": ["bank/reverse_words"]}
    try:
        with ThreadPoolExecutor(2) as pool:
            first = pool.submit(post, server.url + "/get_reward", request)
            deadline = time.monotonic() + 30
            while server.service.stats["accepted"] < 1:
                assert time.monotonic() < deadline
                time.sleep(0.01)
            stopping = pool.submit(server.stop)
            while not server.service.draining:
                assert time.monotonic() < deadline
                time.sleep(0.01)
            status, body = post(server.url + "/get_reward", request)
            assert status == 503 and body["error"]["type"] == "unavailable", body
            release.set()
            stopping.result(30)
            assert first.result(30)[0] == 200
    finally:
        release.set()
        server.stop()
        thread.join(10)


def test_sigterm_answers_every_accepted_request(tmp_path: Any) -> None:
    book = tmp_path / "book.sqlite"
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agents.cli",
            "serve-reward",
            "--port",
            "0",
            "--opponent",
            "gt+mistake_book",
            "--workers",
            "1",
            "--batch-window-ms",
            "1500",
            "--mistake-book",
            str(book),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = json.loads(proc.stdout.readline())
        url = line["listening"]
        ids = [
            "bank/reverse_words",
            "bank/is_palindrome",
            "bank/caesar_shift",
            "bank/run_length_encode",
        ]
        with ThreadPoolExecutor(len(ids)) as pool:
            futures = [
                pool.submit(
                    post, url + "/get_reward", {"query": [BUGGY], "prompts": [""], "labels": [i]}
                )
                for i in ids
            ]
            deadline = time.monotonic() + 30
            while get(url + "/health")["accepted"] < len(ids):
                assert time.monotonic() < deadline
                time.sleep(0.02)
            proc.send_signal(signal.SIGTERM)
            answers = [f.result(60) for f in futures]
        assert [status for status, _ in answers] == [200] * len(ids), answers
        assert all(len(body["rewards"]) == 1 for _, body in answers)
        assert proc.wait(60) == 0
        stopped = json.loads(proc.stderr.read().strip().splitlines()[-1]) if proc.stderr else {}
        assert stopped["stopped"] and stopped["answered"] == len(ids)
        assert isinstance(stopped["mistake_book_size"], int)  # the book's size when it closed
        assert book.exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_labels_and_prompt_stripping(shared_sandbox: Any) -> None:
    core = RewardCore("bank", opponent="gt", sandbox=shared_sandbox)
    try:
        problem = core.problem(PROBLEM)
        record = problem_to_dict(problem) | {"task_id": "custom/reverse"}
        assert parse_label(core, PROBLEM)[:2] == (problem, "coder")
        custom, role, _ = parse_label(core, json.dumps(record))
        assert custom.task_id == "custom/reverse" and role == "coder"
        assert parse_label(core, {"problem": record, "role": "tester", "code": "c"})[1:] == (
            "tester",
            "c",
        )
        with pytest.raises(RequestError) as caught:
            parse_label(core, {"problem": PROBLEM, "role": "judge"})
        assert caught.value.field == "label.role"
        prompt = coder_prompt(problem)
        assert strip_prompt(prompt + "ANSWER", prompt) == ("ANSWER", True)
        assert strip_prompt("<s>" + prompt + "ANSWER", prompt) == ("ANSWER", True)
        assert strip_prompt(prompt[-300:] + "ANSWER", prompt) == (
            "ANSWER",
            True,
        )  # cut from the left
        # the coder prompt has a python block: unstripped, the answer would be misread
        rows = [CoderRow(problem, prompt + BUGGY), CoderRow(problem, BUGGY)]
        unstripped, stripped = core.score(rows)
        assert isinstance(unstripped, PairResult) and isinstance(stripped, PairResult)
        assert unstripped.info["reasons"]["coder"] != "" or unstripped.coder != stripped.coder
        both = core.score([_TesterRow(problem, BUGGY, TESTS), GridRow(problem, (BUGGY,), ((),))])
        assert both[1].coder_rewards[0] == stripped.coder  # type: ignore[union-attr]
    finally:
        core.close()


def test_openrlhf_environment_errors_name_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    from agents.integrations import openrlhf

    monkeypatch.setattr(openrlhf, "_CORE", None)
    monkeypatch.setenv("CODEA1_SEED", "x")
    with pytest.raises(ValueError, match="CODEA1_SEED must be an integer, got 'x'"):
        openrlhf.core_from_environment()
    assert openrlhf._CORE is None
