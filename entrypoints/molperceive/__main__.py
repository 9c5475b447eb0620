from molperceive.cli import run

run()
