from biotool.cli import main

main()
