"""Errors the pipeline commands report as one line and exit status 2."""


class InputError(ValueError):
    """An input the job cannot use: unreadable or malformed file, bad config, bad dataset."""
