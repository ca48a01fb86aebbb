"""Security tests: secrets, rendering, bounds, doors, the store."""
