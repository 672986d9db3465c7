"""`rate sweep FILE.yaml`: a grid of dataset templates x scoring templates run through the
ordinary stages (here, or as SLURM jobs chained per cell), then one report: the headline
figure and a ranked table of the cells with adjusted p-values. See :mod:`rate.sweep.grid` for
the grid file and :mod:`rate.sweep.steps` for how a rerun redoes nothing finished."""
