"""Evaluating policies and reporting runs.

* :mod:`.evaluate`: code and test-generation metrics of coder and tester policies;
* :mod:`.policies`: policy specs (scripted, checkpoint, hf, http) made ready, and the settings;
* :mod:`.plots`: a training run's PNG plots (curves smoothed as TensorBoard smooths them);
* :mod:`.report`: a training run's self-contained HTML page (plots, evaluation, example duels).
"""
