"""`python -m maxlower`: the same command line as the `maxlower` script."""

from maxlower.launch import main

if __name__ == "__main__":
    main()
