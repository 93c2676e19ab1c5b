"""``python -m repairloop`` runs the command line."""

from repairloop.cli import main

raise SystemExit(main())
