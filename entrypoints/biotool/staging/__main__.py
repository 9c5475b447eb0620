from biotool.staging.build import main

raise SystemExit(main())
