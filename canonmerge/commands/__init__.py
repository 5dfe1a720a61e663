"""One module per subcommand, each mapping parsed arguments onto a library call.

Part commands (prove, check, realstate) expose ``PART``, ``add_arguments(parser)``,
``run(args, progress) -> PartReport`` and ``run_default(progress)`` (what ``verify`` runs); the
CLI prints their reports.  Tool commands (fragment, store) expose ``add_arguments(parser)`` and
``run(args, console) -> int`` and print their own output.  Heavy imports (torch) happen inside
``run`` so that building the parser stays fast."""
