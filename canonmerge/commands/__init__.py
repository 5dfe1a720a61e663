"""One module per subcommand: each maps parsed arguments onto a part's library call.

A module exposes ``PART`` (the part it runs), ``add_arguments(parser)``, ``run(args, progress)``
returning a ``PartReport``, and ``run_default(progress)`` which ``verify`` uses."""
