"""The Python API: scored files and effect files as pandas DataFrames, the estimators on a
DataFrame, arrays or lists, and the figures. Every name is exported by ``rate`` itself
(``rate.estimate``), loaded when first used: :mod:`rate.api.data` needs pandas,
:mod:`rate.api.figures` matplotlib."""
