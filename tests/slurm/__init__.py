"""The stages as SLURM jobs."""
