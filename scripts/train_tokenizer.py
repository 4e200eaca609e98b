"""Train the CPU preset's byte-level BPE tokenizer and write agents/assets/tokenizer.json.

Usage:
    python scripts/train_tokenizer.py [--vocab-size 4096] [--out agents/assets/tokenizer.json]

The corpus is the running interpreter's standard library plus the text of the package's problems
(the built-in bank and the procedural family) when those are importable; the script prints which
sources it used, the file size and the characters per token on the corpus.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents.lm.tokenizer import TOKENIZER_PATH, corpus_texts, train_bpe  # noqa: E402
from agents.players.prompts import CODER_COMPACT, TESTER_COMPACT  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab-size", type=int, default=4096)
    parser.add_argument("--min-frequency", type=int, default=2)
    parser.add_argument("--out", type=Path, default=TOKENIZER_PATH)
    args = parser.parse_args(argv)

    start = time.perf_counter()
    texts, summary = corpus_texts(extra=[CODER_COMPACT, TESTER_COMPACT] * 50)
    if not summary["problem_sources"]:
        print(
            "note: no problem sources importable (codea1_env.problems bank/procedural); "
            "trained on the standard library only",
            file=sys.stderr,
        )
    tokenizer = train_bpe(texts, vocab_size=args.vocab_size, min_frequency=args.min_frequency)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(args.out))
    seconds = time.perf_counter() - start

    sample = texts[: min(len(texts), 200)]
    n_chars = sum(len(t) for t in sample)
    n_tokens = sum(len(e.ids) for e in tokenizer.encode_batch(sample))
    report = {
        **summary,
        "vocab_size": tokenizer.get_vocab_size(),
        "out": str(args.out),
        "bytes": args.out.stat().st_size,
        "chars_per_token": round(n_chars / max(n_tokens, 1), 2),
        "seconds": round(seconds, 2),
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
