"""The code that runs inside the sandbox: standard library only, loaded by path.

These files are bind-mounted (bubblewrap, Docker) or run in place as one flat directory, where
:mod:`.entry` imports its siblings by their top-level names (``protocol``, ``tracer``,
``runner``, ``confine``, ``probe``, ``zygote``) with a private copy of ``builtins``;
:mod:`.plain` is loaded by path from the configuration. Nothing here may import ``codea1_env``
or any third-party package. The trusted parent imports :mod:`.protocol`, :mod:`.tracer` and
:mod:`.plain` as ordinary modules.

* :mod:`.entry`: the worker process's entry script;
* :mod:`.zygote`: the fork server (and how it confines each child it forks);
* :mod:`.confine`: the confinement primitives (``prctl``, seccomp, rlimits, namespaces, mounts);
* :mod:`.probe`: what the isolation probe's confined child observes;
* :mod:`.runner`: one job inside a forked child;
* :mod:`.tracer`: the arc tracer behind the coverage bonus;
* :mod:`.protocol`: the socket message format between worker and parent;
* :mod:`.plain`: plain data, the only values allowed back from untrusted code.
"""
