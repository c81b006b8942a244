from __future__ import annotations

from checker.cli import main

raise SystemExit(main())
