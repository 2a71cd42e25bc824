from lsp_infer.cli import main

raise SystemExit(main())
