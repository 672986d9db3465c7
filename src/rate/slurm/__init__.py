"""The stages as SLURM jobs: resources from the config, readable sbatch scripts, dependencies.

``rate submit <stage>`` and ``rate pipeline`` (what the Makefile runs when PARTITION is set)
write each job's script under ``PROJECT_DIR/slurm/<submission>/`` beside a copy of the resolved
config, submit it with ``sbatch`` (logs go to ``PROJECT_DIR/logs/<stage>_<job id>.out``), chain
the stages with ``afterok`` dependencies, run sharded scoring as a job array followed by a merge
job, and with ``--wait`` follow the jobs to the end and say which failed and where its log is.
"""
