"""demandnet: data-parallel training of a small demand-forecasting MLP with Accelerate."""
