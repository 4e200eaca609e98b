"""Evaluating policies and reporting runs.

* :mod:`.evaluate`: code and test-generation metrics of coder and tester policies;
* :mod:`.policies`: policy specs (scripted, checkpoint, hf, http) made ready, and the settings;
* :mod:`.report`: a training run's PNG plots and self-contained HTML page.
"""
