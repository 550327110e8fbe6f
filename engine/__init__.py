"""The domain of mnemostream: pure functions and ports. Never imports a driver or reads env."""
