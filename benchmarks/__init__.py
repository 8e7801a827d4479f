"""Performance and paper-reproduction harness (``make bench``); not collected by pytest."""
