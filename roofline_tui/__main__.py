from roofline_tui.cli import main

raise SystemExit(main())
