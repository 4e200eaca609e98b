"""Language models behind the players: one interface, several backends.

* :mod:`.interfaces`: what every backend shares (sampling parameters, generations, the
  ``LanguageModel`` and ``Policy`` protocols), re-exported here;
* :mod:`.transformers_lm`: sampling from any ``transformers`` causal LM;
* :mod:`.vllm`: vLLM generation for GPU runs, and backend selection;
* :mod:`.http`: a model behind any OpenAI-compatible HTTP API;
* :mod:`.models`: the CPU preset's tiny Qwen2 models, and loading any Hugging Face model;
* :mod:`.tokenizer`: the CPU preset's byte-level BPE tokenizer;
* :mod:`.serve`: a minimal OpenAI-compatible server for a local model (``python -m agents.serve``).
"""

from agents.lm.interfaces import *  # noqa: F403
from agents.lm.interfaces import __all__ as __all__
