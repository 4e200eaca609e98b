"""Scoring: everything between a policy's text and the two rewards.

The referee and the steps of one judgement, in order:

* :mod:`.referee`: :class:`~.referee.Referee`, the single scoring path (one referee for every
  view, trainer and integration): its state, and the sandbox runs;
* :mod:`.plan`: parsing, the batch's jobs and the GT cache (steps 1-2);
* :mod:`.materialize`: generated calls rewritten on literal arguments;
* :mod:`.score`: GT correction, the candidates' verdicts and both rewards (steps 3-5);
* :mod:`.book`: the mistake book's upkeep (rule 8, bounds, refresh);
* :mod:`.metrics`: a judgement's aggregates;
* :mod:`.verdicts`: what a judgement reports;
* :mod:`.pool`: :class:`~.pool.RefereePool`, a batch's problems scored by several referee
  processes against one mistake book, with the judgements of one referee;
* :mod:`.gcpause`: the cyclic collector held off while a batch is scored.

What those steps use:

* :mod:`.rewards`: Code-A1's reward formulas, pure functions;
* :mod:`.reasons`: every reason code given, a closed and documented set;
* :mod:`.extraction`: code and stdin/stdout examples out of a model's Markdown answer;
* :mod:`.testcases`: a Test LLM's text parsed into test cases;
* :mod:`.canonical`: suites already in canonical form, read without a syntax tree, over the
  literal grammar of :mod:`.literal_grammar`;
* :mod:`.unparse`: the fast :func:`ast.unparse` of test expressions;
* :mod:`.inliner`: the AST substitution of the ``"anywhere"`` inline policy;
* :mod:`.grading`: the GT correction's bookkeeping (rules 2-3);
* :mod:`.arguments`: test inputs as literal values;
* :mod:`.quality`: tests rejected as trivial before they count;
* :mod:`.candidate_context`: a candidate's program as the authors' harness runs it (after the
  GT, imports hoisted), for ``RewardConfig.candidate_context="authors"``;
* :mod:`.monitor`: the reward-hacking monitor;
* :mod:`.mutation`: AST mutants of a GT (the referee's mutation-kill bonus and the scripted
  mutant coder).
"""
