"""Bot programs for the referee tests: real processes speaking raw gRPC via generated stubs."""
