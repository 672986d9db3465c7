"""Off-policy certification of a new policy from the reference's gold labels, run assessment
and recipe choice: analysis code, which sees what an analyst sees (never the world's truth)."""
