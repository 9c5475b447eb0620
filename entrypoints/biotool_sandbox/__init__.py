"""Host-side launcher of biotool sandbox: compose projects per run, exec, cp, audit, down."""
