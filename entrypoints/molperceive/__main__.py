from molperceive.cli import main

main()
