from kraftwire.cli.main import main

raise SystemExit(main())
