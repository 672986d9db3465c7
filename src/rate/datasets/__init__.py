"""Where examples come from (sources) and how W is read off them (W classifiers)."""
