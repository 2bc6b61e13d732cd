"""`python -m maxlower`: the same command line as the `maxlower` script."""

from maxlower.cli import main

if __name__ == "__main__":
    main()
