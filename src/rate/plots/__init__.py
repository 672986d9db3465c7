"""Stage 4, plots: figures and tables from effect files, and the stage that writes them."""
