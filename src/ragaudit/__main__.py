from ragaudit.cli import main

main()
