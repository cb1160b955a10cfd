"""fcast: the demand-forecasting regressor and its data-parallel training loop."""
