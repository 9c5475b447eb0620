"""The bad-input corpus: malformed files and arguments for every command, and the contract check."""
