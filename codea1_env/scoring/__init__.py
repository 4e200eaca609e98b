"""Scoring: everything between a policy's text and the two rewards.

* :mod:`.referee`: :class:`~.referee.Referee`, the single scoring path (one referee for every
  view, trainer and integration);
* :mod:`.rewards`: Code-A1's reward formulas, pure functions;
* :mod:`.extraction`: code and stdin/stdout examples out of a model's Markdown answer;
* :mod:`.testcases`: a Test LLM's text turned into test cases, and their grading against the GT;
* :mod:`.arguments`: test inputs as literal values;
* :mod:`.quality`: tests rejected as trivial before they count;
* :mod:`.monitor`: the reward-hacking monitor;
* :mod:`.mutation`: AST mutants of a GT (the referee's mutation-kill bonus and the scripted
  mutant coder).
"""
