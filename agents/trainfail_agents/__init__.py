"""Agents that play gym-trainfail episodes: scripted baselines and model-driven loops."""
