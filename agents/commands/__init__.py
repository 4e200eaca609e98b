"""The ``codea1`` command line: :mod:`.cli` dispatches to one module per subcommand.

``train`` (:mod:`.train_cli`), ``duel`` (:mod:`.duel_cli`), ``eval`` (:mod:`.eval_cli`),
``report`` (:mod:`.report_cli`), ``export`` (:mod:`.export_cli`) and ``serve-reward``
(:mod:`.serve_reward_cli`); :mod:`.argtypes` holds the argument types they share (argparse rejects
a bad value with the flag's name).
"""
