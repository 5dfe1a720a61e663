from canonmerge.cli import main

raise SystemExit(main())
