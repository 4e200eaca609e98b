"""Train with TRL's GRPOTrainer, scored by codea1's sandbox and GT-test reward (golden mode).

TRL keeps its own loop; codea1 supplies the problems and the reward: each completion is run in the
sandbox against its problem's GT tests and rewarded with its pass rate. Runs on CPU in a minute
with a model built from config (no download):

    python examples/trl_grpo.py --steps 2
    python examples/trl_grpo.py --model Qwen/Qwen2.5-Coder-1.5B-Instruct --problems bank  # GPU

With a hub model, the prompts are the paper-style instructions wrapped in the chat template by
TRL; with the built-in tiny model they are the compact prompts, which open a code fence that the
reward function puts back in front of each completion (``answer_prefix``).
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
from pathlib import Path
from typing import Any


def checkpointing_off(config_class: type) -> dict[str, Any]:
    """``config_class``'s keyword that turns activation checkpointing off, under its current name.

    transformers renamed ``gradient_checkpointing`` to ``activation_checkpointing`` (the old name
    warns that it goes in v6) and TRL's configs still default the old one to True; earlier
    transformers have only the old name.
    """
    names = {f.name for f in dataclasses.fields(config_class)}
    if "activation_checkpointing" in names:
        return {"activation_checkpointing": False}
    return {"gradient_checkpointing": False}


def build_dataset(problems: list[Any], compact: bool) -> Any:
    """A ``datasets.Dataset`` with the ``prompt`` and ``task_id`` columns TRL and the reward use."""
    from datasets import Dataset

    from agents.players.prompts import CODER_COMPACT, CODER_PROMPT, PromptTemplate

    template = PromptTemplate(CODER_COMPACT if compact else CODER_PROMPT)
    rows = []
    for problem in problems:
        text = template.render(prompt=problem.prompt.rstrip(), entry_point=problem.entry_point)
        prompt: Any = text if compact else [{"role": "user", "content": text}]
        rows.append({"prompt": prompt, "task_id": problem.task_id})
    return Dataset.from_list(rows)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="builtin:nano", help="builtin:nano|tiny or a model")
    parser.add_argument("--problems", default="procedural:0", help="a load_source spec")
    parser.add_argument("--n-problems", type=int, default=32)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--num-generations", type=int, default=4)
    parser.add_argument("--max-completion-length", type=int, default=48)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--output-dir", default=None)
    args = parser.parse_args(argv)

    from trl import GRPOConfig, GRPOTrainer

    from agents.integrations.trl import make_trl_reward
    from codea1_env.problems import load_source

    source = load_source(args.problems)
    problems = [source[task_id] for task_id in source.ids()[: args.n_problems]]
    output_dir = Path(args.output_dir or tempfile.mkdtemp(prefix="codea1_trl_"))
    compact = args.model.startswith("builtin:")
    model_path = args.model
    if compact:
        # TRL builds its KL reference from the policy's path: save the model built from config.
        from agents.lm.models import build_tiny_model
        from agents.lm.tokenizer import load_tiny_tokenizer

        tokenizer = load_tiny_tokenizer()
        model = build_tiny_model(args.model.split(":", 1)[1], tokenizer)  # type: ignore[arg-type]
        model_path = str(output_dir / "initial_model")
        model.save_pretrained(model_path)
        tokenizer.save_pretrained(model_path)
    from agents.lm.models import load_tokenizer

    tokenizer = load_tokenizer(model_path)
    reward = make_trl_reward(problems, answer_prefix="```python" if compact else "")
    config = GRPOConfig(
        output_dir=str(output_dir),
        use_cpu=compact,
        report_to="none",
        **checkpointing_off(GRPOConfig),
        max_steps=args.steps,
        per_device_train_batch_size=args.num_generations,
        num_generations=args.num_generations,
        max_completion_length=args.max_completion_length,
        learning_rate=args.lr,
        logging_steps=1,
        save_strategy="no",
        bf16=False,
        beta=0.001,
        epsilon=0.20,
        epsilon_high=0.28,
        loss_type="dapo",  # token-mean, as in the Code-A1 setting
    )
    trainer = GRPOTrainer(
        model=model_path,
        reward_funcs=reward,
        args=config,
        train_dataset=build_dataset(problems, compact),
        processing_class=tokenizer,
    )
    try:
        trainer.train()
    finally:
        reward.close()
    logs = [row for row in trainer.state.log_history if "reward" in row]
    for row in logs:
        print(f"step {row.get('step')}: reward {row['reward']:.3f}")
    return {"log_history": logs, "reward_calls": reward.calls}


if __name__ == "__main__":
    main()
