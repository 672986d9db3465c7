"""Exceptions for mistakes a user can fix; each message says what is wrong and what to do."""


class RateError(Exception):
    """Base for user-facing errors: the CLI prints the message alone, without a traceback."""


class ConfigError(RateError):
    """An experiment config is invalid: unknown key, bad value, or a path that does not exist."""


class DataFileError(RateError):
    """A data file is missing, unreadable or malformed."""


class TemplateError(RateError):
    """A dataset or scoring template is missing, unparseable or invalid."""


class SlurmError(RateError):
    """A SLURM submission or job went wrong: no sbatch, an unknown partition, a failed job."""


class WriteError(RateError):
    """A file could not be written (a full disk, a quota, permissions); nothing half-written
    is left for a later stage to take."""


class BusyError(RateError):
    """Another process is doing the same work on the same input (it holds the lock)."""
