"""``python -m neograph_ext.cli``: the same program as ``neograph-ext``."""

from neograph_ext.cli import main

if __name__ == "__main__":
    main()
