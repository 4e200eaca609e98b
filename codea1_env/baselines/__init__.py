"""Model-free baselines: scripted coders and testers that play without a model.

* :mod:`.scripted`: the scripted policies of both roles;
* :mod:`.inputs`: the scripted testers' candidate inputs;
* :mod:`.runner`: running programs on those inputs, always in a sandbox.
"""
