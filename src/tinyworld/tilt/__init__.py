"""Tails and tilt: the reward's tail (Hill) and a forecast of KL-regularised RL from gold."""
